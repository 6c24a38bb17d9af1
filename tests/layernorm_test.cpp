// layernorm parity: ptk::ops::layernorm (out, mean, rstd) against the oracle, constant rows included.
#include "hard_rows.hpp"
#include "parity.hpp"
#include "ptk/ops/layernorm.hpp"
#include "ptk/reference/layernorm.hpp"

namespace ptk::test {
namespace {

struct LayernormCase {
  Shape shape;
  float eps;
  bool constant_rows;  // every row one repeated value: variance exactly 0
};

std::string name(const LayernormCase& c) {
  return shape_name(c.shape) + (c.eps == 1e-5f ? "" : "_eps1em3") + (c.constant_rows ? "_constant" : "");
}

// gtest and ctest show the case by its name, not its bytes.
void PrintTo(const LayernormCase& c, std::ostream* os) { *os << name(c); }

const std::vector<LayernormCase> kCases = [] {
  std::vector<LayernormCase> cases;
  for (std::int64_t rows : {1, 3, 17, 127})
    for (std::int64_t cols : {1, 3, 17, 127, 513, 768}) cases.push_back({{rows, cols}, 1e-5f, false});
  cases.push_back({{2, 17, 127}, 1e-5f, false});
  cases.push_back({{4, 3, 5, 33}, 1e-3f, false});
  cases.push_back({{7}, 1e-5f, false});
  cases.push_back({{17, 513}, 1e-5f, true});
  cases.push_back({{3, 1}, 1e-3f, true});
  return cases;
}();

template <class Space>
void check_layernorm(const LayernormCase& c) {
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  auto x = uniform(element_count(c.shape), -2, 2, name(c));
  if (c.constant_rows)
    for (std::int64_t i = 0; i < rows * cols; ++i) x[static_cast<std::size_t>(i)] = 1000.0f + static_cast<float>(i / cols);
  const auto gamma = uniform(cols, -1, 1, name(c) + "gamma"), beta = uniform(cols, -1, 1, name(c) + "beta");
  std::vector<float> want(x.size()), want_mean(static_cast<std::size_t>(rows)), want_rstd(want_mean.size());
  reference::layernorm_forward(want.data(), want_mean.data(), want_rstd.data(), x.data(), gamma.data(), beta.data(),
                               rows, cols, c.eps);

  const auto r = ops::layernorm(Tensor<Space>::from_host(c.shape, x), Tensor<Space>::from_host({cols}, gamma),
                                Tensor<Space>::from_host({cols}, beta), c.eps);
  const auto tol = tolerance::normalization(cols);
  EXPECT_TRUE(all_close(r.out.to_vector(), want, c.shape, tol)) << Space::name() << " out";
  EXPECT_TRUE(all_close(r.mean.to_vector(), want_mean, {rows}, tol)) << Space::name() << " mean";
  EXPECT_TRUE(all_close(r.rstd.to_vector(), want_rstd, {rows}, tol)) << Space::name() << " rstd";
}

class LayernormParity : public ::testing::TestWithParam<LayernormCase> {};

TEST_P(LayernormParity, Forward) {
  for_each_space([&](auto space) { check_layernorm<typename decltype(space)::type>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Sweep, LayernormParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

// 1000 + N(0,1) rows, 768 and 2^20 wide, against tolerance::normalization_row.
class LayernormHardRows : public ::testing::TestWithParam<HardRows> {};

TEST_P(LayernormHardRows, Forward) {
  const auto& c = GetParam();
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  const auto x = offset_normal(element_count(c.shape), 1000.0f, c.label);
  const auto gamma = uniform(cols, -1, 1, c.label + "gamma"), beta = uniform(cols, -1, 1, c.label + "beta");
  std::vector<float> want(x.size()), want_mean(static_cast<std::size_t>(rows)), want_rstd(want_mean.size());
  reference::layernorm_forward(want.data(), want_mean.data(), want_rstd.data(), x.data(), gamma.data(), beta.data(),
                               rows, cols, 1e-5f);
  const auto tol = tolerance::normalization_row(cols, magnitude_over_spread(x, want_rstd, cols));
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    const auto r = ops::layernorm(Tensor<Space>::from_host(c.shape, x), Tensor<Space>::from_host({cols}, gamma),
                                  Tensor<Space>::from_host({cols}, beta), 1e-5f);
    EXPECT_TRUE(all_close(r.out.to_vector(), want, c.shape, tol)) << Space::name() << " out";
    EXPECT_TRUE(all_close(r.mean.to_vector(), want_mean, {rows}, tol)) << Space::name() << " mean";
    EXPECT_TRUE(all_close(r.rstd.to_vector(), want_rstd, {rows}, tol)) << Space::name() << " rstd";
  });
}

INSTANTIATE_TEST_SUITE_P(Hard, LayernormHardRows, ::testing::ValuesIn(hard_rows()),
                         [](const auto& info) { return info.param.label; });

TEST(LayernormErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::layernorm(Tensor<S>({4, 8}), Tensor<S>({7}), Tensor<S>({8}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "layernorm: gamma has shape [7] but the input's last dimension is 8 (input shape [4, 8])");
  }
  EXPECT_THROW(ops::layernorm(Tensor<S>({4, 8}), Tensor<S>({8}), Tensor<S>({1, 8})), Error);
  EXPECT_THROW(ops::layernorm(Tensor<S>(), Tensor<S>({8}), Tensor<S>({8})), Error);
}

}  // namespace
}  // namespace ptk::test
