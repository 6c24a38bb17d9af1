// The vendor GEMM's route (core/vendor_blas.hpp): which GEMM the default space gives two 16-bit operands, and the
// column-major call it makes checked against the oracle on the host (its parity on a GPU runs in matmul_test.cpp's
// MatmulStoredParity, through cuBLAS and through ptk's kernel).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "matmul_cases.hpp"
#include "parity.hpp"
#include "ptk/core/vendor_blas.hpp"
#include "ptk/reference/matmul.hpp"

namespace ptk::test {
namespace {

// Which GEMM a GPU gives two 16-bit operands: PTK_EXPECT_VENDOR_GEMM (the device check sets it to "cuBLAS" where
// it finds a cuBLAS) names the route that must be taken, so that a silent fallback to ptk's kernel fails; elsewhere
// a host build says it runs its own. Where the route is cuBLAS, the switch turns it off and on.
TEST(VendorGemm, RouteIsTheExpectedOne) {
  const std::string route = vendor::gemm16_route();
  std::cout << "bf16/f16 GEMM on the default space: " << route << "\n";
  RecordProperty("route", route);
  if (const char* want = std::getenv("PTK_EXPECT_VENDOR_GEMM"); want && *want)
    EXPECT_EQ(route.rfind(want, 0), 0u) << "expected the route to be " << want;
  else if (is_host_space_v<Kokkos::DefaultExecutionSpace>)
    EXPECT_EQ(route, "portable: the host's own GEMM");
  if (route.rfind("cuBLAS", 0) != 0) return;
  const bool was = vendor::enable_gemm16(false);
  EXPECT_EQ(vendor::gemm16_route(), "portable: PTK_VENDOR_GEMM=0");
  vendor::enable_gemm16(was);
  EXPECT_EQ(vendor::gemm16_route(), route);
}

// BLAS's column-major GEMM as its reference implementation defines it, in double: C(i, j) = Σ_l X(i, l) · Y(l, j)
// with X(i, l) = x[i + l · ld] (transposed: x[l + i · ld]), batch by batch at the call's strides.
void column_major_gemm(const vendor::ColumnMajorGemm& g, float* c) {
  for (int batch = 0; batch < g.batches; ++batch) {
    const float* x = static_cast<const float*>(g.first) + batch * g.stride_first;
    const float* y = static_cast<const float*>(g.second) + batch * g.stride_second;
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.m; ++i) {
        double sum = 0;
        for (int l = 0; l < g.k; ++l)
          sum += double(g.trans_first ? x[l + i * g.ld_first] : x[i + l * g.ld_first]) *
                 double(g.trans_second ? y[j + l * g.ld_second] : y[l + j * g.ld_second]);
        c[batch * g.stride_c + i + j * g.ldc] = static_cast<float>(sum);
      }
  }
}

// The column-major call the vendor GEMM makes (vendor::column_major: operands swapped, leading dimensions, the
// batch folded under a shared b) computes the row-major product: no GPU needed to check the mapping, every stored
// case (transposes, batched and broadcast operands) against the oracle.
TEST(VendorGemm, ColumnMajorCallComputesTheRowMajorProduct) {
  for (const MatmulCase& c : kStoredCases) {
    const auto a = uniform(element_count(operand_shape(c.batch_a, c.M, c.K, c.trans_a)), -1, 1, name(c) + "a");
    const auto b = uniform(element_count(operand_shape(c.batch_b, c.K, c.N, c.trans_b)), -1, 1, name(c) + "b");
    const std::int64_t batch = std::max<std::int64_t>({c.batch_a, c.batch_b, 1});
    std::vector<float> want(static_cast<std::size_t>(batch * c.M * c.N)), got(want.size(), NAN);
    reference::matmul_forward(want.data(), a.data(), b.data(), batch, c.M, c.N, c.K, c.trans_a, c.trans_b,
                              c.batch_a > 0, c.batch_b > 0);
    const vendor::Gemm16 g{vendor::Operand::bf16, static_cast<int>(batch), static_cast<int>(c.M),
                           static_cast<int>(c.N), static_cast<int>(c.K), c.trans_a, c.trans_b, a.data(),
                           c.batch_a > 1 ? c.M * c.K : 0, b.data(), c.batch_b > 1 ? c.K * c.N : 0, nullptr, 1, 0};
    column_major_gemm(vendor::column_major(g), got.data());
    EXPECT_TRUE(all_close(got, want, {batch, c.M, c.N}, tolerance::matmul(c.K))) << name(c);
  }
}

}  // namespace
}  // namespace ptk::test
