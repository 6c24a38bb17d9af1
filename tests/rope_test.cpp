// rope parity: ptk::ops::rope and rope_backward (+=) against the oracle, both layouts, with position offsets.
#include "parity.hpp"
#include "ptk/ops/rope.hpp"
#include "ptk/reference/rope.hpp"

namespace ptk::test {
namespace {

struct RopeCase {
  Shape shape;  // [B,T,H,D] or [B,H,T,D]
  bool bhtd;
  std::int64_t pos_offset;
};

std::string name(const RopeCase& c) {
  return shape_name(c.shape) + (c.bhtd ? "_bhtd" : "_bthd") + (c.pos_offset ? "_offset" + std::to_string(c.pos_offset) : "");
}
void PrintTo(const RopeCase& c, std::ostream* os) { *os << name(c); }

const std::vector<RopeCase> kCases = [] {
  std::vector<RopeCase> cases;
  for (std::int64_t t : {1, 3, 17, 127, 513})
    for (std::int64_t d : {2, 6, 64, 130})
      for (bool bhtd : {false, true}) cases.push_back({bhtd ? Shape{2, 3, t, d} : Shape{2, t, 3, d}, bhtd, 0});
  cases.push_back({{1, 17, 1, 64}, false, 1000});
  cases.push_back({{3, 1, 5, 32}, true, 8191});
  cases.push_back({{1, 1, 1, 2}, false, 0});
  return cases;
}();

// E: the element type of X, Y, dY and dX (f32, bf16, f16); the oracle runs on the stored values.
template <class Space, class Tune, class E = float>
void check_rope(const RopeCase& c) {
  auto x = uniform(element_count(c.shape), -1, 1, name(c) + "x");
  auto dy = uniform(element_count(c.shape), -1, 1, name(c) + "dy");
  auto base = uniform(element_count(c.shape), -1, 1, name(c) + "base");
  round_in_place<E>(x);
  round_in_place<E>(dy);
  round_in_place<E>(base);
  const auto B = c.shape[0], D = c.shape[3];
  // The oracle's [O, T, H, D].
  const auto O = c.bhtd ? B * c.shape[1] : B, T = c.bhtd ? c.shape[2] : c.shape[1], H = c.bhtd ? 1 : c.shape[2];
  std::vector<float> want(x.size()), want_dx = base;
  reference::rope_forward(want.data(), x.data(), O, T, H, D, 10000.0, c.pos_offset);
  reference::rope_backward(want_dx.data(), dy.data(), O, T, H, D, 10000.0, c.pos_offset);

  const auto layout = c.bhtd ? ops::RopeLayout::bhtd : ops::RopeLayout::bthd;
  const auto y = ops::rope(Tensor<Space, E>::from_host(c.shape, rounded<E>(x)), c.pos_offset, 10000.0f, layout);
  const auto tol = stored_output<E>(tolerance::rope);
  EXPECT_TRUE(all_close(values_of(y.to_vector()), want, c.shape, tol)) << Space::name() << ' ' << element_name<E>() << " forward";
  const auto dx = Tensor<Space, E>::from_host(c.shape, rounded<E>(base));
  ops::rope_backward(dx, Tensor<Space, E>::from_host(c.shape, rounded<E>(dy)), c.pos_offset, 10000.0f, layout);
  EXPECT_TRUE(all_close(values_of(dx.to_vector()), want_dx, c.shape, tol)) << Space::name() << ' ' << element_name<E>() << " backward";
}

class RopeParity : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeParity, ForwardBackward) {
  for_each_space([&](auto space) { check_rope<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}

TEST_P(RopeParity, ForwardBackward16Bit) {
  for_each_space_16bit([&](auto space, auto e) {
    check_rope<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(GetParam());
  });
}

INSTANTIATE_TEST_SUITE_P(Sweep, RopeParity, ::testing::ValuesIn(kCases), [](const auto& info) { return name(info.param); });

TEST(RopeErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::rope(Tensor<S>({1, 4, 2, 7}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rope: the last dimension D of X must be even, got shape [1, 4, 2, 7]");
  }
  try {
    ops::rope_backward(Tensor<S>({1, 4, 2, 6}), Tensor<S>({1, 4, 2, 8}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rope_backward: dx has shape [1, 4, 2, 6] but dout has shape [1, 4, 2, 8]");
  }
  EXPECT_THROW(ops::rope(Tensor<S>({4, 2, 8})), Error);
  EXPECT_THROW(ops::rope(Tensor<S>({1, 4, 2, 8}), -1), Error);
}

}  // namespace
}  // namespace ptk::test
