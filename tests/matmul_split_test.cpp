// The GPU GEMM's split K (kernels/matmul_register_tiled.hpp, matmul_split): which products split, and a split product
// against the oracle with alpha, beta and a bias (the ranges' sums added by a launch of their own), the same bits on a
// second run. Run with the GPU tuning: on OpenMP under PTK_TUNING=gpu (EmulatedGpuTuning: the GPU's tiles and split
// counts) and on the GPU itself.
#include <cstring>
#include <utility>
#include <vector>

#include "kokkos_events.hpp"
#include "matmul_cases.hpp"
#include "parity.hpp"
#include "ptk/ops/matmul.hpp"
#include "ptk/reference/matmul.hpp"

namespace ptk::test {
namespace {

// The split counts follow from the blocks (batch x 128-row x 64-column) and K alone.
TEST(MatmulSplit, WhereTheBlocksFillLittle) {
  const auto split = [](long long blocks, int K) {
    const auto s = kernels::matmul_split<kernels::GpuMatmul<1024>>(blocks, K);
    return std::pair{s.splits, s.split_k};
  };
  EXPECT_EQ(split(64, 4096), std::pair(4, 1024));  // 16 to 128 rows against a 4096 x 4096 weight
  EXPECT_EQ(split(256, 4096), std::pair(1, 4096));  // 512 rows: the blocks fill most of the 264
  EXPECT_EQ(split(172, 4096), std::pair(1, 4096));  // 11008 columns
  EXPECT_EQ(split(32, 5632), std::pair(8, 704));  // 2048 columns over TinyLlama's MLP width
  EXPECT_EQ(split(72, 8192), std::pair(3, 2736));  // a 768 x 768 weight's gradient over 8192 tokens
  EXPECT_EQ(split(2, 4099), std::pair(8, 528));  // seven ranges of 528 steps, the last of 403
  EXPECT_EQ(split(1, 1000), std::pair(1, 1000));  // ranges under 512 steps: not split
  EXPECT_EQ(split(1, 0), std::pair(1, 0));
}

// c = alpha · x · wᵀ + bias + beta · c over 2 batches of 37 rows, a shared 129 x 2100 weight: 6 blocks, so K goes
// in 4 ranges (3 of 528 steps, one of 516). A K of 1000 is not split.
template <class Space, class Tune>
void check_split_product() {
  const std::int64_t B = 2, M = 37, N = 129;
  const float alpha = 0.5f, beta = 1.0f;
  for (const std::int64_t K : {2100, 1000}) {
    const auto name = "split K" + std::to_string(K);
    const auto x = uniform(B * M * K, -1, 1, name + "x"), w = uniform(N * K, -1, 1, name + "w");
    const auto bias = uniform(N, -1, 1, name + "bias"), c0 = uniform(B * M * N, -1, 1, name + "c");
    std::vector<float> product(c0.size());
    reference::matmul_forward(product.data(), x.data(), w.data(), B, M, N, K, false, true, true, false);
    const auto want = scaled_product(product, alpha, bias, beta, c0, N);

    const auto X = Tensor<Space>::from_host({B, M, K}, x), W = Tensor<Space>::from_host({1, N, K}, w);
    const auto Bias = Tensor<Space>::from_host({N}, bias);
    const auto run = [&](Events& events) {
      const auto C = Tensor<Space>::from_host({B, M, N}, c0);
      Watch watch(true);
      Recording recording(events);
      kernels::matmul_forward<Space, Tune>(C.batched_matrices(), X.batched_matrices(), W.batched_matrices(), false,
                                           true, alpha, beta, kernels::MatmulImpl::portable,
                                           ConstVector<Space>(Bias.flat()));
      Kokkos::fence();
      return C.to_vector();
    };
    Events first, second;
    const auto got = run(first), again = run(second);
    EXPECT_TRUE(all_close(got, want, {B, M, N}, tolerance::matmul(K))) << Space::name() << ", K = " << K;
    EXPECT_EQ(first.launches["ptk::matmul_forward"], 1) << Events::list(first.launches);
    EXPECT_EQ(first.launches["ptk::matmul_split_sum"], K == 2100 ? 1 : 0) << Events::list(first.launches);
    for (std::size_t e = 0; e < got.size(); ++e)
      ASSERT_EQ(std::memcmp(&got[e], &again[e], sizeof(float)), 0)
          << "K = " << K << ": element (" << e / N << ", " << e % N << ") differs between two runs";
  }
}

TEST(MatmulSplit, SplitProductMatchesTheOracle) {
  bool ran = false;
#if defined(KOKKOS_ENABLE_OPENMP)
  if (runtime::host_runs_gpu_tuning()) {  // OpenMP started with the emulated GPU's team sizes
    check_split_product<Kokkos::OpenMP, kernels::EmulatedGpuTuning>();
    ran = true;
  }
#endif
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  using Device = Kokkos::DefaultExecutionSpace;
  if (space_selected<Device>() && !runtime::host_runs_gpu_tuning()) {
    check_split_product<Device, kernels::Tuning<Device>>();
    ran = true;
  }
#endif
  if (!ran) GTEST_SKIP() << "the GPU tuning runs under PTK_TUNING=gpu (ctest geometry:matmul_split) and on a GPU";
}

}  // namespace
}  // namespace ptk::test
