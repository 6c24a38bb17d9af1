#pragma once
// Generation with a KV cache: a prompt is run once (prefill), its keys and values kept per layer, and every new
// token then costs one position of work (decode) instead of a recomputation of the whole context.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ptk/autograd/inference.hpp"
#include "ptk/nn/decoder.hpp"

namespace ptk::nn {

// Per layer, the keys and values of the positions seen so far: [batch, kv heads, capacity, head dim], stored as
// f32, bf16 or f16 (a 16-bit cache halves its memory and the bytes a decode step reads from it).
struct KvCache {
  std::vector<ag::Var> k, v;
  int batch = 0, capacity = 0;
  int length = 0;  // positions filled (the same for every sequence of the batch)
};

// capacity: at most the model's block_size (its position table / rope range); dtype f32, bf16 or f16. A ptk::Error
// otherwise.
KvCache make_kv_cache(const Decoder& model, int batch, int capacity, DType dtype = DType::f32);

// The decoder's attention over a KV cache (Decoder::forward's strategy for generation): each layer appends the new
// tokens' keys and values at cache.length and attends over the cache (ag::cached_attention); the residual stream
// is updated in place (no graph).
class CachedAttention final : public Attention {
 public:
  explicit CachedAttention(KvCache& cache) : cache_(cache) {}
  int pos() const override { return cache_.length; }
  bool in_place() const override { return true; }
  ag::Var operator()(int layer, ag::HeadColumns q, ag::HeadColumns k, ag::HeadColumns v, const ag::HeadLayout& heads,
                     std::optional<float> rope_base) override;

 private:
  KvCache& cache_;
};

// Runs ids [batch, Tn] (row-major, host) at positions cache.length … cache.length + Tn − 1, appending their keys
// and values to the cache. Returns the logits of the last new position, [batch, V], or of every new position,
// [batch, Tn, V], with all_positions. Records no graph. A ptk::Error when the cache cannot hold Tn more.
ag::Var forward_cached(const Decoder& model, KvCache& cache, const std::vector<int>& ids, int Tn,
                       bool all_positions = false);

struct GenerateOptions {
  int new_tokens = 256;
  ag::SamplingParams sampling;
  std::uint64_t seed = 0;
  // At a full cache: false, a ptk::Error before any work (the context must fit block_size); true, the
  // sequence's last half block is run again as a new prompt and generation goes on (train --sample).
  bool slide = false;
  DType kv_dtype = DType::f32;  // the KV cache's element type: f32, bf16 or f16
  // A row ends with this token (the model's end of sequence): it is emitted, and nothing after it; generation ends
  // when every row has ended or has new_tokens. None: every row gets new_tokens.
  std::optional<int> stop_id;
};

struct GenerateStats {
  int batch = 0, prompt_tokens = 0, new_tokens = 0;
  double prefill_seconds = 0.0, decode_seconds = 0.0;  // the first token is the prefill's; the others decode's
};

// Generates options.new_tokens tokens after each of `batch` prompts of one length (prompts: [batch, P] row-major).
// The draws come from a 64-bit Mersenne Twister seeded with options.seed: u = (next >> 40) · 2^-24 per row and
// token, in row order. emit(row, token) receives each token as soon as it is drawn (a row that has ended receives
// none; its draws still happen, so that the other rows' do not depend on when it ended).
GenerateStats generate(const Decoder& model, const std::vector<int>& prompts, int batch, const GenerateOptions& options,
                       const std::function<void(int, int)>& emit);

}  // namespace ptk::nn
