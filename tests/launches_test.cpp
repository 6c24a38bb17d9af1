// The kernel launches of a Llama layer in a prefill and in a decode step, counted through Kokkos' profiling hooks
// (kokkos_events.hpp): a layer's are the difference between a 2-layer and a 1-layer model's, each run twice on a
// fresh KV cache and counted the second time (rope tables and reused buffers warm, as in a generation). A layer's
// math needs, at most: its two norms, the q, k, v, o, gate, up and down products, rope on q and k, the cache
// append, attention (and a merge of key chunks), the silu gate: the bounds below are today's counts, printed with
// their kernels by label, so that a change adding launches fails here and one removing them lowers the bound.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kokkos_events.hpp"
#include "parity.hpp"
#include "ptk/nn/inference.hpp"

namespace ptk::test {
namespace {

// Today's counts (host and GPU tunings alike; docs/design.md, "Launches of a layer"). Prefill of 16 tokens, 12: 2
// rmsnorm, 7 matmul (16 f32 rows: the GEMM each), rope_kv_append (q and k rotated, k and v into the cache),
// decode_attention (a prompt of at most the tuning's prefill_rows: q and the cache read in place, the output written
// in place; one key chunk, no merge), swiglu; a longer prompt takes attention_forward (flash attention) in its place,
// q's rows and the cache read (a 16-bit cache too: no conversion launch) and the output's rows written in place, so it
// launches as many. Decode, 9: 2 rmsnorm, 4 matmul_decode (q, k and v in one launch, o, gate and up in one, down),
// rope_kv_append, decode_attention, swiglu.
constexpr int kPrefillLaunchesPerLayer = 12, kDecodeLaunchesPerLayer = 9;

// The launches of a prefill of `prompt` tokens and of the decode step after it, for an L-layer Llama.
struct Counts {
  Events prefill, decode;
};

Counts count(int layers, int prompt, DType kv = DType::f32) {
  nn::DecoderConfig config{layers, 4, 64, prompt + 1 > 64 ? prompt + 1 : 64, 23};
  config.arch = nn::Arch::llama;
  config.n_kv_head = 2;
  const nn::Decoder model(config, ag::Device::host, 5);
  std::vector<int> ids(static_cast<std::size_t>(prompt));
  for (int i = 0; i < prompt; ++i) ids[static_cast<std::size_t>(i)] = (3 * i + 1) % config.vocab_size;
  Watch watch(/*launches=*/true);
  ag::ReuseBuffers reuse;
  Counts counts;
  for (int run = 0; run < 2; ++run) {
    nn::KvCache cache = nn::make_kv_cache(model, 1, config.block_size, kv);
    Events prefill, decode;
    {
      const Recording recording(prefill);
      nn::forward_cached(model, cache, ids, prompt);
    }
    {
      const Recording recording(decode);
      nn::forward_cached(model, cache, {ids[0]}, 1);
    }
    counts = {prefill, decode};
  }
  return counts;
}

// Whether a launch is one of the layer's own: ptk's kernels (labels "ptk::…"), not what Kokkos launches inside a
// deep copy or a view's initialization (which differs between Kokkos 3 and 4), and not, in a build without NDEBUG
// (the debug preset), the NaN fill of every uninitialized tensor (core/tensor.hpp: 18-19 "ptk::fill" a layer).
bool counted(const std::string& label) {
#if !defined(NDEBUG)
  if (label == "ptk::fill") return false;
#endif
  return label.rfind("ptk::", 0) == 0;
}

// Events by label in `more` beyond those in `fewer`; with `launches_only`, only those `counted`.
std::map<std::string, int> difference(const std::map<std::string, int>& more, const std::map<std::string, int>& fewer,
                                      bool launches_only = false) {
  std::map<std::string, int> out = more;
  for (const auto& [label, n] : fewer) out[label] -= n;
  for (auto it = out.begin(); it != out.end();)
    it = it->second == 0 || (launches_only && !counted(it->first)) ? out.erase(it) : std::next(it);
  return out;
}

TEST(Launches, PerLlamaLayerInPrefillAndDecode) {
  const Counts one = count(1, 16), two = count(2, 16);
  const auto prefill = difference(two.prefill.launches, one.prefill.launches, true);
  const auto decode = difference(two.decode.launches, one.decode.launches, true);
  // A prompt longer than the tuning's prefill_rows takes flash attention (autograd/inference.cpp).
  const int long_prompt = 1 + ag::prefill_rows(ag::Device::host);
  const auto long_prefill =
      difference(count(2, long_prompt).prefill.launches, count(1, long_prompt).prefill.launches, true);
  std::cout << "[ launches ] a Llama layer's prefill of 16 tokens: " << Events::total(prefill) << Events::list(prefill)
            << "\n[ launches ] of " << long_prompt << " tokens: " << Events::total(long_prefill)
            << Events::list(long_prefill) << "\n[ launches ] its decode step: " << Events::total(decode)
            << Events::list(decode) << "\n[ launches ] the whole 2-layer model: prefill "
            << Events::total(two.prefill.launches) << ", decode " << Events::total(two.decode.launches) << "\n";
  EXPECT_EQ(long_prefill.count("ptk::attention_forward"), 1u) << Events::list(long_prefill);
  EXPECT_LE(Events::total(long_prefill), kPrefillLaunchesPerLayer) << Events::list(long_prefill);
  const auto bf16_prefill = difference(count(2, long_prompt, DType::bf16).prefill.launches,
                                       count(1, long_prompt, DType::bf16).prefill.launches, true);
  EXPECT_EQ(bf16_prefill, long_prefill) << "over a bf16 cache:" << Events::list(bf16_prefill);
  EXPECT_GT(Events::total(one.prefill.launches), 0) << "the hooks saw no launch: not reporting?";
  for (const auto& [label, n] : prefill) EXPECT_GT(n, 0) << label << ": fewer launches with more layers";
  EXPECT_LE(Events::total(prefill), kPrefillLaunchesPerLayer) << Events::list(prefill);
  EXPECT_LE(Events::total(decode), kDecodeLaunchesPerLayer) << Events::list(decode);
  // A layer allocates nothing in a warm decode step (its buffers are reused).
  EXPECT_EQ(Events::total(difference(two.decode.allocations, one.decode.allocations)), 0)
      << Events::list(difference(two.decode.allocations, one.decode.allocations));
}

}  // namespace
}  // namespace ptk::test
