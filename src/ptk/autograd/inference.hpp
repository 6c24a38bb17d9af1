#pragma once
// Inference-only ops on Vars (no Kokkos here): a KV cache's append and attention, the last position of a
// sequence, and sampling. They record no graph: their results never require a gradient.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ptk/autograd/functions.hpp"

namespace ptk::ag {

// Appends the Tn new tokens' keys and values (k, v: layout.kv_heads heads) to the caches [B, Hkv, Tmax, D] at
// positions pos … pos + Tn − 1, then attends the new queries (q: layout.heads heads) to cache positions
// 0 … pos + Tn − 1, causally (query t sees the keys up to its own position); query head h reads kv head
// h / (heads / kv_heads). Returns [B, Tn, heads·D]. A first call (pos = 0) with more tokens than the tuning's
// decode_attention::prefill_rows (prefill_rows below) is a long prefill: flash attention over the new tokens; every
// other call runs the split-KV decode attention, where a group's query heads share each read of a key. Both read the
// keys and values in the cache as it is stored: f32, or bf16 or f16 (Var::store_as), into which the new keys and
// values are rounded, so that a prompt attends the values its later tokens will. With
// rope_base, q's and k's heads are first rotated in place (rope at positions pos …, in the pass that appends them:
// ops::rope_kv_cache_append), so q.rows and k.rows must be this call's own (a decode step's projections).
Var cached_attention(HeadColumns q, HeadColumns k, HeadColumns v, const HeadLayout& layout, const Var& k_cache,
                     const Var& v_cache, int pos, std::optional<float> rope_base = std::nullopt);

// The most new tokens a first call of cached_attention attends through the decode kernel on `device` (the tuning's
// decode_attention::prefill_rows); more take flash attention.
int prefill_rows(Device device);

// x[..., out] += a[..., in] · weight[out, in]ᵀ + bias[out] (bias may be undefined), in place: a residual
// connection without a separate add (a decode step's launches cost more than its arithmetic). x's old value is
// gone: only for a residual stream that nothing else holds.
void accumulate_linear(const Var& x, const Var& a, const Var& weight, const Var& bias = Var());

// x [B, T, C] -> [B, C]: the last position of each sequence.
Var last_position(const Var& x);

struct SamplingParams {
  float temperature = 1.0f;  // 0: greedy
  int top_k = 0;             // 0: no limit
  float top_p = 1.0f;        // 1: no limit
};

// One token per row of logits [rows, V], drawn on the logits' device (ops::sample) from the rows' uniform
// draws u (host, [0, 1)); only the tokens come back. Keeps its token buffer across calls. A row of logits
// holding a NaN, or only −inf, is a ptk::Error naming the row.
class TokenSampler {
 public:
  TokenSampler() = default;
  std::vector<int> operator()(const Var& logits, const std::vector<float>& u, const SamplingParams& params);

 private:
  std::shared_ptr<void> tokens_;  // the device buffer (inference.cpp)
  std::int64_t rows_ = 0;
  Device device_ = Device::host;
};

}  // namespace ptk::ag
