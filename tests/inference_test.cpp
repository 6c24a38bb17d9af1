// Generation with a KV cache: the logits of a prefill and of every decode step after it against the float64
// oracle's full recomputation of the whole sequence (prefill lengths 1, 7, 64 and block − 1; batch 2), greedy
// generation against the argmax of full recomputations, seeded sampling repeatable, rows ending at a stop id, and
// the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "parity.hpp"
#include "ptk/kernels/matmul_decode.hpp"
#include "ptk/nn/inference.hpp"
#include "ptk/ops/convert.hpp"
#include "ptk/reference/attention.hpp"
#include "ptk/reference/gpt.hpp"
#include "ptk/reference/llama.hpp"

namespace ptk::test {
namespace {

const ag::Device kHost = ag::Device::host;

// Weights larger than the initialization's, so that attention is far from uniform and every layer matters.
reference::Params randomize(const nn::Decoder& model) {
  reference::Params params;
  for (const auto& [name, var] : model.parameters()) {
    auto v = uniform(var.numel(), -0.3f, 0.3f, "inference-" + name);
    if (var.shape().size() == 1 && name.find("weight") != std::string::npos)
      for (auto& x : v) x += 1.0f;
    var.assign(v);
    params[name] = std::vector<double>(v.begin(), v.end());
  }
  return params;
}

std::vector<int> random_tokens(std::size_t n, int V, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<int> t(n);
  for (auto& x : t) x = static_cast<int>(gen() % static_cast<unsigned>(V));
  return t;
}

// Row b, position t of the oracle's [B, T, V] logits.
std::vector<float> oracle_row(const std::vector<double>& logits, int T, int V, int b, int t) {
  const auto* r = logits.data() + (static_cast<std::size_t>(b) * T + t) * V;
  return std::vector<float>(r, r + V);
}

// The largest |got - want| / (atol + rtol |want|) seen, printed for docs/tolerances.md.
struct Worst {
  double ratio = 0.0;
  void see(const std::vector<float>& got, const std::vector<float>& want, const Tolerance& tol) {
    for (std::size_t i = 0; i < got.size(); ++i)
      ratio = std::max(ratio, std::fabs(static_cast<double>(got[i]) - want[i]) / tol.allowed(want[i]));
  }
};

// Prefills of each length, then decode steps to the end of the block, each position's logits against the
// oracle's full-sequence logits [B, T, V] for the same tokens, within `tol` (for q8_0 and q4_0 weights, whose
// products round the activations to int8 on every path, which the oracle does not: cached_logits_int8).
void check_cached_against(const nn::Decoder& model, const std::vector<int>& tokens, const std::vector<double>& oracle,
                          int B, Worst& worst, const Tolerance& tol = tolerance::cached_logits) {
  const int T = model.config().block_size, V = model.config().vocab_size;
  for (int P : {1, 7, 64, T - 1}) {
    nn::KvCache cache = nn::make_kv_cache(model, B, T);
    std::vector<int> prompt;
    for (int b = 0; b < B; ++b) prompt.insert(prompt.end(), tokens.begin() + b * T, tokens.begin() + b * T + P);
    const auto prefill = nn::forward_cached(model, cache, prompt, P, /*all_positions=*/true).values();
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < P; ++t) {
        const std::vector<float> got(prefill.begin() + (b * P + t) * V, prefill.begin() + (b * P + t + 1) * V);
        ASSERT_TRUE(all_close(got, oracle_row(oracle, T, V, b, t), {V}, tol))
            << "prefill " << P << ", row " << b << ", position " << t;
        worst.see(got, oracle_row(oracle, T, V, b, t), tol);
      }
    for (int t = P; t < T; ++t) {
      std::vector<int> next;
      for (int b = 0; b < B; ++b) next.push_back(tokens[static_cast<std::size_t>(b * T + t)]);
      const auto step = nn::forward_cached(model, cache, next, 1).values();
      for (int b = 0; b < B; ++b) {
        const std::vector<float> got(step.begin() + b * V, step.begin() + (b + 1) * V);
        ASSERT_TRUE(all_close(got, oracle_row(oracle, T, V, b, t), {V}, tol))
            << "prefill " << P << ", decode step at position " << t << ", row " << b;
        worst.see(got, oracle_row(oracle, T, V, b, t), tol);
      }
    }
    EXPECT_EQ(cache.length, T);
    EXPECT_THROW(nn::forward_cached(model, cache, std::vector<int>(static_cast<std::size_t>(B), 0), 1), Error);  // full
  }
}

TEST(Inference, CachedLogitsMatchTheOracleAtEveryPosition) {
  Worst worst;
  const nn::DecoderConfig c{2, 4, 32, 72, 29};
  const int B = 2, T = c.block_size, V = c.vocab_size;
  const nn::Decoder model(c, kHost, 11);
  const auto params = randomize(model);
  const auto tokens = random_tokens(static_cast<std::size_t>(B * T), V, 5);
  const auto oracle = reference::gpt_step({c.n_layer, c.n_head, c.n_embd, c.block_size, V}, params, tokens, tokens, B, T);
  check_cached_against(model, tokens, oracle.logits, B, worst);
  std::cout << "[ measured ] worst cached-logit error (gpt2): " << worst.ratio << " of the tolerance\n";
}

// Llama: rope at the cache's offset, and grouped-query heads (kv ratios 1, 2, 4) sharing the cache.
TEST(Inference, LlamaCachedLogitsMatchTheOracleAtEveryPosition) {
  Worst worst;
  for (int kv : {4, 2, 1}) {
    nn::DecoderConfig c{2, 4, 32, 72, 29};
    c.arch = nn::Arch::llama;
    c.n_kv_head = kv;
    const int B = 2, T = c.block_size, V = c.vocab_size;
    const nn::Decoder model(c, kHost, 12);
    const auto params = randomize(model);
    const auto tokens = random_tokens(static_cast<std::size_t>(B * T), V, 6);
    const auto oracle = reference::llama_step({c.n_layer, c.n_head, nn::kv_heads(c), c.n_embd, nn::mlp_hidden(c), V,
                                               c.rope_base, c.norm_eps},
                                              params, tokens, tokens, B, T);
    SCOPED_TRACE("kv heads " + std::to_string(kv));
    check_cached_against(model, tokens, oracle.logits, B, worst);
  }
  std::cout << "[ measured ] worst cached-logit error (llama): " << worst.ratio << " of the tolerance\n";
}

// Weights stored as bf16, f16, q8_0 or q4_0 (Decoder::store_weights_as, as `ptk generate --dtype`): the cached
// logits, prefill (the GEMM on the weights converted back) and decode steps (the decode kernel over the stored
// type), against the oracle run on the stored values, at the f32 tolerance: the kernels read the stored values
// exactly. Products with q8_0 and q4_0 weights also round their activations to int8, in prefill and decode alike (the
// kernels' parity against the oracle on the same integers is MatmulDecode.Q8_0Weights and Linear.StoredWeights):
// those models get tolerance::cached_logits_int8. Then what a stored weight refuses: any op but linear, a gradient,
// a second conversion.
template <class E>
void check_stored_model() {
  Worst worst;
  nn::DecoderConfig c{2, 4, 64, 72, 29};
  c.arch = nn::Arch::llama;
  c.n_kv_head = 2;
  const int B = 2, T = c.block_size, V = c.vocab_size;
  nn::Decoder model(c, kHost, 13);
  auto params = randomize(model);
  model.store_weights_as(Element<E>::dtype);
  using H = Kokkos::DefaultHostExecutionSpace;
  int stored = 0;
  for (const auto& [name, var] : model.parameters()) {
    if (var.dtype() == DType::f32) continue;
    ++stored;
    const std::vector<float> f32(params[name].begin(), params[name].end());
    const auto back = ops::to_f32(ops::convert<E>(Tensor<H>::from_host(var.shape(), f32))).to_vector();
    params[name] = std::vector<double>(back.begin(), back.end());
  }
  EXPECT_EQ(stored, 2 * 7 + 1);  // q, k, v, o, gate, up, down a layer, and the head
  const auto tokens = random_tokens(static_cast<std::size_t>(B * T), V, 7);
  const auto oracle = reference::llama_step({c.n_layer, c.n_head, nn::kv_heads(c), c.n_embd, nn::mlp_hidden(c), V,
                                             c.rope_base, c.norm_eps},
                                            params, tokens, tokens, B, T);
  check_cached_against(model, tokens, oracle.logits, B, worst,
                       is_quantized_v<E> ? tolerance::cached_logits_int8 : tolerance::cached_logits);
  std::cout << "[ measured ] worst cached-logit error, weights " << dtype_name(Element<E>::dtype) << ": "
            << worst.ratio << " of the tolerance\n";
  const ag::Var& w = model.parameter("model.layers.0.mlp.up_proj.weight");
  EXPECT_THROW(ag::add(w, w), InputError);  // "a weight stored as ... is read only by linear"
  const auto x = ag::Var::from_vector({1, c.n_embd}, std::vector<float>(static_cast<std::size_t>(c.n_embd), 0.5f),
                                      kHost, /*requires_grad=*/true);
  EXPECT_THROW(ag::linear(x, w), InputError);  // a graph through a stored weight
  {
    ag::NoGrad no_grad;
    EXPECT_EQ(ag::linear(x, w).shape(), (Shape{1, nn::mlp_hidden(c)}));
  }
  EXPECT_THROW(w.store_as(DType::q4_0 == Element<E>::dtype ? DType::q8_0 : DType::q4_0), InputError);
}

TEST(Inference, StoredBf16WeightsMatchTheOracleOnTheirValues) { check_stored_model<bf16>(); }
TEST(Inference, StoredF16WeightsMatchTheOracleOnTheirValues) { check_stored_model<f16>(); }
TEST(Inference, StoredQ8_0WeightsMatchTheOracleOnTheirValues) { check_stored_model<q8_0>(); }
TEST(Inference, StoredQ4_0WeightsMatchTheOracleOnTheirValues) { check_stored_model<q4_0>(); }

// A 16-bit KV cache (ptk generate --kv-dtype): the kernel over a bf16/f16 cache is checked against the oracle in
// decode_attention_test; here, that the model's decode steps use the cache's type. The logits of every decode step
// after a prefill of 7, against the same steps with an f32 cache: different (the cache holds rounded keys and
// values) and within 16 u of the largest logit, u the type's unit roundoff. The bound is not derived: it is loose
// for this 2-layer model (the run prints the ratio seen) and only catches a cache read as the wrong type.
template <class E>
void check_kv_cache_type() {
  nn::DecoderConfig c{2, 4, 64, 72, 29};
  c.arch = nn::Arch::llama;
  c.n_kv_head = 2;
  const int B = 2, T = c.block_size, V = c.vocab_size, P = 7;
  nn::Decoder model(c, kHost, 14);
  randomize(model);
  const auto tokens = random_tokens(static_cast<std::size_t>(B * T), V, 8);
  nn::KvCache ref = nn::make_kv_cache(model, B, T), cache = nn::make_kv_cache(model, B, T, Element<E>::dtype);
  EXPECT_EQ(cache.k[0].dtype(), Element<E>::dtype);
  std::vector<int> prompt;
  for (int b = 0; b < B; ++b) prompt.insert(prompt.end(), tokens.begin() + b * T, tokens.begin() + b * T + P);
  nn::forward_cached(model, ref, prompt, P);
  nn::forward_cached(model, cache, prompt, P);
  double worst = 0.0, largest = 0.0;
  bool differs = false;
  for (int t = P; t < T; ++t) {
    std::vector<int> next;
    for (int b = 0; b < B; ++b) next.push_back(tokens[static_cast<std::size_t>(b * T + t)]);
    const auto want = nn::forward_cached(model, ref, next, 1).values();
    const auto got = nn::forward_cached(model, cache, next, 1).values();
    for (std::size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
      largest = std::max(largest, std::fabs(static_cast<double>(want[i])));
      differs = differs || got[i] != want[i];
    }
  }
  const double u = std::is_same_v<E, bf16> ? 0x1p-8 : 0x1p-11;
  EXPECT_TRUE(differs) << "a " << dtype_name(Element<E>::dtype) << " cache gave the f32 cache's logits bit for bit";
  EXPECT_LT(worst, 16 * u * largest) << dtype_name(Element<E>::dtype);
  std::cout << "[ measured ] " << dtype_name(Element<E>::dtype) << " KV cache: largest logit change "
            << worst / (u * largest) << " u of the largest logit\n";
  EXPECT_THROW(nn::make_kv_cache(model, B, T, DType::q8_0), InputError);
}

TEST(Inference, Bf16KvCacheIsReadAsBf16) { check_kv_cache_type<bf16>(); }
TEST(Inference, F16KvCacheIsReadAsF16) { check_kv_cache_type<f16>(); }

// A first call of cached_attention with more tokens than the tuning's prefill_rows takes flash attention
// (autograd/inference.cpp), over the keys and values as the cache stores them: with a 16-bit cache, the rounded values
// that every later step reads. Against the oracle over q and the rounded k and v (grouped heads, causal), within
// attention's fp32 tolerance: attending k's and v's unrounded rows instead misses it by the cache's rounding (bf16:
// ~2^-9 of |v|, f16: ~2^-12, against a tolerance near 2^-17 here).
template <class E>
void check_long_prefill_cache() {
  const int B = 2, H = 4, Hkv = 2, D = 16, T = 1 + ag::prefill_rows(kHost);
  const auto q = uniform(B * T * H * D, -1, 1, "prefill-q"), k = uniform(B * T * Hkv * D, -1, 1, "prefill-k"),
             v = uniform(B * T * Hkv * D, -1, 1, "prefill-v");
  const auto qr = ag::Var::from_vector({B, T, H * D}, q, kHost), kr = ag::Var::from_vector({B, T, Hkv * D}, k, kHost),
             vr = ag::Var::from_vector({B, T, Hkv * D}, v, kHost);
  ag::Var k_cache = ag::Var::zeros({B, Hkv, T, D}, kHost), v_cache = ag::Var::zeros({B, Hkv, T, D}, kHost);
  k_cache.store_as(Element<E>::dtype);
  v_cache.store_as(Element<E>::dtype);
  const auto got = ag::cached_attention({qr, 0}, {kr, 0}, {vr, 0}, {H, Hkv, D}, k_cache, v_cache, 0).values();
  // The oracle's [B, H, T, D] heads from the [B, T, heads · D] rows (q's, and y's to compare), query head h reading
  // kv head h / (H / Hkv).
  const auto kr16 = values_of(rounded<E>(k)), vr16 = values_of(rounded<E>(v));
  std::vector<float> qh(q.size()), kh(q.size()), vh(q.size()), got_heads(q.size()), want(q.size()),
      lse(static_cast<std::size_t>(B * H * T));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t)
        for (int d = 0; d < D; ++d) {
          const auto at = static_cast<std::size_t>(((b * H + h) * T + t) * D + d);
          const auto row = static_cast<std::size_t>((b * T + t) * H * D + h * D + d);
          const auto kv = static_cast<std::size_t>((b * T + t) * Hkv * D + h / (H / Hkv) * D + d);
          qh[at] = q[row];
          got_heads[at] = got[row];
          kh[at] = kr16[kv];
          vh[at] = vr16[kv];
        }
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  reference::attention_forward(want.data(), lse.data(), qh.data(), kh.data(), vh.data(), B, H, T, T, D, scale, true);
  EXPECT_TRUE(all_close(got_heads, want, {B, H, T, D}, tolerance::attention(D, T, scale * D)))
      << dtype_name(Element<E>::dtype) << " cache";
}

TEST(Inference, LongPrefillReadsABf16CacheAsStored) { check_long_prefill_cache<bf16>(); }
TEST(Inference, LongPrefillReadsAnF16CacheAsStored) { check_long_prefill_cache<f16>(); }

// A width that is not whole blocks of 32 cannot be stored as q8_0 or q4_0: the first weight's conversion refuses
// in one line (ptk generate exits 2 with it).
TEST(Inference, StoredWeightsNeedWholeBlocks) {
  nn::DecoderConfig c{1, 2, 16, 24, 11};
  c.arch = nn::Arch::llama;
  nn::Decoder model(c, kHost, 1);
  try {
    model.store_weights_as(DType::q8_0);
    ADD_FAILURE() << "a width of 16 stored as q8_0";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("q8_0 stores the last dimension in blocks of 32"), std::string::npos) << e.what();
  }
}

TEST(Inference, GreedyGenerationIsTheArgmaxOfFullRecomputation) {
  const nn::DecoderConfig c{2, 2, 16, 40, 23};
  const nn::Decoder model(c, kHost, 3);
  randomize(model);
  const int B = 2, P = 5, N = c.block_size - P + 1;
  const auto prompts = random_tokens(static_cast<std::size_t>(B * P), c.vocab_size, 9);
  std::vector<std::vector<int>> generated(B);
  nn::GenerateOptions options;
  options.new_tokens = N;
  options.sampling.temperature = 0.0f;
  const auto stats = nn::generate(model, prompts, B, options, [&](int b, int token) { generated[b].push_back(token); });
  EXPECT_EQ(stats.new_tokens, N);
  EXPECT_EQ(stats.prompt_tokens, P);
  ag::NoGrad no_grad;
  for (int b = 0; b < B; ++b) {
    std::vector<int> seq(prompts.begin() + b * P, prompts.begin() + (b + 1) * P);
    ASSERT_EQ(generated[b].size(), static_cast<std::size_t>(N));
    for (int n = 0; n < N; ++n) {
      const int T = static_cast<int>(seq.size());
      const auto logits = model.logits(ag::Ids::from_vector({1, T}, seq, kHost), 1, T).values();
      const auto last = logits.begin() + static_cast<std::ptrdiff_t>(T - 1) * c.vocab_size;
      const int argmax = static_cast<int>(std::max_element(last, last + c.vocab_size) - last);
      ASSERT_EQ(generated[b][n], argmax) << "row " << b << ", token " << n;
      seq.push_back(argmax);
    }
  }
}

// A row ends with the stop id: emitted, then nothing; generation ends when every row has ended; a row's tokens
// before its end are those of a run without a stop id (its draws are not shifted by another row's end).
TEST(Inference, RowsEndAtTheStopId) {
  const nn::DecoderConfig c{1, 2, 8, 32, 11};
  const nn::Decoder model(c, kHost, 5);
  randomize(model);
  const int B = 2, P = 3;
  const auto prompts = random_tokens(static_cast<std::size_t>(B * P), c.vocab_size, 4);
  const auto run = [&](std::optional<int> stop) {
    nn::GenerateOptions options;
    options.new_tokens = 20;
    options.seed = 7;
    options.sampling = {1.0f, 0, 1.0f};
    options.stop_id = stop;
    std::vector<std::vector<int>> out(B);
    const auto stats = nn::generate(model, prompts, B, options, [&](int b, int t) { out[b].push_back(t); });
    return std::make_pair(out, stats.new_tokens);
  };
  const auto [full, steps] = run(std::nullopt);
  ASSERT_EQ(steps, 20);
  // The stop id: row 0's third token; where it first comes in each row decides that row's length.
  const int stop = full[0][2];
  std::size_t longest = 0;
  const auto [cut, cut_steps] = run(stop);
  for (int b = 0; b < B; ++b) {
    const auto at = std::find(full[b].begin(), full[b].end(), stop);
    const std::vector<int> want(full[b].begin(), at == full[b].end() ? at : at + 1);
    EXPECT_EQ(cut[b], want) << "row " << b;
    longest = std::max(longest, want.size());
  }
  EXPECT_EQ(cut_steps, static_cast<int>(longest));
  EXPECT_LE(cut[0].size(), 3u);
}

TEST(Inference, SeededSamplingRepeatsAndRefusals) {
  const nn::DecoderConfig c{1, 2, 8, 16, 11};
  const nn::Decoder model(c, kHost, 1);
  const auto run = [&](std::uint64_t seed) {
    nn::GenerateOptions options;
    options.new_tokens = 12;
    options.seed = seed;
    options.sampling = {0.9f, 5, 0.9f};
    std::vector<int> out;
    nn::generate(model, {1, 2, 3}, 1, options, [&](int, int t) { out.push_back(t); });
    return out;
  };
  EXPECT_EQ(run(4), run(4));
  EXPECT_NE(run(4), run(5));
  nn::GenerateOptions too_long;
  too_long.new_tokens = 15;  // 3 + 15 - 1 = 17 positions > 16
  EXPECT_THROW(nn::generate(model, {1, 2, 3}, 1, too_long, {}), Error);
  EXPECT_THROW(nn::generate(model, {1, 11, 3}, 1, {}, {}), Error);  // id 11 outside [0, 11)
  EXPECT_THROW(nn::make_kv_cache(model, 1, 17), Error);
}

}  // namespace
}  // namespace ptk::test
