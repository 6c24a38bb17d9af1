// ptk::nn::estimate_training_memory against hand counts (ptk info --model).
#include <gtest/gtest.h>

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

}  // namespace
