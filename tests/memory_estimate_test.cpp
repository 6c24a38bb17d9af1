// ptk::nn::estimate_training_memory against hand counts (ptk info --model).
#include <gtest/gtest.h>

#include "ptk/nn/decoder.hpp"
#include "ptk/nn/memory_estimate.hpp"

namespace {

// GPT-2 small, counted tensor by tensor (tied LM head: wte is not counted twice).
TEST(MemoryEstimate, Gpt2SmallParametersByHand) {
  const std::int64_t L = 12, C = 768, T = 1024, V = 50257;
  const std::int64_t wte = V * C, wpe = T * C;
  const std::int64_t block = 2 * C                // ln1 gamma, beta
                             + C * 3 * C + 3 * C  // qkv weight, bias
                             + C * C + C          // attention projection
                             + 2 * C              // ln2
                             + C * 4 * C + 4 * C  // MLP fc
                             + 4 * C * C + C;     // MLP projection
  const std::int64_t lnf = 2 * C;
  const std::int64_t by_hand = wte + wpe + L * block + lnf;
  EXPECT_EQ(by_hand, 124439808);
  const ptk::nn::ModelShape gpt2{12, 12, 768, 1024, 50257, 1};
  EXPECT_EQ(ptk::nn::gpt2_parameters(gpt2), 124439808);
  static_assert(ptk::nn::gpt2_parameters({12, 12, 768, 1024, 50257, 1}) == 124439808);
}

TEST(MemoryEstimate, TrainingBytes) {
  const ptk::nn::ModelShape m{12, 12, 768, 1024, 50257, 4};
  const auto e = ptk::nn::estimate_training_memory(m);
  EXPECT_EQ(e.parameter_bytes, 4 * 124439808LL);
  EXPECT_EQ(e.gradient_bytes, e.parameter_bytes);
  EXPECT_EQ(e.optimizer_bytes, 2 * e.parameter_bytes);
  // Activations at B=4, T=1024: per block 4·1024·(17·768+4) + 4·12·1024 (the attention's lse), outside the blocks
  // 4·1024·(2·768+3) + 2·4·1024·50257.
  const std::int64_t per_block = 4LL * 1024 * (17 * 768 + 4) + 4LL * 12 * 1024;
  const std::int64_t outside = 4LL * 1024 * (2 * 768 + 3) + 2LL * 4 * 1024 * 50257;
  EXPECT_EQ(e.activations, 12 * per_block + outside);
  EXPECT_EQ(e.activation_bytes, 4 * e.activations);
  EXPECT_EQ(e.total_bytes(), 16 * 124439808LL + 8 * e.activations);
}

// Mixed precision adds the 16-bit copies of the linear weights and inputs, 2 bytes each, and changes nothing else.
TEST(MemoryEstimate, MixedPrecisionAddsTheCopies) {
  const ptk::nn::ModelShape m{12, 12, 768, 1024, 50257, 4};
  const auto f32 = ptk::nn::estimate_training_memory(m), bf16 = ptk::nn::estimate_training_memory(m, ptk::DType::bf16);
  EXPECT_EQ(f32.copy_bytes, 0);
  // Weights: 12 blocks of qkv 3C², projection C², fc 4C², fc projection 4C², and the tied head V·C. Inputs per token:
  // 12 blocks of ln1 out, attention out, ln2 out (C each) and gelu out (4C), and the final layernorm's C.
  const std::int64_t weights = 12LL * 12 * 768 * 768 + 50257LL * 768, inputs = 4LL * 1024 * (12 * 7 * 768 + 768);
  EXPECT_EQ(bf16.copy_bytes, 2 * (weights + inputs));
  EXPECT_EQ(bf16.total_bytes(), f32.total_bytes() + bf16.copy_bytes);
  EXPECT_EQ(ptk::nn::estimate_training_memory(m, ptk::DType::f16).copy_bytes, bf16.copy_bytes);
  // llama: q, o [C, C], k, v [K, C], gate, up [F, C], down [C, F] a block, the untied head V·C; inputs per token: the
  // input norm (shared by q, k and v: one copy), attention out, the post-attention norm (gate and up) and the product F.
  ptk::nn::ModelShape l{2, 4, 64, 32, 100, 3, ptk::nn::Arch::llama, 2, 96};
  const std::int64_t K = 2 * 16, lw = 2LL * (2 * 64 * 64 + 2 * K * 64 + 3 * 96 * 64) + 100 * 64, li = 3LL * 32 * (2 * (3 * 64 + 96) + 64);
  EXPECT_EQ(ptk::nn::estimate_training_memory(l, ptk::DType::bf16).copy_bytes, 2 * (lw + li));
}

// Doubling the batch doubles the activations and leaves the parameter state alone.
TEST(MemoryEstimate, ActivationsScaleWithBatch) {
  const auto one = ptk::nn::estimate_training_memory({2, 2, 64, 32, 100, 1});
  const auto two = ptk::nn::estimate_training_memory({2, 2, 64, 32, 100, 2});
  EXPECT_EQ(two.activations, 2 * one.activations);
  EXPECT_EQ(two.parameters, one.parameters);
}

// Hostile shapes saturate at the int64 maximum instead of overflowing into small or negative sizes.
TEST(MemoryEstimate, HugeShapesSaturate) {
  const auto wide = ptk::nn::estimate_training_memory({100, 4, 100000, 64, 70, 16});
  EXPECT_GT(wide.total_bytes(), std::int64_t{1} << 44);  // 12·100·1e10 parameters: > 16 TiB
  const auto absurd = ptk::nn::estimate_training_memory({2147483647, 1, 2147483647, 2147483647, 256, 2147483647});
  EXPECT_EQ(absurd.parameters, ptk::nn::MemoryEstimate::kSaturated);
  EXPECT_EQ(absurd.total_bytes(), ptk::nn::MemoryEstimate::kSaturated);
  const auto long_block = ptk::nn::estimate_training_memory({4, 4, 128, 2147483647, 70, 16});
  EXPECT_GT(long_block.activations, 0);
  EXPECT_GT(long_block.total_bytes(), std::int64_t{1} << 50);
}

// T = V = 2^32 (ptk info --model 1,1,1,4294967296,4294967296,1): the training logits pass the int64 limit and
// saturate, and nothing is negative: the inference workspace, once a saturated count minus 2·B·T·V, is now its own
// sum (one layer, one position's logits), exact in double.
TEST(MemoryEstimate, HugeContextAndVocabularySaturateEverywhere) {
  using ptk::nn::MemoryEstimate;
  const std::int64_t T = std::int64_t{1} << 32, V = T;
  const ptk::nn::ModelShape m{1, 1, 1, T, V, 1};
  const auto t = ptk::nn::estimate_training_memory(m);
  EXPECT_TRUE(MemoryEstimate::saturated(t.activations));
  EXPECT_TRUE(MemoryEstimate::saturated(t.activation_bytes));
  EXPECT_TRUE(MemoryEstimate::saturated(t.total_bytes()));
  const auto g = ptk::nn::estimate_inference_memory(m);
  EXPECT_EQ(g.parameter_bytes, 4 * (V + T + 25 + 2));
  EXPECT_EQ(g.kv_cache_bytes, 4 * 2 * T);
  EXPECT_EQ(g.workspace_bytes, 4 * (T * 21 + T + T * 5 + 2 * V));
  EXPECT_EQ(g.staging_bytes, 4 * 4);  // the largest linear weight, 4·C²
  EXPECT_EQ(g.total_bytes(), g.parameter_bytes + g.kv_cache_bytes + g.workspace_bytes + g.staging_bytes);
  // Every part past the limit: each saturates, so does the total, and no sum wraps.
  const std::int64_t huge = std::int64_t{1} << 62;
  for (auto arch : {ptk::nn::Arch::gpt2, ptk::nn::Arch::llama}) {
    const ptk::nn::ModelShape h{huge, 2, huge, huge, huge, huge, arch};
    const auto e = ptk::nn::estimate_inference_memory(h);
    EXPECT_TRUE(MemoryEstimate::saturated(e.parameter_bytes));
    EXPECT_TRUE(MemoryEstimate::saturated(e.kv_cache_bytes));
    EXPECT_TRUE(MemoryEstimate::saturated(e.workspace_bytes));
    EXPECT_TRUE(MemoryEstimate::saturated(e.total_bytes()));
    EXPECT_TRUE(MemoryEstimate::saturated(ptk::nn::estimate_training_memory(h).total_bytes()));
  }
}

// The llama count equals the parameters the model actually holds, for kv ratios 1, 2, 4 and an explicit MLP width.
TEST(MemoryEstimate, LlamaParametersMatchTheModel) {
  for (int kv : {4, 2, 1})
    for (int ffn : {0, 40}) {
      ptk::nn::DecoderConfig c{3, 4, 24, 10, 7};
      c.arch = ptk::nn::Arch::llama;
      c.n_kv_head = kv;
      c.ffn_hidden = ffn;
      const ptk::nn::Decoder model(c, ptk::ag::Device::host, 1);
      const ptk::nn::ModelShape m{3, 4, 24, 10, 7, 1, ptk::nn::Arch::llama, kv, ffn};
      EXPECT_EQ(ptk::nn::llama_parameters(m), model.parameter_count()) << "kv " << kv << " ffn " << ffn;
      EXPECT_EQ(ptk::nn::estimate_training_memory(m).parameters, model.parameter_count());
    }
  // GPT-2 through the same entry point.
  const ptk::nn::Decoder gpt2(ptk::nn::DecoderConfig{3, 4, 24, 10, 7}, ptk::ag::Device::host, 1);
  EXPECT_EQ(ptk::nn::estimate_training_memory({3, 4, 24, 10, 7, 1}).parameters, gpt2.parameter_count());
}

// Llama-2 7B's shape (L 32, H 32, C 4096, V 32000, F 11008, no GQA): 6,738,415,616 parameters, as published;
// with 8 kv heads the k and v projections shrink by 4; the default F is 10944 (multiple of 32, not LLaMA's 256).
TEST(MemoryEstimate, LlamaByHand) {
  const ptk::nn::ModelShape seven_b{32, 32, 4096, 4096, 32000, 1, ptk::nn::Arch::llama, 0, 11008};
  EXPECT_EQ(ptk::nn::llama_parameters(seven_b), 6738415616LL);
  const ptk::nn::ModelShape default_f{32, 32, 4096, 4096, 32000, 1, ptk::nn::Arch::llama, 0, 0};
  EXPECT_EQ(ptk::nn::llama_parameters(seven_b) - ptk::nn::llama_parameters(default_f), 32LL * 3 * (11008 - 10944) * 4096);
  const ptk::nn::ModelShape gqa{32, 32, 4096, 4096, 32000, 1, ptk::nn::Arch::llama, 8, 11008};
  EXPECT_EQ(ptk::nn::llama_parameters(seven_b) - ptk::nn::llama_parameters(gqa), 32LL * 2 * (4096 - 1024) * 4096);
  // Activations at L 2, H 4, C 16 (K 8 with 2 kv heads, F 64), T 8, V 11, B 3.
  const ptk::nn::ModelShape small{2, 4, 16, 8, 11, 3, ptk::nn::Arch::llama, 2, 0};
  const std::int64_t per_block = 3 * 8 * (9 * 16 + 3 * 8 + 4 * 64 + 2) + 3 * 4 * 8;
  EXPECT_EQ(ptk::nn::estimate_training_memory(small).activations, 2 * per_block + 3 * 8 * (2 * 16 + 2) + 2 * 3 * 8 * 11);
}

// Inference (ptk generate): GPT-2 small at B 1, T 1024 keeps 2·12·1024·768 floats of keys and values (72 MiB, the
// known fp32 figure); the workspace is one block's activations, the embeddings and one position's logits.
TEST(MemoryEstimate, InferenceByHand) {
  const auto e = ptk::nn::estimate_inference_memory({12, 12, 768, 1024, 50257, 1});
  EXPECT_EQ(e.parameter_bytes, 124439808LL * 4);
  EXPECT_EQ(e.kv_cache_bytes, 2LL * 12 * 1024 * 768 * 4);
  EXPECT_EQ(e.workspace_bytes, 4LL * ((1024LL * (17 * 768 + 4) + 12 * 1024) + 1024LL * (2 * 768 + 3) + 2 * 50257));
  // Grouped-query attention: 8 kv heads of 32 keep a quarter of the cache; the weights shrink with k and v.
  const ptk::nn::ModelShape mha{32, 32, 4096, 4096, 32000, 1, ptk::nn::Arch::llama, 32, 11008};
  ptk::nn::ModelShape gqa = mha;
  gqa.kv_heads = 8;
  EXPECT_EQ(ptk::nn::estimate_inference_memory(mha).kv_cache_bytes, 4LL << 30);
  EXPECT_EQ(ptk::nn::estimate_inference_memory(gqa).kv_cache_bytes, 1LL << 30);
  // A 16-bit cache holds half the bytes.
  EXPECT_EQ(ptk::nn::estimate_inference_memory(gqa, ptk::DType::bf16).kv_cache_bytes, 1LL << 29);
  EXPECT_EQ(ptk::nn::estimate_inference_memory(gqa, ptk::DType::f16).kv_cache_bytes, 1LL << 29);
  EXPECT_EQ(ptk::nn::estimate_inference_memory(gqa).parameter_bytes, 4 * ptk::nn::llama_parameters(gqa));
}

}  // namespace

// Mistral 7B (L 32, H 32, 8 kv heads, C 4096, F 14336, V 32000, its sliding window 4096 as the context): 7,241,732,096
// parameters, as published. Of them the linear weights, stored in the run's type, are L·(2·C² + 2·K·C + 3·F·C) + V·C
// = 32 · 218,103,808 + 131,072,000 = 7,110,393,856; the other 131,338,240 (the token table, the norms) stay f32.
TEST(MemoryEstimate, Mistral7bPerDtypeByHand) {
  const ptk::nn::ModelShape m{32, 32, 4096, 4096, 32000, 1, ptk::nn::Arch::llama, 8, 14336};
  EXPECT_EQ(ptk::nn::llama_parameters(m), 7241732096LL);
  const std::int64_t linear = 7110393856LL, rest = 131338240LL;
  using ptk::DType;
  const auto at = [&](DType w, DType kv = DType::f32) { return ptk::nn::estimate_inference_memory(m, kv, w); };
  EXPECT_EQ(at(DType::f32).parameter_bytes, 28966928384LL);                // 27.0 GiB: no 24 GB machine holds it
  EXPECT_EQ(at(DType::bf16).parameter_bytes, 4 * rest + 2 * linear);       // 14,746,140,672 = 13.7 GiB
  EXPECT_EQ(at(DType::bf16).parameter_bytes, 14746140672LL);
  EXPECT_EQ(at(DType::q8_0).parameter_bytes, 4 * rest + linear / 32 * 34);  // 8,080,146,432 = 7.5 GiB
  EXPECT_EQ(at(DType::q8_0).parameter_bytes, 8080146432LL);
  EXPECT_EQ(at(DType::q4_0).parameter_bytes, 4 * rest + linear / 32 * 18);
  // The cache at 4096 positions: 2 · 32 layers · 4096 · 1024 values, 1 GiB in f32, half in bf16.
  EXPECT_EQ(at(DType::bf16).kv_cache_bytes, 1LL << 30);
  EXPECT_EQ(at(DType::bf16, DType::bf16).kv_cache_bytes, 1LL << 29);
  // Loading converts one tensor at a time: the largest is the head, V·C values in the run's type.
  EXPECT_EQ(at(DType::bf16).staging_bytes, 2LL * 32000 * 4096);
  EXPECT_EQ(at(DType::q8_0).staging_bytes, 32000LL * 4096 / 32 * 34);
}
