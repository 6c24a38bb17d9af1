// gelu and silu parity (forward and backward) against the oracle, over odd sizes and the values where
// they saturate; swiglu against silu then mul.
#include <cmath>
#include <limits>
#include <tuple>

#include "bits.hpp"

#include "parity.hpp"
#include "ptk/kernels/mul.hpp"
#include "ptk/ops/activations.hpp"
#include "ptk/reference/activations_backward.hpp"
#include "ptk/reference/gelu.hpp"
#include "ptk/reference/silu.hpp"

namespace ptk::test {
namespace {

enum class Activation { gelu, silu };

struct ActivationCase {
  Activation op;
  Shape shape;
};

std::string name(const ActivationCase& c) { return (c.op == Activation::gelu ? "gelu_" : "silu_") + shape_name(c.shape); }

const std::vector<ActivationCase> kCases = [] {
  std::vector<ActivationCase> cases;
  for (auto op : {Activation::gelu, Activation::silu}) {
    for (std::int64_t n : {1, 3, 17, 127, 513, 4099}) cases.push_back({op, {n}});
    cases.push_back({op, {3, 17, 127}});
    cases.push_back({op, {65537}});
  }
  return cases;
}();

// Uniform data plus, at the front, the points where the functions saturate or overflow exp.
std::vector<float> make_input(const ActivationCase& c) {
  auto x = uniform(element_count(c.shape), -8, 8, name(c));
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 10.0f, -10.0f, 30.0f, -30.0f, 100.0f, -100.0f,
                           1e4f, -1e4f, 1e20f, -1e20f, inf, -inf};
  for (std::size_t i = 0; i < std::size(special) && i < x.size(); ++i) x[i] = special[i];
  return x;
}

// gtest and ctest show the case by its name, not its bytes.
void PrintTo(const ActivationCase& c, std::ostream* os) { *os << name(c); }

// E: the element type of X and Y (f32, bf16, f16); the oracle runs on X's stored values.
template <class Space, class Tune, class E = float>
void check_activation(const ActivationCase& c) {
  auto x = make_input(c);
  round_in_place<E>(x);
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<float> want(x.size());
  const auto X = Tensor<Space, E>::from_host(c.shape, rounded<E>(x));
  std::vector<float> got;
  // The argument of exp in each kernel, which sets how far an input rounding can move the result.
  std::function<double(double)> exp_argument;
  if (c.op == Activation::gelu) {
    reference::gelu_forward(want.data(), x.data(), n);
    got = values_of(ops::gelu<Space, Tune>(X).to_vector());
    exp_argument = [](double v) { return std::fmin(1e30, 2 * 0.7978845608 * std::fabs(v + 0.044715 * v * v * v)); };
  } else {
    reference::silu_forward(want.data(), x.data(), n);
    got = values_of(ops::silu<Space, Tune>(X).to_vector());
    exp_argument = [](double v) { return std::fmin(1e30, std::fabs(v)); };
  }
  EXPECT_TRUE(all_close(got, want, c.shape, [&](std::size_t i) {
    return stored_output<E>(tolerance::activation(exp_argument(x[i]))).allowed(want[i]);
  })) << Space::name() << ' ' << element_name<E>();
}

class ActivationParity : public ::testing::TestWithParam<ActivationCase> {};

TEST_P(ActivationParity, Forward) {
  for_each_space([&](auto space) { check_activation<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}

TEST_P(ActivationParity, Forward16Bit) {
  for_each_space_16bit([&](auto space, auto e) {
    check_activation<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(GetParam());
  });
}

// dX += dY · f'(X) from random dX (0 on the special values at the front, so that tiny and signed-zero
// derivatives show) and random dY, against tolerance::activation_backward, whose terms the test
// forms in double from the input: s = σ(−a), t = x·a'·s(1 − s), a = the kernel's exp argument.
// E: the element type of X, dY and dX, as the forward's.
template <class Space, class Tune, class E = float>
void check_activation_backward(const ActivationCase& c) {
  auto x = make_input(c);
  const auto n = static_cast<std::int64_t>(x.size());
  auto dy = uniform(n, -1, 1, name(c) + "dy");
  auto dx0 = uniform(n, -1, 1, name(c) + "dx");
  for (std::size_t i = 0; i < 16 && i < dx0.size(); ++i) dx0[i] = 0.0f;
  round_in_place<E>(x);
  round_in_place<E>(dy);
  round_in_place<E>(dx0);
  auto want = dx0;
  const bool gelu = c.op == Activation::gelu;
  if (gelu) reference::gelu_backward(want.data(), x.data(), dy.data(), n);
  else reference::silu_backward(want.data(), x.data(), dy.data(), n);
  const auto dX = Tensor<Space, E>::from_host(c.shape, rounded<E>(dx0));
  const auto X = Tensor<Space, E>::from_host(c.shape, rounded<E>(x)), dY = Tensor<Space, E>::from_host(c.shape, rounded<E>(dy));
  if (gelu) ops::gelu_backward<Space, Tune>(dX, X, dY);
  else ops::silu_backward<Space, Tune>(dX, X, dY);
  const auto allowed_for = [&](const std::vector<float>& expected) { return [&](std::size_t i) {
    const double v = x[i];
    const double k = 2 * 0.7978845608028654;
    const double a = gelu ? -k * (v + 0.044715 * v * v * v) : -v;
    const double da = gelu ? k * (1 + 3 * 0.044715 * v * v) : 1.0;
    const double e = std::exp(-std::fabs(a)), d = 1 / (1 + e);  // e^-|a|, 1 / (1 + e^-|a|)
    const double s = a <= 0 ? d : e * d, s1s = e * d * d;  // σ(−a), σ(−a)(1 − σ(−a))
    const double t = std::isfinite(v) ? v * da * s1s : 0.0;
    const double lost = std::fabs(a) > -kernels::fast_exp_nonpositive_floor ? std::fabs(dy[i]) * (std::fabs(t) + e * d) : 0.0;
    const double arg_error = gelu ? 6 * tolerance::u * std::fmin(1e30, std::fabs(a)) : 0.0;
    return stored_output<E>(tolerance::activation_backward(std::fabs(dy[i]), s1s, s, std::fabs(t), arg_error, lost))
        .allowed(expected[i]);
  }; };
  EXPECT_TRUE(all_close(values_of(dX.to_vector()), want, c.shape, allowed_for(want)))
      << Space::name() << ' ' << element_name<E>();
  if (!gelu) return;
  // Written, not added (an autograd gradient's first writer): dX holds NaN and must not be read.
  std::vector<float> written(x.size(), 0.0f);
  reference::gelu_backward(written.data(), x.data(), dy.data(), n);
  const auto dW = Tensor<Space, E>::from_host(c.shape, rounded<E>(std::vector<float>(x.size(), NAN)));
  ops::gelu_backward<Space, Tune>(dW, X, dY, false);
  EXPECT_TRUE(all_close(values_of(dW.to_vector()), written, c.shape, allowed_for(written)))
      << Space::name() << ' ' << element_name<E>() << " (written)";
}

TEST_P(ActivationParity, Backward) {
  for_each_space([&](auto space) { check_activation_backward<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}

TEST_P(ActivationParity, Backward16Bit) {
  for_each_space_16bit([&](auto space, auto e) {
    check_activation_backward<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(GetParam());
  });
}

INSTANTIATE_TEST_SUITE_P(Sweep, ActivationParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

// swiglu (silu(gate) · up in one pass, and its backward) against silu then mul, whose parity the sweep above and
// the autograd's finite differences check: bit for bit, including the saturating and non-finite gates of
// make_input, a NaN, and accumulation into dgate and dup.
TEST(Swiglu, EqualsSiluThenMulBitForBit) {
  for (std::int64_t n : {1, 3, 17, 127, 513, 4099})
    for_each_space([&](auto space) {
      using Space = typename decltype(space)::type;
      using Tune = typename decltype(space)::tune;
      const ActivationCase c{Activation::silu, {n}};
      auto g = make_input(c);
      if (n > 17) g[16] = std::numeric_limits<float>::quiet_NaN();
      const auto u = uniform(n, -3, 3, name(c) + "up"), dy = uniform(n, -1, 1, name(c) + "dy");
      const auto base_g = uniform(n, -1, 1, name(c) + "dg"), base_u = uniform(n, -1, 1, name(c) + "du");
      const auto G = Tensor<Space>::from_host({n}, g), U = Tensor<Space>::from_host({n}, u);
      const auto dY = Tensor<Space>::from_host({n}, dy);
      const auto s = ops::silu<Space, Tune>(G);
      auto want_y = Tensor<Space>({n});
      kernels::mul_forward<Space>(want_y.flat(), s.flat(), U.flat());
      const auto want_dg = Tensor<Space>::from_host({n}, base_g), want_du = Tensor<Space>::from_host({n}, base_u);
      const auto ds = Tensor<Space>({n});  // silu's output gradient, from zero as the autograd's
      kernels::mul_backward<Space>(ds.flat(), want_du.flat(), dY.flat(), s.flat(), U.flat());
      ops::silu_backward<Space, Tune>(want_dg, G, ds);
      const auto dg = Tensor<Space>::from_host({n}, base_g), du = Tensor<Space>::from_host({n}, base_u);
      ops::swiglu_backward<Space, Tune>(dg, du, G, U, dY);
      const auto du_only = Tensor<Space>::from_host({n}, base_u);
      ops::swiglu_backward<Space, Tune>(Tensor<Space>(), du_only, G, U, dY);
      for (const auto& [got, want, what] :
           {std::tuple{ops::swiglu<Space, Tune>(G, U), want_y, "y"}, std::tuple{dg, want_dg, "dgate"},
            std::tuple{du, want_du, "dup"}, std::tuple{du_only, want_du, "dup alone"}}) {
        const auto a = got.to_vector(), b = want.to_vector();
        for (std::size_t i = 0; i < a.size(); ++i)
          ASSERT_EQ(to_bits(a[i]), to_bits(b[i])) << Space::name() << " n " << n << " " << what << "[" << i << "]: "
                                                  << a[i] << " vs " << b[i] << " (gate " << g[i] << ")";
      }
    });
  using S = Kokkos::DefaultExecutionSpace;
  EXPECT_THROW(ops::swiglu(Tensor<S>({3, 4}), Tensor<S>({4, 3})), Error);
  EXPECT_THROW(ops::swiglu_backward(Tensor<S>({3}), Tensor<S>(), Tensor<S>({4}), Tensor<S>({4}), Tensor<S>({4})), Error);
}

TEST(ActivationErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::gelu_backward(Tensor<S>({3, 4}), Tensor<S>({3, 4}), Tensor<S>({12}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "gelu_backward: dY has shape [12] but X has shape [3, 4]");
  }
  try {
    ops::silu_backward(Tensor<S>({4, 3}), Tensor<S>({3, 4}), Tensor<S>({3, 4}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "silu_backward: dX has shape [4, 3] but X has shape [3, 4]");
  }
}

}  // namespace
}  // namespace ptk::test
