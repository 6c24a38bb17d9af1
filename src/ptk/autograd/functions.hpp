#pragma once
// The differentiable ops the model is written in (no Kokkos here). Each checks its arguments once, with an error
// that names the op, the argument and the shapes, runs ptk's kernels on the arguments' device and, when a
// gradient is wanted, records how to send gradients back to its inputs.
#include <memory>
#include <vector>

#include "ptk/autograd/variable.hpp"

namespace ptk::ag {

Var add(const Var& a, const Var& b);                                  // same shapes
Var matmul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false);  // as ops::matmul
// y[..., out] = x[..., in] · weight[out, in]ᵀ + bias[out] (bias may be undefined): PyTorch's Linear.
Var linear(const Var& x, const Var& weight, const Var& bias = Var());
// linear(x, w) for each weight (no bias), the bits linear gives; where nothing records a graph and the weights
// share a type, a decode step's few rows take one launch for all of them (ops::linear_group: a layer's q, k and v).
std::vector<Var> linears(const Var& x, const std::vector<Var>& weights);
Var layernorm(const Var& x, const Var& weight, const Var& bias, float eps = 1e-5f);  // over the last dim
Var gelu(const Var& x);                                               // tanh form, as GPT-2
Var embedding(const Ids& ids, const Var& table);                       // ids[...], table[V, C] -> [..., C]

// A projection's rows and where their heads start: head h of `rows` [B, T, W] is the columns
// offset + h·D … offset + (h + 1)·D (GPT-2's fused qkv keeps q, k and v side by side in one rows tensor).
struct HeadColumns {
  const Var& rows;
  int offset = 0;
};
// heads query heads of dim D; kv_heads key/value heads (heads a multiple of kv_heads: grouped-query attention).
struct HeadLayout {
  int heads, kv_heads, dim;
};
// Causal softmax(q kᵀ / sqrt(D)) v per query head h, which reads kv head h / (heads / kv_heads); q has `heads`
// heads, k and v `kv_heads` (their columns may share one rows tensor). Returns [B, T, heads·D]. The kernels index
// the kv head (no copy per query head); a kv head's gradient is one sum over its group (attention.cpp).
Var causal_attention(HeadColumns q, HeadColumns k, HeadColumns v, const HeadLayout& layout);
// Mean over counted rows of -log softmax(logits[..., V])[target], shape [1].
Var cross_entropy(const Var& logits, const Ids& targets, int ignore_index = -100);
Var sum_product(const Var& a, const Var& b);                          // Σ a ∘ b, shape [1]

// The ops the Llama decoder adds (functions_llama.cpp).
Var rmsnorm(const Var& x, const Var& weight, float eps = 1e-5f);     // x · rsqrt(mean(x²) + eps) · weight, last dim
Var silu(const Var& x);                                               // x · sigmoid(x)
Var swiglu(const Var& gate, const Var& up);                          // silu(gate) · up, one pass (same shapes)
Var mul(const Var& a, const Var& b);                                  // a ∘ b, same shapes
// x[B, T, n_head·D] (D even): each head's D rotated as ops::rope does (half-split pairs, layout bthd), position t
// by (t + pos_offset) · base^(-2i/D).
Var rope(const Var& x, int n_head, int pos_offset = 0, float base = 10000.0f);

// The optimizer's kernels, applied to parameters and their state outside any graph. Nothing is read back:
// the gradient norm and the clipping factor stay on the device.

// The global gradient norm of a fixed list of parameters, in one pass over all their gradients
// (a parameter no gradient has reached counts 0): stats[0] = norm, stats[1] = min(1, max_norm / norm)
// (1 when max_norm <= 0). Keeps a device table of the gradient buffers, rebuilt only when they change.
class GradNorm {
 public:
  explicit GradNorm(std::vector<Var> params);
  // stats: [2], or [3] for the skip flag (kernels/adamw.hpp). inv_scale: 1 / the loss scale the gradients carry.
  void operator()(const Var& stats, float max_norm, float inv_scale = 1.0f, bool skip_nonfinite = false);

 private:
  std::vector<Var> params_;
  std::shared_ptr<void> table_;  // the device table (functions.cpp)
};

struct AdamwStep {
  float lr, beta1, beta2, eps, weight_decay;
  float correction1, correction2;  // 1 - β1^t, 1 - β2^t
};
// param -= AdamW step from param's gradient scaled by stats[1] (GradNorm's clipping factor); m and v
// (shaped as param) are updated in place.
void adamw_update(const Var& param, const Var& m, const Var& v, const AdamwStep& step, const Var& stats);

}  // namespace ptk::ag
