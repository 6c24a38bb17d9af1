// gelu and silu parity against the oracle, over odd sizes and the values where they saturate.
#include <limits>

#include "parity.hpp"
#include "ptk/ops/activations.hpp"
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

template <class Space>
void check_activation(const ActivationCase& c) {
  const auto x = make_input(c);
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<float> want(x.size());
  const auto X = Tensor<Space>::from_host(c.shape, x);
  std::vector<float> got;
  // The argument of exp in each kernel, which sets how far an input rounding can move the result.
  std::function<double(double)> exp_argument;
  if (c.op == Activation::gelu) {
    reference::gelu_forward(want.data(), x.data(), n);
    got = ops::gelu(X).to_vector();
    exp_argument = [](double v) { return std::fmin(1e30, 2 * 0.7978845608 * std::fabs(v + 0.044715 * v * v * v)); };
  } else {
    reference::silu_forward(want.data(), x.data(), n);
    got = ops::silu(X).to_vector();
    exp_argument = [](double v) { return std::fmin(1e30, std::fabs(v)); };
  }
  EXPECT_TRUE(all_close(got, want, c.shape, [&](std::size_t i) {
    return tolerance::activation(exp_argument(x[i])).allowed(want[i]);
  })) << Space::name();
}

class ActivationParity : public ::testing::TestWithParam<ActivationCase> {};

TEST_P(ActivationParity, Forward) {
  for_each_space([&](auto space) { check_activation<typename decltype(space)::type>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Sweep, ActivationParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

}  // namespace
}  // namespace ptk::test
