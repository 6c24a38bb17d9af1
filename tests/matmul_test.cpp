// matmul parity: ptk::ops::matmul (portable kernel and KokkosBlas::gemm) against the oracle.
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
}

}  // namespace
}  // namespace ptk::test
