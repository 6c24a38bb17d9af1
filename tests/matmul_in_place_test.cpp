// The host GEMM reads an untransposed f32 b in place, not packed, where a block's rows spread over the L2
// (kernels/matmul_blocked.hpp, detail::b_lines_per_set; tuning.hpp, HostMatmul::b_in_place_lines): which strides
// qualify, and the products it gives against the same GEMM that always packs (the same bits) and the oracle.
#include <cstring>
#include <string>
#include <vector>

#include "matmul_cases.hpp"
#include "parity.hpp"
#include "ptk/kernels/matmul_blocked.hpp"
#include "ptk/reference/matmul.hpp"

namespace ptk::test {
namespace {

using kernels::HostMatmul;

// The lines of a 96-column block on one of the L2's 2048 sets, at the strides timed in docs/benchmarks.md.
TEST(MatmulInPlace, WhereTheRowsSpreadOverTheL2) {
  const auto lines = [](int ld, int kc) { return kernels::detail::b_lines_per_set(ld, kc, 96, HostMatmul::l2_sets); };
  EXPECT_EQ(lines(1024, 1024), 32);  // rows 4 KB apart start on 32 sets: packed
  EXPECT_EQ(lines(3072, 768), 24);   // 12 KB apart: 32 sets too
  EXPECT_EQ(lines(1536, 1536), 24);  // 6 KB apart: 64 sets
  EXPECT_EQ(lines(768, 2048), 16);   // 3 KB apart, a 2048-step slab
  EXPECT_EQ(lines(768, 768), 6);     // in place
  EXPECT_EQ(lines(384, 2048), 8);
  EXPECT_EQ(lines(2304, 768), 6);
  EXPECT_EQ(lines(200, 2048), 7);  // rows 8 floats off the lines: 7 lines a row, over every set
  EXPECT_EQ(lines(1, 5), 1);
  EXPECT_LE(lines(384, 2048), HostMatmul::b_in_place_lines);
  EXPECT_GT(lines(768, 2048), HostMatmul::b_in_place_lines);
}

// The host's tuning with b always packed.
struct PackedMatmul : HostMatmul {
  static constexpr int b_in_place_lines = 0;
};
struct PackedTuning : kernels::HostTuning {
  using matmul = PackedMatmul;
};

// c = alpha · a · b + bias + beta · c, b [K, N] read in place (but a ragged last block of columns), against the same
// product with b packed (the same bits: the tiles read the same values in the same order) and the oracle.
// 37 x 200 x 2100: two slabs (the second starts 2048 rows into b) and a last block of 8 or 56 columns;
// 600 x 384 x 700: two row blocks.
template <class Space>
void check_in_place() {
  const float alpha = 0.5f, beta = 1.0f;
  for (const auto& [M, N, K] : std::vector<std::array<std::int64_t, 3>>{{37, 200, 2100}, {600, 384, 700}}) {
    const auto name = "in place " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    ASSERT_LE(kernels::detail::b_lines_per_set(static_cast<int>(N), static_cast<int>(std::min<std::int64_t>(K, 2048)),
                                               96, HostMatmul::l2_sets),
              HostMatmul::b_in_place_lines)
        << name << ": b would be packed";
    const auto a = uniform(M * K, -1, 1, name + "a"), b = uniform(K * N, -1, 1, name + "b");
    const auto bias = uniform(N, -1, 1, name + "bias"), c0 = uniform(M * N, -1, 1, name + "c");
    std::vector<float> product(c0.size());
    reference::matmul_forward(product.data(), a.data(), b.data(), 1, M, N, K, false, false, false, false);
    const auto want = scaled_product(product, alpha, bias, beta, c0, N);

    const auto A = Tensor<Space>::from_host({1, M, K}, a), B = Tensor<Space>::from_host({1, K, N}, b);
    const auto Bias = Tensor<Space>::from_host({N}, bias);
    const auto run = [&](auto tune) {
      const auto C = Tensor<Space>::from_host({1, M, N}, c0);
      kernels::matmul_blocked<Space, decltype(tune), float, float>(C.batched_matrices(), A.batched_matrices(),
                                                                   B.batched_matrices(), false, false, alpha, beta,
                                                                   ConstVector<Space>(Bias.flat()));
      return C.to_vector();
    };
    const auto got = run(kernels::HostTuning{}), packed = run(PackedTuning{});
    EXPECT_TRUE(all_close(got, want, {M, N}, tolerance::matmul(K))) << Space::name() << ", " << name;
    for (std::size_t e = 0; e < got.size(); ++e)
      ASSERT_EQ(std::memcmp(&got[e], &packed[e], sizeof(float)), 0)
          << Space::name() << ", " << name << ": element (" << e / N << ", " << e % N << ") is " << got[e]
          << " with b in place, " << packed[e] << " packed";
  }
}

TEST(MatmulInPlace, SameBitsAsPackedAndTheOracle) {
#if defined(KOKKOS_ENABLE_OPENMP)
  check_in_place<Kokkos::OpenMP>();  // the host's tuning even under PTK_TUNING=gpu
#endif
#if defined(KOKKOS_ENABLE_SERIAL)
  check_in_place<Kokkos::Serial>();
#endif
}

}  // namespace
}  // namespace ptk::test
