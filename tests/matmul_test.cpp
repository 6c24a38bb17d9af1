// matmul parity: ptk::ops::matmul (portable kernel and KokkosBlas::gemm) against the oracle.
#include <iostream>

#include "parity.hpp"
#include "ptk/ops/matmul.hpp"
#include "ptk/reference/matmul.hpp"

namespace ptk::test {
namespace {

struct MatmulCase {
  std::int64_t batch_a, batch_b;  // 0: that operand is rank 2
  std::int64_t M, N, K;
  bool trans_a, trans_b;
};

std::string name(const MatmulCase& c) {
  return "A" + std::to_string(c.batch_a) + (c.trans_a ? "T" : "N") + "_B" + std::to_string(c.batch_b) +
         (c.trans_b ? "T" : "N") + "_M" + std::to_string(c.M) + "_N" + std::to_string(c.N) + "_K" + std::to_string(c.K);
}

// gtest and ctest show the case by its name, not its bytes.
void PrintTo(const MatmulCase& c, std::ostream* os) { *os << name(c); }

// The sweep: odd sizes on every axis, all transpose combinations, batched and broadcast operands.
const std::vector<MatmulCase> kCases = [] {
  std::vector<MatmulCase> cases;
  for (std::int64_t n : {1, 3, 17, 127}) cases.push_back({0, 0, n, n, n, false, false});
  for (auto [M, N, K] : std::vector<std::array<std::int64_t, 3>>{
           {513, 17, 127}, {17, 513, 3}, {3, 127, 513}, {127, 1, 513}, {1, 513, 127}, {300, 257, 64}})
    cases.push_back({0, 0, M, N, K, false, false});
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      cases.push_back({0, 0, 17, 127, 33, ta, tb});
      cases.push_back({3, 3, 127, 17, 65, ta, tb});
    }
  cases.push_back({4, 0, 33, 129, 17, false, false});  // a linear layer: batched input, shared weight
  cases.push_back({4, 0, 33, 129, 17, false, true});
  cases.push_back({0, 2, 5, 7, 513, true, false});  // shared left operand
  cases.push_back({1, 1, 1, 1, 1, false, false});
  // Long reductions: the kernel sums K in slabs, then the slabs.
  cases.push_back({0, 0, 3, 5, 4096, false, false});
  cases.push_back({0, 0, 2, 33, 16384, true, true});
  cases.push_back({0, 0, 2, 3, 65536, false, true});
  cases.push_back({2, 2, 5, 3, 65536, true, false});
  // Attention-like batched shapes: QK^T (trans_b) and P·V.
  cases.push_back({6, 6, 64, 64, 32, false, true});
  cases.push_back({6, 6, 64, 32, 64, false, false});
  return cases;
}();

Shape operand_shape(std::int64_t batch, std::int64_t rows, std::int64_t cols, bool trans) {
  Shape s = trans ? Shape{cols, rows} : Shape{rows, cols};
  if (batch > 0) s.insert(s.begin(), batch);
  return s;
}

template <class Space>
void check_matmul(const MatmulCase& c) {
  const Shape a_shape = operand_shape(c.batch_a, c.M, c.K, c.trans_a);
  const Shape b_shape = operand_shape(c.batch_b, c.K, c.N, c.trans_b);
  const auto a = uniform(element_count(a_shape), -1, 1, name(c) + "a");
  const auto b = uniform(element_count(b_shape), -1, 1, name(c) + "b");
  const std::int64_t batch = std::max<std::int64_t>({c.batch_a, c.batch_b, 1});
  std::vector<float> want(static_cast<std::size_t>(batch * c.M * c.N));
  reference::matmul_forward(want.data(), a.data(), b.data(), batch, c.M, c.N, c.K, c.trans_a, c.trans_b,
                            c.batch_a > 0, c.batch_b > 0);

  const auto A = Tensor<Space>::from_host(a_shape, a), B = Tensor<Space>::from_host(b_shape, b);
  for (auto impl : {ops::MatmulImpl::portable, ops::MatmulImpl::kokkos_blas}) {
    const auto C = ops::matmul(A, B, c.trans_a, c.trans_b, impl);
    Shape c_shape{c.M, c.N};
    if (c.batch_a > 0 || c.batch_b > 0) c_shape.insert(c_shape.begin(), batch);
    ASSERT_EQ(C.shape(), c_shape);
    EXPECT_TRUE(all_close(C.to_vector(), want, c_shape, tolerance::matmul(c.K)))
        << Space::name() << (impl == ops::MatmulImpl::portable ? " portable kernel" : " KokkosBlas::gemm");
  }
}

class MatmulParity : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulParity, Forward) {
  for_each_space([&](auto space) { check_matmul<typename decltype(space)::type>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Sweep, MatmulParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

// C = alpha · op(A) · op(B) + beta · C in place, against the oracle's product combined in double.
template <class Space>
void check_accumulate(const MatmulCase& c, float alpha, float beta) {
  const Shape a_shape = operand_shape(c.batch_a, c.M, c.K, c.trans_a);
  const Shape b_shape = operand_shape(c.batch_b, c.K, c.N, c.trans_b);
  const auto a = uniform(element_count(a_shape), -1, 1, name(c) + "a");
  const auto b = uniform(element_count(b_shape), -1, 1, name(c) + "b");
  const std::int64_t batch = std::max<std::int64_t>({c.batch_a, c.batch_b, 1});
  Shape c_shape{c.M, c.N};
  if (c.batch_a > 0 || c.batch_b > 0) c_shape.insert(c_shape.begin(), batch);
  const auto c0 = uniform(element_count(c_shape), -1, 1, name(c) + "c");
  std::vector<float> product(c0.size()), want(c0.size());
  reference::matmul_forward(product.data(), a.data(), b.data(), batch, c.M, c.N, c.K, c.trans_a, c.trans_b,
                            c.batch_a > 0, c.batch_b > 0);
  for (std::size_t i = 0; i < want.size(); ++i)
    want[i] = static_cast<float>(double(alpha) * product[i] + double(beta) * c0[i]);

  const auto A = Tensor<Space>::from_host(a_shape, a), B = Tensor<Space>::from_host(b_shape, b);
  for (auto impl : {ops::MatmulImpl::portable, ops::MatmulImpl::kokkos_blas}) {
    const auto C = Tensor<Space>::from_host(c_shape, c0);
    ops::matmul_accumulate(C, A, B, c.trans_a, c.trans_b, alpha, beta, impl);
    EXPECT_TRUE(all_close(C.to_vector(), want, c_shape, tolerance::matmul(c.K)))
        << Space::name() << (impl == ops::MatmulImpl::portable ? " portable kernel" : " KokkosBlas::gemm")
        << " alpha=" << alpha << " beta=" << beta;
  }
}

TEST(MatmulAccumulate, AlphaBeta) {
  const std::vector<MatmulCase> cases{{0, 0, 17, 127, 33, false, false}, {3, 3, 127, 17, 65, true, true},
                                      {4, 0, 33, 129, 17, false, true},  {0, 2, 5, 7, 513, true, false},
                                      {0, 0, 13, 40, 1000, false, false}};
  for (const auto& c : cases)
    for (const auto& alpha_beta : std::vector<std::pair<float, float>>{{1, 1}, {-0.5f, 1}, {2, 0.25f}, {1, 0}}) {
      // Named copies, not a structured binding: clang (hipcc) rejects capturing bindings in C++17.
      const float alpha = alpha_beta.first, beta = alpha_beta.second;
      for_each_space([&](auto space) { check_accumulate<typename decltype(space)::type>(c, alpha, beta); });
    }
}

// Long K: the portable kernel's worst error against the float64 oracle must stay within a small
// multiple of OpenBLAS's (sgemm through KokkosBlas::gemm's BLAS TPL) on the same data.
TEST(MatmulAccuracy, LongKNoWorseThanBlas) {
  using S = Kokkos::DefaultHostExecutionSpace;
  for (std::int64_t K : {4096, 16384, 65536}) {
    const MatmulCase c{0, 0, 16, 16, K, false, false};
    const auto a = uniform(c.M * K, -1, 1, name(c) + "a"), b = uniform(K * c.N, -1, 1, name(c) + "b");
    std::vector<double> want(static_cast<std::size_t>(c.M * c.N), 0.0);
    for (std::int64_t m = 0; m < c.M; ++m)
      for (std::int64_t k = 0; k < K; ++k)
        for (std::int64_t n = 0; n < c.N; ++n) want[m * c.N + n] += double(a[m * K + k]) * double(b[k * c.N + n]);
    const auto A = Tensor<S>::from_host({c.M, K}, a), B = Tensor<S>::from_host({K, c.N}, b);
    const auto max_error = [&](ops::MatmulImpl impl) {
      const auto got = ops::matmul(A, B, false, false, impl).to_vector();
      double worst = 0;
      for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
      return worst / tolerance::u;
    };
    const double ptk = max_error(ops::MatmulImpl::portable), blas = max_error(ops::MatmulImpl::kokkos_blas);
    std::cout << "[ accuracy ] K=" << K << ": max |error| ptk " << ptk << " u, OpenBLAS " << blas << " u\n";
    EXPECT_LE(ptk, 2.0 * blas + 64.0) << "K=" << K;
  }
}

template <class Space>
std::string matmul_error(const Shape& a, const Shape& b, bool ta = false, bool tb = false) {
  try {
    ops::matmul(Tensor<Space>(a), Tensor<Space>(b), ta, tb);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(MatmulErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  EXPECT_EQ(matmul_error<S>({2, 3}, {4, 5}),
            "matmul: inner dimensions differ: op(A) has K=3 and op(B) has K=4 for A [2, 3] (trans_a=0), B [4, 5] "
            "(trans_b=0)");
  EXPECT_EQ(matmul_error<S>({3, 2}, {3, 5}, true, false), "no error");
  EXPECT_EQ(matmul_error<S>({2, 3, 4}, {3, 4, 5}),
            "matmul: batch sizes differ for A [2, 3, 4] (trans_a=0), B [3, 4, 5] (trans_b=0)");
  EXPECT_EQ(matmul_error<S>({2, 2, 3, 4}, {4, 5}), "matmul: A must have rank 2..3, got shape [2, 2, 3, 4]");
  EXPECT_EQ(matmul_error<S>({4}, {4, 5}), "matmul: A must have rank 2..3, got shape [4]");
  EXPECT_THROW(ops::matmul(Tensor<S>(), Tensor<S>({4, 5})), Error);
  EXPECT_THROW(ops::matmul_accumulate(Tensor<S>({2, 4}), Tensor<S>({2, 3}), Tensor<S>({3, 5})), Error);
}

}  // namespace
}  // namespace ptk::test
