// layernorm parity: ptk::ops::layernorm (out, mean, rstd) and layernorm_backward (dX, dgamma, dbeta)
// against the oracle, constant rows, a 65537-wide row and the hard rows included.
#include <cstring>

#include "hard_rows.hpp"
#include "parity.hpp"
#include "ptk/ops/layernorm.hpp"
#include "ptk/reference/layernorm.hpp"
#include "ptk/reference/layernorm_backward.hpp"

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
  cases.push_back({{1, 65537}, 1e-5f, false});
  cases.push_back({{300, 64}, 1e-5f, false});  // many rows per partial row of dgamma / dbeta
  // Outputs of 32 MiB and more go out as non-temporal stores on the host (RowTraits::stream_stores):
  // rows 64-byte aligned (1024 wide), and mostly not (1025 wide: plain stores but every 16th row).
  cases.push_back({{8192, 1024}, 1e-5f, false});
  cases.push_back({{8191, 1025}, 1e-5f, false});
  cases.push_back({{17, 513}, 1e-5f, true});
  cases.push_back({{3, 1}, 1e-3f, true});
  return cases;
}();

// The case's X (constant rows: 1000 + the row's index), rounded to E.
template <class E = float>
std::vector<float> layernorm_input(const LayernormCase& c) {
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  auto x = uniform(element_count(c.shape), -2, 2, name(c));
  if (c.constant_rows)
    for (std::int64_t i = 0; i < rows * cols; ++i) x[static_cast<std::size_t>(i)] = 1000.0f + static_cast<float>(i / cols);
  round_in_place<E>(x);
  return x;
}

// E: the element type of X and Y (f32, bf16, f16); gamma, beta, mean and rstd are fp32.
template <class Space, class Tune, class E = float>
void check_layernorm(const LayernormCase& c) {
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  const auto x = layernorm_input<E>(c);
  const auto gamma = uniform(cols, -1, 1, name(c) + "gamma"), beta = uniform(cols, -1, 1, name(c) + "beta");
  std::vector<float> want(x.size()), want_mean(static_cast<std::size_t>(rows)), want_rstd(want_mean.size());
  reference::layernorm_forward(want.data(), want_mean.data(), want_rstd.data(), x.data(), gamma.data(), beta.data(),
                               rows, cols, c.eps);

  const auto r = ops::layernorm<Space, Tune>(Tensor<Space, E>::from_host(c.shape, rounded<E>(x)),
                                             Tensor<Space>::from_host({cols}, gamma), Tensor<Space>::from_host({cols}, beta), c.eps);
  const auto tol = tolerance::normalization(cols);
  const char* type = element_name<E>();
  EXPECT_TRUE(all_close(values_of(r.out.to_vector()), want, c.shape, stored_output<E>(tol))) << Space::name() << ' ' << type << " out";
  EXPECT_TRUE(all_close(r.mean.to_vector(), want_mean, {rows}, tol)) << Space::name() << ' ' << type << " mean";
  EXPECT_TRUE(all_close(r.rstd.to_vector(), want_rstd, {rows}, tol)) << Space::name() << ' ' << type << " rstd";
}

// The backward from random dX, dgamma, dbeta and dY, for the oracle forward's mean and rstd (the
// kernel and the oracle get the same fp32 statistics), against tolerance::normalization_backward per
// element and tolerance::column_sum per column.
// E: the element type of X, dY and dX (X already rounded to it); the rest is fp32.
template <class Space, class Tune, class E = float>
void check_layernorm_backward(const std::vector<float>& x, const Shape& shape, const std::vector<float>& gamma,
                              const std::vector<float>& mean, const std::vector<float>& rstd, const std::string& seed) {
  const auto cols = shape.back(), rows = element_count(shape) / cols;
  const auto n = static_cast<std::size_t>(rows * cols);
  auto dy = uniform(element_count(shape), -1, 1, seed + "dy");
  auto dx0 = uniform(element_count(shape), -1, 1, seed + "dx");
  round_in_place<E>(dy);
  round_in_place<E>(dx0);
  const auto dgamma0 = uniform(cols, -1, 1, seed + "dgamma"), dbeta0 = uniform(cols, -1, 1, seed + "dbeta");
  auto want_dx = dx0, want_dgamma = dgamma0, want_dbeta = dbeta0;
  reference::layernorm_backward(want_dx.data(), want_dgamma.data(), want_dbeta.data(), dy.data(), x.data(), gamma.data(),
                                mean.data(), rstd.data(), rows, cols);
  std::vector<double> magnitude(n), sum_dgamma(static_cast<std::size_t>(cols)), sum_dbeta(sum_dgamma.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const double m = mean[static_cast<std::size_t>(r)], rs = rstd[static_cast<std::size_t>(r)];
    double sum_g = 0, sum_gx = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto i = static_cast<std::size_t>(r * cols + j);
      const double xh = (x[i] - m) * rs, g = static_cast<double>(dy[i]) * gamma[static_cast<std::size_t>(j)];
      sum_g += std::fabs(g);
      sum_gx += std::fabs(g * xh);
      sum_dgamma[static_cast<std::size_t>(j)] += std::fabs(dy[i] * xh);
      sum_dbeta[static_cast<std::size_t>(j)] += std::fabs(dy[i]);
    }
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto i = static_cast<std::size_t>(r * cols + j);
      const double xh = (x[i] - m) * rs, g = static_cast<double>(dy[i]) * gamma[static_cast<std::size_t>(j)];
      magnitude[i] = rs * (std::fabs(g) + sum_g / cols + std::fabs(xh) * sum_gx / cols);
    }
  }
  const auto dX = Tensor<Space, E>::from_host(shape, rounded<E>(dx0));
  const auto dgamma = Tensor<Space>::from_host({cols}, dgamma0), dbeta = Tensor<Space>::from_host({cols}, dbeta0);
  const Shape stats_shape = {rows};
  ops::layernorm_backward<Space, Tune>(dX, dgamma, dbeta, Tensor<Space, E>::from_host(shape, rounded<E>(dy)),
                                       Tensor<Space, E>::from_host(shape, rounded<E>(x)), Tensor<Space>::from_host({cols}, gamma),
                                       Tensor<Space>::from_host(stats_shape, mean), Tensor<Space>::from_host(stats_shape, rstd));
  EXPECT_TRUE(all_close(values_of(dX.to_vector()), want_dx, shape, [&](std::size_t i) {
    return stored_output<E>(tolerance::normalization_backward(cols, magnitude[i])).allowed(want_dx[i]);
  })) << Space::name() << ' ' << element_name<E>() << " dX";
  EXPECT_TRUE(all_close(dgamma.to_vector(), want_dgamma, {cols}, [&](std::size_t j) {
    return tolerance::column_sum(rows, sum_dgamma[j], 3.0 * tolerance::u).allowed(want_dgamma[j]);
  })) << Space::name() << " dgamma";
  EXPECT_TRUE(all_close(dbeta.to_vector(), want_dbeta, {cols}, [&](std::size_t j) {
    return tolerance::column_sum(rows, sum_dbeta[j], 0.0).allowed(want_dbeta[j]);
  })) << Space::name() << " dbeta";
}

class LayernormParity : public ::testing::TestWithParam<LayernormCase> {};

// The backward in E for the oracle forward's statistics of X rounded to E.
template <class E>
void run_layernorm_backward(const LayernormCase& c) {
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  const auto x = layernorm_input<E>(c);
  const auto gamma = uniform(cols, -1, 1, name(c) + "gamma"), beta = uniform(cols, -1, 1, name(c) + "beta");
  std::vector<float> y(x.size()), mean(static_cast<std::size_t>(rows)), rstd(mean.size());
  reference::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(), rows, cols, c.eps);
  for_each_space([&](auto space) {
    check_layernorm_backward<typename decltype(space)::type, typename decltype(space)::tune, E>(x, c.shape, gamma, mean,
                                                                                               rstd, name(c));
  });
}

TEST_P(LayernormParity, Backward) { run_layernorm_backward<float>(GetParam()); }

// The 16-bit runs skip the two cases of more than 2^20 elements: they are there for f32's streaming stores, which a
// 16-bit output never takes (stream_stores, row_walk.hpp).
bool small_case(const LayernormCase& c) { return element_count(c.shape) <= (1 << 20); }

TEST_P(LayernormParity, Backward16Bit) {
  if (!small_case(GetParam())) GTEST_SKIP() << "a float-path case (streaming stores)";
  run_layernorm_backward<bf16>(GetParam());
  run_layernorm_backward<f16>(GetParam());
}

TEST_P(LayernormParity, Forward) {
  for_each_space([&](auto space) { check_layernorm<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}

TEST_P(LayernormParity, Forward16Bit) {
  if (!small_case(GetParam())) GTEST_SKIP() << "a float-path case (streaming stores)";
  for_each_space_16bit([&](auto space, auto e) {
    check_layernorm<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(GetParam());
  });
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
    using Tune = typename decltype(space)::tune;
    const auto r = ops::layernorm<Space, Tune>(Tensor<Space>::from_host(c.shape, x), Tensor<Space>::from_host({cols}, gamma),
                                  Tensor<Space>::from_host({cols}, beta), 1e-5f);
    EXPECT_TRUE(all_close(r.out.to_vector(), want, c.shape, tol)) << Space::name() << " out";
    EXPECT_TRUE(all_close(r.mean.to_vector(), want_mean, {rows}, tol)) << Space::name() << " mean";
    EXPECT_TRUE(all_close(r.rstd.to_vector(), want_rstd, {rows}, tol)) << Space::name() << " rstd";
  });
}

TEST_P(LayernormHardRows, Backward) {
  const auto& c = GetParam();
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  const auto x = offset_normal(element_count(c.shape), 1000.0f, c.label);
  const auto gamma = uniform(cols, -1, 1, c.label + "gamma"), beta = uniform(cols, -1, 1, c.label + "beta");
  std::vector<float> y(x.size()), mean(static_cast<std::size_t>(rows)), rstd(mean.size());
  reference::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(), rows, cols, 1e-5f);
  for_each_space([&](auto space) {
    check_layernorm_backward<typename decltype(space)::type, typename decltype(space)::tune>(x, c.shape, gamma, mean, rstd, c.label);
  });
}

INSTANTIATE_TEST_SUITE_P(Hard, LayernormHardRows, ::testing::ValuesIn(hard_rows()),
                         [](const auto& info) { return info.param.label; });

// dgamma and dbeta are column sums without atomics (ColumnPartials): bitwise the same run to run, and
// the same on every host space (the cut of the rows depends on the shape alone, not on the threads).
TEST(LayernormBackward, Deterministic) {
  const Shape shape{1000, 257};
  const auto x = uniform(element_count(shape), -2, 2, "det x"), dy = uniform(element_count(shape), -1, 1, "det dy");
  const auto gamma = uniform(257, -1, 1, "det gamma"), beta = uniform(257, -1, 1, "det beta");
  std::vector<std::vector<float>> results;
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    if (!Kokkos::SpaceAccessibility<Space, Kokkos::HostSpace>::accessible) return;
    const auto X = Tensor<Space>::from_host(shape, x), gamma_t = Tensor<Space>::from_host({257}, gamma);
    const auto fwd = ops::layernorm<Space, Tune>(X, gamma_t, Tensor<Space>::from_host({257}, beta));
    for (int run = 0; run < 2; ++run) {
      Tensor<Space> dX(shape), dgamma({257}), dbeta({257});
      ops::layernorm_backward<Space, Tune>(dX, dgamma, dbeta, Tensor<Space>::from_host(shape, dy), X, gamma_t, fwd.mean, fwd.rstd);
      auto all = dX.to_vector();
      for (const auto& t : {dgamma, dbeta}) {
        const auto v = t.to_vector();
        all.insert(all.end(), v.begin(), v.end());
      }
      results.push_back(all);
    }
  });
  for (std::size_t k = 1; k < results.size(); ++k)
    EXPECT_EQ(0, std::memcmp(results[k].data(), results[0].data(), results[0].size() * sizeof(float))) << "result " << k;
}

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
  const Tensor<S> x({4, 8}), v8({8}), stats({4});
  try {
    ops::layernorm_backward(x, Tensor<S>({7}), v8, x, x, v8, stats, stats);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "layernorm_backward: dgamma has shape [7] but the input's last dimension is 8 (input shape [4, 8])");
  }
  try {
    ops::layernorm_backward(x, v8, v8, x, x, v8, Tensor<S>({3}), stats);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "layernorm_backward: mean has shape [3] (3 values) but X of shape [4, 8] has 4 rows");
  }
  EXPECT_THROW(ops::layernorm_backward(Tensor<S>({4, 9}), v8, v8, x, x, v8, stats, stats), Error);
  EXPECT_THROW(ops::layernorm_backward(x, v8, v8, Tensor<S>({8, 4}), x, v8, stats, stats), Error);
  EXPECT_THROW(ops::layernorm_backward(x, v8, Tensor<S>(), x, x, v8, stats, stats), Error);
}

}  // namespace
}  // namespace ptk::test
