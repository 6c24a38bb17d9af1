// rmsnorm parity: ptk::ops::rmsnorm (out, rstd) against the oracle.
#include "parity.hpp"
#include "ptk/ops/rmsnorm.hpp"
#include "ptk/reference/rmsnorm.hpp"

namespace ptk::test {
namespace {

struct RmsnormCase {
  Shape shape;
  float eps;
  bool zero_rows;  // all-zero rows: rstd = 1/sqrt(eps), output 0
};

std::string name(const RmsnormCase& c) { return shape_name(c.shape) + (c.zero_rows ? "_zero" : ""); }

const std::vector<RmsnormCase> kCases = [] {
  std::vector<RmsnormCase> cases;
  for (std::int64_t rows : {1, 3, 17, 127})
    for (std::int64_t cols : {1, 3, 17, 127, 513, 768}) cases.push_back({{rows, cols}, 1e-5f, false});
  cases.push_back({{2, 17, 127}, 1e-6f, false});
  cases.push_back({{5}, 1e-5f, false});
  cases.push_back({{17, 513}, 1e-5f, true});
  return cases;
}();

template <class Space>
void check_rmsnorm(const RmsnormCase& c) {
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  auto x = uniform(element_count(c.shape), -2, 2, name(c));
  if (c.zero_rows) std::fill(x.begin(), x.end(), 0.0f);
  const auto weight = uniform(cols, -1, 1, name(c) + "weight");
  std::vector<float> want(x.size()), want_rstd(static_cast<std::size_t>(rows));
  reference::rmsnorm_forward(want.data(), want_rstd.data(), x.data(), weight.data(), rows, cols, c.eps);

  const auto r = ops::rmsnorm(Tensor<Space>::from_host(c.shape, x), Tensor<Space>::from_host({cols}, weight), c.eps);
  const auto tol = tolerance::normalization(cols);
  EXPECT_TRUE(all_close(r.out.to_vector(), want, c.shape, tol)) << Space::name() << " out";
  EXPECT_TRUE(all_close(r.rstd.to_vector(), want_rstd, {rows}, tol)) << Space::name() << " rstd";
}

// gtest and ctest show the case by its name, not its bytes.
void PrintTo(const RmsnormCase& c, std::ostream* os) { *os << name(c); }

class RmsnormParity : public ::testing::TestWithParam<RmsnormCase> {};

TEST_P(RmsnormParity, Forward) {
  for_each_space([&](auto space) { check_rmsnorm<typename decltype(space)::type>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Sweep, RmsnormParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

TEST(RmsnormErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::rmsnorm(Tensor<S>({4, 8}), Tensor<S>({4, 8}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rmsnorm: weight must have rank 1, got shape [4, 8]");
  }
}

}  // namespace
}  // namespace ptk::test
