#include "ptk/nn/inference.hpp"

#include <chrono>
#include <random>
#include <string>

namespace ptk::nn {

KvCache make_kv_cache(const Decoder& model, int batch, int capacity, DType dtype) {
  const DecoderConfig& c = model.config();
  require(batch > 0, "kv cache: batch must be positive, got ", batch);
  require(capacity > 0 && capacity <= c.block_size, "kv cache: capacity ", capacity, " must be in [1, block_size = ",
          c.block_size, "]");
  require(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16, "kv cache: the cache stores f32, bf16 or "
          "f16, not ", dtype_name(dtype));
  KvCache cache;
  cache.batch = batch;
  cache.capacity = capacity;
  const Shape shape{batch, kv_heads(c), capacity, c.n_embd / c.n_head};
  for (int i = 0; i < c.n_layer; ++i) {
    cache.k.push_back(ag::Var::zeros(shape, model.device()));
    cache.v.push_back(ag::Var::zeros(shape, model.device()));
    cache.k.back().store_as(dtype);
    cache.v.back().store_as(dtype);
  }
  return cache;
}

ag::Var CachedAttention::operator()(int layer, ag::HeadColumns q, ag::HeadColumns k, ag::HeadColumns v,
                                    const ag::HeadLayout& heads, std::optional<float> rope_base) {
  const auto i = static_cast<std::size_t>(layer);
  // rope rides along with the cache append (one launch): q and k are this step's own projections.
  return ag::cached_attention(q, k, v, heads, cache_.k[i], cache_.v[i], cache_.length, rope_base);
}

ag::Var forward_cached(const Decoder& model, KvCache& cache, const std::vector<int>& ids, int Tn, bool all_positions) {
  const DecoderConfig& c = model.config();
  const int B = cache.batch, pos = cache.length;
  require(Tn > 0 && static_cast<std::int64_t>(ids.size()) == static_cast<std::int64_t>(B) * Tn, "forward_cached: ",
          ids.size(), " ids for batch ", B, " x ", Tn, " new tokens");
  require(pos + Tn <= cache.capacity, "forward_cached: positions ", pos, " + ", Tn, " new tokens exceed the cache's ",
          cache.capacity, " (block_size ", c.block_size, ")");
  ag::NoGrad no_grad;
  Tokens tokens{ag::Ids(), ag::Ids(), B, Tn};
  if (parts_of(c.arch).positions == DecoderParts::Positions::learned) {
    std::vector<int> positions(ids.size());  // uploaded with the ids, in one copy
    for (std::size_t i = 0; i < positions.size(); ++i)
      positions[i] = pos + static_cast<int>(i % static_cast<std::size_t>(Tn));
    const auto parts = ag::Ids::from_vectors({B, Tn}, {&ids, &positions}, model.device());
    tokens.ids = parts[0];
    tokens.positions = parts[1];
  } else {
    tokens.ids = ag::Ids::from_vector({B, Tn}, ids, model.device());
  }
  CachedAttention attention(cache);
  ag::Var logits = model.forward(tokens, attention, /*last_only=*/!all_positions);
  cache.length = pos + Tn;
  return logits;
}

GenerateStats generate(const Decoder& model, const std::vector<int>& prompts, int batch, const GenerateOptions& options,
                       const std::function<void(int, int)>& emit) {
  const DecoderConfig& c = model.config();
  require(batch > 0 && !prompts.empty() && prompts.size() % static_cast<std::size_t>(batch) == 0, "generate: ",
          prompts.size(), " prompt ids do not split into ", batch, " prompts of one length");
  const int P = static_cast<int>(prompts.size() / static_cast<std::size_t>(batch));
  for (std::size_t i = 0; i < prompts.size(); ++i)
    require(prompts[i] >= 0 && prompts[i] < c.vocab_size, "generate: prompt id ", prompts[i], " at position ",
            i % static_cast<std::size_t>(P), " of prompt ", i / static_cast<std::size_t>(P), " is outside the vocabulary [0, ",
            c.vocab_size, ")");
  require(options.new_tokens >= 0, "generate: the number of new tokens must be >= 0, got ", options.new_tokens);
  require(options.slide || static_cast<std::int64_t>(P) + options.new_tokens <= c.block_size + 1, "generate: the prompt's ",
          P, " tokens + ", options.new_tokens, " new tokens need a context of ", P + options.new_tokens - 1,
          " positions, beyond the model's block_size ", c.block_size);
  require(options.slide || P <= c.block_size, "generate: the prompt's ", P, " tokens exceed the model's block_size ",
          c.block_size);

  ag::NoGrad no_grad;
  ag::ReuseBuffers reuse;
  // Without a slide the cache holds exactly the positions that are run: the prompt and every new token but the last.
  const int capacity = options.slide ? c.block_size : std::max(1, std::min(c.block_size, P + options.new_tokens - 1));
  KvCache cache = make_kv_cache(model, batch, std::max(capacity, std::min(P, c.block_size)), options.kv_dtype);
  ag::TokenSampler sample;
  std::mt19937_64 rng(options.seed);
  std::vector<float> u(static_cast<std::size_t>(batch));
  // Each row's tokens so far: a slide runs the last half block of them again.
  std::vector<std::vector<int>> history(static_cast<std::size_t>(batch));
  for (int b = 0; b < batch; ++b)
    history[static_cast<std::size_t>(b)].assign(prompts.begin() + static_cast<std::ptrdiff_t>(b) * P,
                                                prompts.begin() + static_cast<std::ptrdiff_t>(b + 1) * P);
  const auto window = [&](int T) {
    std::vector<int> ids;
    for (const auto& h : history) ids.insert(ids.end(), h.end() - T, h.end());
    return ids;
  };

  std::vector<char> ended(static_cast<std::size_t>(batch), 0);  // the row has emitted options.stop_id
  int rows_ended = 0;
  GenerateStats stats{batch, P, 0, 0.0, 0.0};
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  const int first = std::min(P, c.block_size);
  ag::Var logits = forward_cached(model, cache, window(first), first);
  for (int n = 0; n < options.new_tokens; ++n) {
    for (auto& x : u) x = static_cast<float>(rng() >> 40) * 0x1.0p-24f;
    const std::vector<int> next = sample(logits, u, options.sampling);
    const auto t1 = Clock::now();
    (n == 0 ? stats.prefill_seconds : stats.decode_seconds) += std::chrono::duration<double>(t1 - t0).count();
    ++stats.new_tokens;
    for (int b = 0; b < batch; ++b) {
      const int token = next[static_cast<std::size_t>(b)];
      history[static_cast<std::size_t>(b)].push_back(token);
      if (ended[static_cast<std::size_t>(b)]) continue;
      if (emit) emit(b, token);
      if (options.stop_id && token == *options.stop_id) ended[static_cast<std::size_t>(b)] = 1, ++rows_ended;
    }
    if (n + 1 == options.new_tokens || rows_ended == batch) break;
    t0 = Clock::now();
    if (cache.length == cache.capacity) {  // only with slide (checked above)
      cache.length = 0;
      const int keep = std::max(1, c.block_size / 2);
      logits = forward_cached(model, cache, window(keep), keep);
    } else {
      logits = forward_cached(model, cache, next, 1);
    }
  }
  return stats;
}

}  // namespace ptk::nn
