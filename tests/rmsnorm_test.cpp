// rmsnorm parity: ptk::ops::rmsnorm (out, rstd) against the oracle.
#include "hard_rows.hpp"
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

// 1000 + N(0,1) rows, 768 and 2^20 wide, against tolerance::normalization_row.
class RmsnormHardRows : public ::testing::TestWithParam<HardRows> {};

TEST_P(RmsnormHardRows, Forward) {
  const auto& c = GetParam();
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  const auto x = offset_normal(element_count(c.shape), 1000.0f, c.label);
  const auto weight = uniform(cols, -1, 1, c.label + "weight");
  std::vector<float> want(x.size()), want_rstd(static_cast<std::size_t>(rows));
  reference::rmsnorm_forward(want.data(), want_rstd.data(), x.data(), weight.data(), rows, cols, 1e-5f);
  const auto tol = tolerance::normalization_row(cols, magnitude_over_spread(x, want_rstd, cols));
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    const auto r = ops::rmsnorm(Tensor<Space>::from_host(c.shape, x), Tensor<Space>::from_host({cols}, weight), 1e-5f);
    EXPECT_TRUE(all_close(r.out.to_vector(), want, c.shape, tol)) << Space::name() << " out";
    EXPECT_TRUE(all_close(r.rstd.to_vector(), want_rstd, {rows}, tol)) << Space::name() << " rstd";
  });
}

INSTANTIATE_TEST_SUITE_P(Hard, RmsnormHardRows, ::testing::ValuesIn(hard_rows()),
                         [](const auto& info) { return info.param.label; });

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
