// rmsnorm parity: ptk::ops::rmsnorm (out, rstd) and rmsnorm_backward (dX, dweight) against the oracle.
#include <cstring>

#include "hard_rows.hpp"
#include "parity.hpp"
#include "ptk/ops/rmsnorm.hpp"
#include "ptk/reference/rmsnorm.hpp"
#include "ptk/reference/rmsnorm_backward.hpp"

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
  cases.push_back({{1, 65537}, 1e-5f, false});
  cases.push_back({{300, 64}, 1e-5f, false});  // many rows per partial row of dweight
  // Outputs of 32 MiB and more go out as non-temporal stores on the host (RowTraits::stream_stores):
  // rows 64-byte aligned (1024 wide), and mostly not (1025 wide: plain stores but every 16th row).
  cases.push_back({{8192, 1024}, 1e-5f, false});
  cases.push_back({{8191, 1025}, 1e-5f, false});
  cases.push_back({{17, 513}, 1e-5f, true});
  return cases;
}();

// The case's X, rounded to E.
template <class E = float>
std::vector<float> rmsnorm_input(const RmsnormCase& c) {
  auto x = uniform(element_count(c.shape), -2, 2, name(c));
  if (c.zero_rows) std::fill(x.begin(), x.end(), 0.0f);
  round_in_place<E>(x);
  return x;
}

// E: the element type of X and Y (f32, bf16, f16); weight and rstd are fp32.
template <class Space, class Tune, class E = float>
void check_rmsnorm(const RmsnormCase& c) {
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  const auto x = rmsnorm_input<E>(c);
  const auto weight = uniform(cols, -1, 1, name(c) + "weight");
  std::vector<float> want(x.size()), want_rstd(static_cast<std::size_t>(rows));
  reference::rmsnorm_forward(want.data(), want_rstd.data(), x.data(), weight.data(), rows, cols, c.eps);

  const auto r = ops::rmsnorm<Space, Tune>(Tensor<Space, E>::from_host(c.shape, rounded<E>(x)),
                                           Tensor<Space>::from_host({cols}, weight), c.eps);
  const auto tol = tolerance::normalization(cols);
  const char* type = element_name<E>();
  EXPECT_TRUE(all_close(values_of(r.out.to_vector()), want, c.shape, stored_output<E>(tol))) << Space::name() << ' ' << type << " out";
  EXPECT_TRUE(all_close(r.rstd.to_vector(), want_rstd, {rows}, tol)) << Space::name() << ' ' << type << " rstd";
}

// gtest and ctest show the case by its name, not its bytes.
void PrintTo(const RmsnormCase& c, std::ostream* os) { *os << name(c); }

// The backward from random dX, dweight and dY, for the oracle forward's rstd, against
// tolerance::normalization_backward per element (x̂ = x rstd, no mean(g) term) and tolerance::column_sum.
// E: the element type of X, dY and dX (X already rounded to it); the rest is fp32.
template <class Space, class Tune, class E = float>
void check_rmsnorm_backward(const std::vector<float>& x, const Shape& shape, const std::vector<float>& weight,
                            const std::vector<float>& rstd, const std::string& seed) {
  const auto cols = shape.back(), rows = element_count(shape) / cols;
  const auto n = static_cast<std::size_t>(rows * cols);
  auto dy = uniform(element_count(shape), -1, 1, seed + "dy");
  auto dx0 = uniform(element_count(shape), -1, 1, seed + "dx");
  round_in_place<E>(dy);
  round_in_place<E>(dx0);
  const auto dweight0 = uniform(cols, -1, 1, seed + "dweight");
  auto want_dx = dx0, want_dweight = dweight0;
  reference::rmsnorm_backward(want_dx.data(), want_dweight.data(), dy.data(), x.data(), weight.data(), rstd.data(), rows,
                              cols);
  std::vector<double> magnitude(n), sum_dweight(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const double rs = rstd[static_cast<std::size_t>(r)];
    double sum_gx = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto i = static_cast<std::size_t>(r * cols + j);
      const double xh = x[i] * rs, g = static_cast<double>(dy[i]) * weight[static_cast<std::size_t>(j)];
      sum_gx += std::fabs(g * xh);
      sum_dweight[static_cast<std::size_t>(j)] += std::fabs(dy[i] * xh);
    }
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto i = static_cast<std::size_t>(r * cols + j);
      const double xh = x[i] * rs, g = static_cast<double>(dy[i]) * weight[static_cast<std::size_t>(j)];
      magnitude[i] = rs * (std::fabs(g) + std::fabs(xh) * sum_gx / cols);
    }
  }
  const auto dX = Tensor<Space, E>::from_host(shape, rounded<E>(dx0));
  const auto dweight = Tensor<Space>::from_host({cols}, dweight0);
  ops::rmsnorm_backward<Space, Tune>(dX, dweight, Tensor<Space, E>::from_host(shape, rounded<E>(dy)),
                                     Tensor<Space, E>::from_host(shape, rounded<E>(x)), Tensor<Space>::from_host({cols}, weight),
                                     Tensor<Space>::from_host({rows}, rstd));
  EXPECT_TRUE(all_close(values_of(dX.to_vector()), want_dx, shape, [&](std::size_t i) {
    return stored_output<E>(tolerance::normalization_backward(cols, magnitude[i])).allowed(want_dx[i]);
  })) << Space::name() << ' ' << element_name<E>() << " dX";
  EXPECT_TRUE(all_close(dweight.to_vector(), want_dweight, {cols}, [&](std::size_t j) {
    return tolerance::column_sum(rows, sum_dweight[j], 2.0 * tolerance::u).allowed(want_dweight[j]);
  })) << Space::name() << " dweight";
}

class RmsnormParity : public ::testing::TestWithParam<RmsnormCase> {};

// The backward in E for the oracle forward's rstd of X rounded to E.
template <class E>
void run_rmsnorm_backward(const RmsnormCase& c) {
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  const auto x = rmsnorm_input<E>(c);
  const auto weight = uniform(cols, -1, 1, name(c) + "weight");
  std::vector<float> y(x.size()), rstd(static_cast<std::size_t>(rows));
  reference::rmsnorm_forward(y.data(), rstd.data(), x.data(), weight.data(), rows, cols, c.eps);
  for_each_space([&](auto space) {
    check_rmsnorm_backward<typename decltype(space)::type, typename decltype(space)::tune, E>(x, c.shape, weight, rstd, name(c));
  });
}

TEST_P(RmsnormParity, Backward) { run_rmsnorm_backward<float>(GetParam()); }

// The 16-bit runs skip the two cases of more than 2^20 elements: they are there for f32's streaming stores, which a
// 16-bit output never takes (stream_stores, row_walk.hpp).
bool small_case(const RmsnormCase& c) { return element_count(c.shape) <= (1 << 20); }

TEST_P(RmsnormParity, Backward16Bit) {
  if (!small_case(GetParam())) GTEST_SKIP() << "a float-path case (streaming stores)";
  run_rmsnorm_backward<bf16>(GetParam());
  run_rmsnorm_backward<f16>(GetParam());
}

TEST_P(RmsnormParity, Forward) {
  for_each_space([&](auto space) { check_rmsnorm<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}

TEST_P(RmsnormParity, Forward16Bit) {
  if (!small_case(GetParam())) GTEST_SKIP() << "a float-path case (streaming stores)";
  for_each_space_16bit([&](auto space, auto e) {
    check_rmsnorm<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(GetParam());
  });
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
    using Tune = typename decltype(space)::tune;
    const auto r = ops::rmsnorm<Space, Tune>(Tensor<Space>::from_host(c.shape, x), Tensor<Space>::from_host({cols}, weight), 1e-5f);
    EXPECT_TRUE(all_close(r.out.to_vector(), want, c.shape, tol)) << Space::name() << " out";
    EXPECT_TRUE(all_close(r.rstd.to_vector(), want_rstd, {rows}, tol)) << Space::name() << " rstd";
  });
}

TEST_P(RmsnormHardRows, Backward) {
  const auto& c = GetParam();
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  const auto x = offset_normal(element_count(c.shape), 1000.0f, c.label);
  const auto weight = uniform(cols, -1, 1, c.label + "weight");
  std::vector<float> y(x.size()), rstd(static_cast<std::size_t>(rows));
  reference::rmsnorm_forward(y.data(), rstd.data(), x.data(), weight.data(), rows, cols, 1e-5f);
  for_each_space([&](auto space) { check_rmsnorm_backward<typename decltype(space)::type, typename decltype(space)::tune>(x, c.shape, weight, rstd, c.label); });
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
  const Tensor<S> x({4, 8}), v8({8}), stats({4});
  try {
    ops::rmsnorm_backward(x, v8, x, x, v8, Tensor<S>({2, 3}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rmsnorm_backward: rstd has shape [2, 3] (6 values) but X of shape [4, 8] has 4 rows");
  }
  try {
    ops::rmsnorm_backward(x, v8, Tensor<S>({4, 7}), x, v8, stats);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rmsnorm_backward: dY has shape [4, 7] but X has shape [4, 8]");
  }
  EXPECT_THROW(ops::rmsnorm_backward(x, Tensor<S>({9}), x, x, v8, stats), Error);
}

// dweight without atomics: bitwise the same run to run and on every host space (see LayernormBackward).
TEST(RmsnormBackward, Deterministic) {
  const Shape shape{1000, 257};
  const auto x = uniform(element_count(shape), -2, 2, "det x"), dy = uniform(element_count(shape), -1, 1, "det dy");
  const auto weight = uniform(257, -1, 1, "det weight");
  std::vector<std::vector<float>> results;
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    if (!Kokkos::SpaceAccessibility<Space, Kokkos::HostSpace>::accessible) return;
    const auto X = Tensor<Space>::from_host(shape, x), w = Tensor<Space>::from_host({257}, weight);
    const auto fwd = ops::rmsnorm<Space, Tune>(X, w);
    for (int run = 0; run < 2; ++run) {
      Tensor<Space> dX(shape), dweight({257});
      ops::rmsnorm_backward<Space, Tune>(dX, dweight, Tensor<Space>::from_host(shape, dy), X, w, fwd.rstd);
      auto all = dX.to_vector();
      const auto v = dweight.to_vector();
      all.insert(all.end(), v.begin(), v.end());
      results.push_back(all);
    }
  });
  for (std::size_t k = 1; k < results.size(); ++k)
    EXPECT_EQ(0, std::memcmp(results[k].data(), results[0].data(), results[0].size() * sizeof(float))) << "result " << k;
}

}  // namespace
}  // namespace ptk::test
