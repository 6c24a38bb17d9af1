// softmax parity: ptk::ops::softmax and softmax_backward against the oracle, including masks, ±1e4
// inputs, -inf and NaN rows, a 65537-wide row and the hard rows.
#include <algorithm>
#include <limits>

#include "hard_rows.hpp"
#include "parity.hpp"
#include "ptk/ops/softmax.hpp"
#include "ptk/reference/softmax.hpp"
#include "ptk/reference/softmax_backward.hpp"

namespace ptk::test {
namespace {

enum class Fill { uniform, large, with_inf_and_nan };

struct SoftmaxCase {
  Shape shape;
  float scale;
  bool causal;
  Fill fill;
};

std::string name(const SoftmaxCase& c) {
  const char* fills[] = {"uniform", "pm1e4", "inf_nan"};
  const int milli = static_cast<int>(c.scale * 1000);
  return shape_name(c.shape) + "_scale" + (milli < 0 ? "neg" : "") + std::to_string(std::abs(milli)) + "m" +
         (c.causal ? "_causal_" : "_") + fills[static_cast<int>(c.fill)];
}

// gtest and ctest show the case by its name, not its bytes.
void PrintTo(const SoftmaxCase& c, std::ostream* os) { *os << name(c); }

const std::vector<SoftmaxCase> kCases = [] {
  std::vector<SoftmaxCase> cases;
  for (std::int64_t rows : {1, 3, 17, 127})
    for (std::int64_t cols : {1, 3, 17, 127, 513}) cases.push_back({{rows, cols}, 1.0f, false, Fill::uniform});
  cases.push_back({{2, 3, 1000}, 0.125f, false, Fill::uniform});
  cases.push_back({{17, 4099}, -0.5f, false, Fill::uniform});
  cases.push_back({{1, 65537}, 1.0f, false, Fill::uniform});
  for (std::int64_t t : {1, 3, 17, 127}) cases.push_back({{2, t, t}, 0.125f, true, Fill::uniform});
  cases.push_back({{2, 3, 65, 65}, 1.0f, true, Fill::uniform});
  cases.push_back({{17, 513}, 1.0f, false, Fill::large});
  cases.push_back({{3, 127, 127}, 1.0f, true, Fill::large});
  cases.push_back({{9, 33}, 1.0f, false, Fill::with_inf_and_nan});
  cases.push_back({{2, 9, 9}, 0.5f, true, Fill::with_inf_and_nan});
  // Outputs of 32 MiB and more keep their exps in team scratch and go out as non-temporal stores on
  // the host (RowTraits::stream_stores): 64-byte aligned rows (1024, 2048 wide) and mostly not (1025),
  // a negative scale, causal rows and the inf / NaN rows.
  cases.push_back({{8192, 1024}, 1.0f, false, Fill::uniform});
  cases.push_back({{8191, 1025}, -0.5f, false, Fill::uniform});
  cases.push_back({{2, 2048, 2048}, 0.125f, true, Fill::uniform});
  cases.push_back({{4096, 2048}, 1.0f, false, Fill::with_inf_and_nan});
  // A 32 MiB row is longer than Kokkos' level-1 scratch limit: its exps stay in out.
  cases.push_back({{1, 1 << 23}, 1.0f, false, Fill::uniform});
  return cases;
}();

std::vector<float> make_input(const SoftmaxCase& c) {
  const auto n = element_count(c.shape);
  if (c.fill == Fill::large) return uniform(n, -1e4f, 1e4f, name(c));
  auto x = uniform(n, -4, 4, name(c));
  if (c.fill == Fill::with_inf_and_nan) {
    const auto cols = c.shape.back();
    const float inf = std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < cols; ++j) x[static_cast<std::size_t>(j)] = -inf;  // row 0: all -inf
    x[static_cast<std::size_t>(cols + cols / 2)] = std::numeric_limits<float>::quiet_NaN();  // row 1: one NaN
    x[static_cast<std::size_t>(2 * cols)] = -inf;  // row 2: one -inf
    x[static_cast<std::size_t>(4 * cols + 1)] = -inf;  // row 4: one -inf beside finite values
  }
  return x;
}

// E: the element type of X and Y (f32, bf16, f16); the oracle runs on X's stored values.
template <class Space, class Tune, class E = float>
void check_softmax(const SoftmaxCase& c) {
  auto x = make_input(c);
  round_in_place<E>(x);
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  std::vector<float> want(x.size());
  reference::softmax_forward(want.data(), x.data(), rows, cols, c.scale, c.causal);
  double max_abs = 0;
  for (float v : x)
    if (std::isfinite(v)) max_abs = std::max(max_abs, std::fabs(static_cast<double>(c.scale) * v));

  const auto Y = ops::softmax<Space, Tune>(Tensor<Space, E>::from_host(c.shape, rounded<E>(x)), c.scale, c.causal);
  EXPECT_TRUE(all_close(values_of(Y.to_vector()), want, c.shape, stored_output<E>(tolerance::softmax(cols, max_abs))))
      << Space::name() << ' ' << element_name<E>();
}

// The 16-bit runs skip the cases of more than 2^20 elements: those are the float path's streaming stores and
// scratch limits, which a 16-bit output never takes (stream_stores, row_walk.hpp).
bool small_case(const SoftmaxCase& c) { return element_count(c.shape) <= (1 << 20); }

class SoftmaxParity : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxParity, Forward) {
  for_each_space([&](auto space) { check_softmax<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}

TEST_P(SoftmaxParity, Forward16Bit) {
  if (!small_case(GetParam())) GTEST_SKIP() << "a float-path case (streaming stores)";
  for_each_space_16bit([&](auto space, auto e) {
    check_softmax<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(GetParam());
  });
}

INSTANTIATE_TEST_SUITE_P(Sweep, SoftmaxParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

// dX (starting from random values) += the backward of Y = softmax(scale X) for a random dY, against the
// oracle fed the oracle's Y; tolerance::softmax_backward per element from the row's dot product.
// E: the element type of Y, dY and dX; the oracle runs on their stored values.
template <class Space, class Tune, class E = float>
void check_softmax_backward(std::vector<float> y, const Shape& shape, float scale, const std::string& seed) {
  const auto cols = shape.back(), rows = element_count(shape) / cols;
  auto dy = uniform(element_count(shape), -1, 1, seed + "dy");
  auto dx0 = uniform(element_count(shape), -1, 1, seed + "dx");
  round_in_place<E>(y);
  round_in_place<E>(dy);
  round_in_place<E>(dx0);
  auto want = dx0;
  reference::softmax_backward(want.data(), y.data(), dy.data(), rows, cols, scale);
  std::vector<double> dot(static_cast<std::size_t>(rows)), sum_abs(dot.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto i = static_cast<std::size_t>(r * cols + j);
      dot[static_cast<std::size_t>(r)] += static_cast<double>(y[i]) * dy[i];
      sum_abs[static_cast<std::size_t>(r)] += std::fabs(static_cast<double>(y[i]) * dy[i]);
    }
  const auto dX = Tensor<Space, E>::from_host(shape, rounded<E>(dx0));
  ops::softmax_backward<Space, Tune>(dX, Tensor<Space, E>::from_host(shape, rounded<E>(y)),
                                     Tensor<Space, E>::from_host(shape, rounded<E>(dy)), scale);
  EXPECT_TRUE(all_close(values_of(dX.to_vector()), want, shape, [&](std::size_t i) {
    const auto r = i / static_cast<std::size_t>(cols);
    return stored_output<E>(tolerance::softmax_backward(cols, std::fabs(static_cast<double>(scale) * y[i]),
                                                        std::fabs(dy[i]), std::fabs(dot[r]), sum_abs[r]))
        .allowed(want[i]);
  })) << Space::name() << ' ' << element_name<E>() << " dX";
}

TEST_P(SoftmaxParity, Backward) {
  const auto& c = GetParam();
  const auto x = make_input(c);
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  std::vector<float> y(x.size());
  reference::softmax_forward(y.data(), x.data(), rows, cols, c.scale, c.causal);
  for_each_space([&](auto space) { check_softmax_backward<typename decltype(space)::type, typename decltype(space)::tune>(y, c.shape, c.scale, name(c)); });
}

TEST_P(SoftmaxParity, Backward16Bit) {
  const auto& c = GetParam();
  if (!small_case(c)) GTEST_SKIP() << "a float-path case (streaming stores)";
  const auto x = make_input(c);
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  std::vector<float> y(x.size());
  reference::softmax_forward(y.data(), x.data(), rows, cols, c.scale, c.causal);
  for_each_space_16bit([&](auto space, auto e) {
    check_softmax_backward<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(y, c.shape, c.scale, name(c));
  });
}

// 1000 + N(0,1) rows, 768 and 2^20 wide, against tolerance::softmax_row.
class SoftmaxHardRows : public ::testing::TestWithParam<HardRows> {};

TEST_P(SoftmaxHardRows, Forward) {
  const auto& c = GetParam();
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  const auto x = offset_normal(element_count(c.shape), 1000.0f, c.label);
  std::vector<float> want(x.size());
  reference::softmax_forward(want.data(), x.data(), rows, cols, 1.0f, false);
  double spread = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto row = x.begin() + r * cols;
    spread = std::fmax(spread, static_cast<double>(*std::max_element(row, row + cols)) - *std::min_element(row, row + cols));
  }
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    const auto Y = ops::softmax<Space, Tune>(Tensor<Space>::from_host(c.shape, x), 1.0f, false);
    EXPECT_TRUE(all_close(Y.to_vector(), want, c.shape, tolerance::softmax_row(cols, spread))) << Space::name();
  });
}

TEST_P(SoftmaxHardRows, Backward) {
  const auto& c = GetParam();
  const auto cols = c.shape.back(), rows = element_count(c.shape) / cols;
  const auto x = offset_normal(element_count(c.shape), 1000.0f, c.label);
  std::vector<float> y(x.size());
  reference::softmax_forward(y.data(), x.data(), rows, cols, 1.0f, false);
  for_each_space([&](auto space) { check_softmax_backward<typename decltype(space)::type, typename decltype(space)::tune>(y, c.shape, 1.0f, c.label); });
}

INSTANTIATE_TEST_SUITE_P(Hard, SoftmaxHardRows, ::testing::ValuesIn(hard_rows()),
                         [](const auto& info) { return info.param.label; });

// The oracle agrees on these by construction; here they are stated outright.
TEST(SoftmaxSemantics, MaskedRowsAreZeroAndNanStaysInItsRow) {
  using S = Kokkos::DefaultExecutionSpace;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const auto y = ops::softmax(Tensor<S>::from_host({3, 2}, {-inf, -inf, nan, 0.0f, 0.0f, 0.0f})).to_vector();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_TRUE(std::isnan(y[2]) && std::isnan(y[3]));
  EXPECT_EQ(y[4], 0.5f);
  EXPECT_EQ(y[5], 0.5f);
}

TEST(SoftmaxErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::softmax(Tensor<S>({2, 3, 4}), 1.0f, true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "softmax: causal needs the last two dimensions square, got shape [2, 3, 4]");
  }
  try {
    ops::softmax(Tensor<S>({5}), 1.0f, true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "softmax: X must have rank at least 2, got shape [5]");
  }
  EXPECT_THROW(ops::softmax(Tensor<S>()), Error);
  try {
    ops::softmax_backward(Tensor<S>({2, 4}), Tensor<S>({2, 4}), Tensor<S>({2, 5}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "softmax_backward: dY has shape [2, 5] but Y has shape [2, 4]");
  }
  EXPECT_THROW(ops::softmax_backward(Tensor<S>({4, 2}), Tensor<S>({2, 4}), Tensor<S>({2, 4})), Error);
  EXPECT_THROW(ops::softmax_backward(Tensor<S>(), Tensor<S>({2, 4}), Tensor<S>({2, 4})), Error);
}

}  // namespace
}  // namespace ptk::test
