#pragma once
// The decoder, written in ptk::ag ops (no Kokkos here): one definition for GPT-2 and Llama, for training, prefill
// and cached decoding. The config's architecture picks the parts (DecoderParts): the norm (layernorm with bias or
// rmsnorm), the position encoding (learned table or rope), the attention projections (one fused qkv with biases, or
// q/k/v with grouped kv heads), the MLP (gelu or SwiGLU) and the head (tied to the token table or its own). How a
// layer attends is a strategy (Attention): over the whole sequence with a graph for training (FullAttention), or over
// a KV cache for generation (nn/inference.hpp). Each architecture keeps its reference implementation's parameter
// names (decoder.cpp, one table per architecture), so its checkpoints load in any implementation of it.
//
// Arch::gpt2 (GPT-2's names):
//   wte [V, C], wpe [block_size, C];  per block h.{i}: ln_1 → causal self-attention (attn.c_attn [3C, C] + [3C],
//   q, k, v in that order, heads consecutive chunks of C/H; attn.c_proj [C, C] + [C]) → residual → ln_2 →
//   mlp.c_fc [4C, C] + [4C] → gelu (tanh) → mlp.c_proj [C, 4C] + [C] → residual;  ln_f;  logits = x · wteᵀ.
// Linear weights are [out, in] (y = x Wᵀ + b), layernorm eps norm_eps (1e-5), attention scale 1/sqrt(C/H).
//
// Arch::llama (Hugging Face LlamaForCausalLM's names; no biases; untied head), D = C/H, Hkv = kv_heads, F = mlp_hidden:
//   model.embed_tokens.weight [V, C];  per layer model.layers.{i}.: input_layernorm.weight [C] (rmsnorm) →
//   self_attn.q_proj.weight [C, C], k_proj.weight [Hkv·D, C], v_proj.weight [Hkv·D, C] → rope on q and k
//   (half-split pairs, positions pos..pos+T-1, base rope_base) → causal attention, scale 1/sqrt(D), query head h
//   reading kv head h / (H/Hkv) (grouped-query attention) → self_attn.o_proj.weight [C, C] → residual →
//   post_attention_layernorm.weight [C] → mlp.down_proj.weight [C, F] · (silu(mlp.gate_proj.weight [F, C] · h)
//   ∘ mlp.up_proj.weight [F, C] · h) → residual;  model.norm.weight [C];  logits = x · lm_head.weight [V, C]ᵀ.
//   rmsnorm eps norm_eps. This is exactly LlamaForCausalLM's math (rotate_half rope).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptk/autograd/functions.hpp"
#include "ptk/nn/arch.hpp"

namespace ptk::nn {

using ptk::to_string;  // (Shape's, which the overload below would hide in this namespace)
// "gpt2" or "llama".
std::string to_string(Arch arch);
// The inverse of to_string; anything else throws ptk::Error naming the value and the valid ones.
Arch parse_arch(const std::string& name);

struct DecoderConfig {
  int n_layer = 4, n_head = 4, n_embd = 128, block_size = 128, vocab_size = 0;
  Arch arch = Arch::gpt2;
  int n_kv_head = 0;           // llama: key/value heads (grouped-query attention); 0 = n_head
  int ffn_hidden = 0;          // llama: MLP width F; 0 = the default (mlp_hidden)
  float rope_base = 10000.0f;  // llama
  float norm_eps = 1e-5f;      // the norms' epsilon (layernorm for gpt2, rmsnorm for llama)
};

// The parts an architecture is made of: the forward pass reads these, never the architecture's name.
struct DecoderParts {
  enum class Norm { layernorm, rmsnorm } norm;
  enum class Positions { learned, rope } positions;
  enum class Mlp { gelu, swiglu } mlp;
  bool fused_qkv;   // one [3C, C] projection (q, k, v side by side) instead of three
  bool tied_head;   // the LM head is the token table
  // (Biases need no part: an architecture without them has no bias parameters, and an undefined bias adds nothing.)
};
DecoderParts parts_of(Arch arch);

// n_kv_head, or n_head when it is 0.
int kv_heads(const DecoderConfig& config);
// The MLP's hidden width: gpt2 4·C; llama ffn_hidden, or by default 32·ceil(floor(8·C/3) / 32) (LLaMA's 2/3 of
// 4·C, rounded up to a multiple of 32).
int mlp_hidden(const DecoderConfig& config);

// Throws ptk::Error with a one-line message naming the bad field unless: every size is positive,
// n_embd % n_head == 0, n_head is a multiple of kv_heads; for gpt2, n_kv_head and ffn_hidden are 0 or the
// values gpt2 implies (n_head, 4·C); for llama, the head dim C/H is even (rope rotates pairs); ffn_hidden >= 0,
// rope_base and norm_eps positive and finite.
void check_config(const DecoderConfig& config);

using NamedParameters = std::vector<std::pair<std::string, ag::Var>>;

// Every parameter's name and shape, in the model's fixed order.
std::vector<std::pair<std::string, Shape>> parameter_shapes(const DecoderConfig& config);

// How a layer's attention runs: given the layer's q, k and v columns (heads side by side), return the heads'
// outputs [B, T, H·D]. pos is where the new tokens start (rope's and the position table's offset); in_place says
// that the residual stream may be updated in place (nothing records a graph that holds it).
class Attention {
 public:
  virtual ~Attention() = default;
  virtual int pos() const = 0;
  virtual bool in_place() const = 0;
  // With rope_base, q and k (whole projections: offset 0) are rotated at positions pos() … first.
  virtual ag::Var operator()(int layer, ag::HeadColumns q, ag::HeadColumns k, ag::HeadColumns v,
                             const ag::HeadLayout& heads, std::optional<float> rope_base) = 0;
};

// Training and evaluation: causal attention over the whole sequence, differentiable (ag::causal_attention).
class FullAttention final : public Attention {
 public:
  int pos() const override { return 0; }
  bool in_place() const override { return false; }
  ag::Var operator()(int, ag::HeadColumns q, ag::HeadColumns k, ag::HeadColumns v, const ag::HeadLayout& heads,
                     std::optional<float> rope_base) override;
};

// A batch of token ids [B, T] and, for a learned position table, their positions (undefined for rope).
struct Tokens {
  ag::Ids ids, positions;
  int B = 0, T = 0;
};

class Decoder {
 public:
  // Weights ~ N(0, 0.02²), the residual projections' (gpt2: attn.c_proj, mlp.c_proj; llama: o_proj, down_proj)
  // ~ N(0, (0.02/sqrt(2 n_layer))²), biases 0, norm weights 1; drawn in parameter order from a 64-bit Mersenne
  // Twister seeded with `seed`.
  Decoder(const DecoderConfig& config, ag::Device device, std::uint64_t seed);
  // Parameters made by `make` (a model read from a file, nn/model_files.hpp), called once per parameter in the
  // model's order.
  struct ParameterInfo {
    std::string name;
    Shape shape;
    bool linear_weight;  // a linear layer's weight or an untied head: what store_weights_as stores as a reduced type
    enum class Init { normal, residual, one, zero } init;  // how the seed constructor draws it
  };
  // The standard deviation of the seed constructor's normal draws: 0.02; a residual projection's 0.02 / sqrt(2 L).
  static double init_std(const DecoderConfig& config, ParameterInfo::Init init);
  using ParameterMaker = std::function<ag::Var(const ParameterInfo&)>;
  Decoder(const DecoderConfig& config, ag::Device device, const ParameterMaker& make);

  const DecoderConfig& config() const { return config_; }
  ag::Device device() const { return device_; }
  // Every parameter once, in a fixed order, under its checkpoint name (gpt2's LM head is wte).
  const NamedParameters& parameters() const { return params_; }
  const ag::Var& parameter(const std::string& name) const;
  std::int64_t parameter_count() const;

  // The forward pass: tokens at positions attention.pos() … + T − 1 -> logits [B, T, V], or [B, V] for each
  // sequence's last position with last_only.
  ag::Var forward(const Tokens& tokens, Attention& attention, bool last_only = false) const;
  // idx [B, T] with T <= block_size -> logits [B, T, V] (full attention from position 0).
  ag::Var logits(const ag::Ids& idx, int B, int T) const;
  // Mean cross-entropy of logits(idx) against targets [B, T], shape [1].
  ag::Var loss(const ag::Ids& idx, const ag::Ids& targets, int B, int T) const;
  void zero_grad() const;
  // For inference: every linear layer's weight (and an untied LM head) stored as dtype (Var::store_as); the
  // embeddings, norms and biases stay f32, as does a head tied to the token embedding. Training is over for this
  // model: a stored weight takes no gradient.
  void store_weights_as(DType dtype);

  // One layer's parameters by role (the names are the architecture's; parts_of says which roles it has).
  struct Layer {
    ag::Var attn_norm_w, attn_norm_b, qkv_w, qkv_b, q_w, k_w, v_w, o_w, o_b;
    ag::Var mlp_norm_w, mlp_norm_b, up_w, up_b, gate_w, down_w, down_b;
  };
  struct Globals {
    ag::Var tok_embed, pos_embed, norm_w, norm_b, head;
  };

 private:
  ag::Var norm(const ag::Var& x, const ag::Var& weight, const ag::Var& bias) const;
  ag::Var attention(int layer, const ag::Var& x, Attention& attention) const;
  ag::Var mlp(const Layer& layer, const ag::Var& x) const;
  DecoderConfig config_;
  DecoderParts parts_;
  ag::Device device_;
  NamedParameters params_;
  std::vector<Layer> layers_;
  Globals globals_;
  mutable std::map<std::pair<int, int>, ag::Ids> positions_;  // learned positions' ids per (B, T), from 0
};

// The names before the decoder served both architectures; kept one release for code built against them.
using Gpt [[deprecated("nn::Gpt is now nn::Decoder")]] = Decoder;
using GptConfig [[deprecated("nn::GptConfig is now nn::DecoderConfig")]] = DecoderConfig;

}  // namespace ptk::nn
