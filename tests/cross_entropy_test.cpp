// cross-entropy parity: ptk::ops::cross_entropy (mean loss, per-row losses, lse) and cross_entropy_backward
// (+=, ignore_index) against the oracle.
#include "index_data.hpp"
#include "parity.hpp"
#include "ptk/ops/cross_entropy.hpp"
#include "ptk/reference/cross_entropy.hpp"

namespace ptk::test {
namespace {

struct CrossEntropyCase {
  std::int64_t N, V;
  int ignored_every;  // every k-th row's target is ignore_index (0: none; 1: all)
  float logit_range;
};

std::string name(const CrossEntropyCase& c) {
  return "N" + std::to_string(c.N) + "_V" + std::to_string(c.V) +
         (c.ignored_every ? "_ignore" + std::to_string(c.ignored_every) : "") +
         (c.logit_range == 4.0f ? "" : "_range" + std::to_string(static_cast<int>(c.logit_range)));
}
void PrintTo(const CrossEntropyCase& c, std::ostream* os) { *os << name(c); }

const std::vector<CrossEntropyCase> kCases = [] {
  std::vector<CrossEntropyCase> cases;
  for (std::int64_t n : {1, 3, 17, 127, 513})
    for (std::int64_t v : {1, 3, 17, 127, 513, 4099}) cases.push_back({n, v, 0, 4.0f});
  cases.push_back({127, 65, 3, 4.0f});
  cases.push_back({17, 513, 1, 4.0f});  // every row ignored: NaN loss, no gradient
  cases.push_back({64, 257, 5, 40.0f});
  return cases;
}();

constexpr int kIgnore = -100;

// E: the element type of logits and dlogits (f32, bf16, f16); the losses and lse are fp32 whatever E is.
template <class Space, class Tune, class E = float>
void check_cross_entropy(const CrossEntropyCase& c) {
  auto targets = random_ids(c.N, static_cast<int>(c.V), name(c) + "targets");
  if (c.ignored_every)
    for (std::size_t i = 0; i < targets.size(); i += static_cast<std::size_t>(c.ignored_every)) targets[i] = kIgnore;
  auto logits = uniform(c.N * c.V, -c.logit_range, c.logit_range, name(c) + "logits");
  auto base = uniform(c.N * c.V, -0.01f, 0.01f, name(c) + "base");
  round_in_place<E>(logits);
  round_in_place<E>(base);
  const std::string where = std::string(Space::name()) + ' ' + element_name<E>();
  const float dloss = 1.7f;

  float want_loss = 0;
  std::vector<float> want_losses(static_cast<std::size_t>(c.N)), want_lse(want_losses.size()), want_d = base;
  const auto counted = reference::cross_entropy_forward(&want_loss, want_losses.data(), want_lse.data(), logits.data(),
                                                        targets.data(), c.N, c.V, kIgnore);
  reference::cross_entropy_backward(want_d.data(), dloss, logits.data(), targets.data(), c.N, c.V, kIgnore);

  const auto t = index_view<Space>(targets);
  const auto x = Tensor<Space, E>::from_host({c.N, c.V}, rounded<E>(logits));
  const auto r = ops::cross_entropy<Space>(x, t, kIgnore);
  const auto tol = tolerance::cross_entropy(c.V, c.logit_range);
  const float loss = r.loss_value();
  EXPECT_EQ(r.counted_value(), counted) << where;
  if (counted == 0) {
    EXPECT_TRUE(std::isnan(loss)) << where << " loss " << loss;
  } else {
    EXPECT_NEAR(loss, want_loss, tol.allowed(want_loss) + tolerance::reduction(c.N) * std::fabs(want_loss))
        << where << " loss";
  }
  EXPECT_TRUE(all_close(r.losses.to_vector(), want_losses, {c.N}, tol)) << where << " losses";
  EXPECT_TRUE(all_close(r.lse.to_vector(), want_lse, {c.N}, tol)) << where << " lse";

  const auto d = Tensor<Space, E>::from_host({c.N, c.V}, rounded<E>(base));
  ops::cross_entropy_backward<Space>(d, dloss, x, r.lse, t, r.counted, kIgnore);
  const double weight = counted ? dloss / static_cast<double>(counted) : 0.0;
  EXPECT_TRUE(all_close(values_of(d.to_vector()), want_d, {c.N, c.V},
                        stored_output<E>(tolerance::cross_entropy_backward(c.V, c.logit_range, weight))))
      << where << " dlogits";
}

class CrossEntropyParity : public ::testing::TestWithParam<CrossEntropyCase> {};

TEST_P(CrossEntropyParity, ForwardBackward) {
  for_each_space([&](auto space) { check_cross_entropy<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}

TEST_P(CrossEntropyParity, ForwardBackward16Bit) {
  for_each_space_16bit([&](auto space, auto e) {
    check_cross_entropy<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(GetParam());
  });
}

INSTANTIATE_TEST_SUITE_P(Sweep, CrossEntropyParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

TEST(CrossEntropy, RowsOfAHigherRankLogits) {
  using S = Kokkos::DefaultExecutionSpace;
  const auto r = ops::cross_entropy<S>(Tensor<S>({2, 3, 5}), index_view<S>({0, 1, 2, 3, 4, 0}));
  EXPECT_EQ(r.losses.shape(), (Shape{2, 3}));
  EXPECT_NEAR(r.loss_value(), std::log(5.0f), 1e-6);
}

TEST(CrossEntropyErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::cross_entropy<S>(Tensor<S>({4, 8}), index_view<S>({0, 1, 2}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "cross_entropy: 3 targets for logits of shape [4, 8] (4 rows)");
  }
  try {
    ops::cross_entropy<S>(Tensor<S>({3, 8}), index_view<S>({0, 8, 2}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "cross_entropy: target 8 at row 1 is outside [0, 8) and is not ignore_index -100 (logits shape [3, 8])");
  }
  const auto x = Tensor<S>({3, 8});
  const auto r = ops::cross_entropy<S>(x, index_view<S>({0, 1, 2}));
  EXPECT_THROW(ops::cross_entropy_backward<S>(Tensor<S>({3, 7}), 1.0f, x, r.lse, index_view<S>({0, 1, 2}), r.counted), Error);
  EXPECT_THROW(ops::cross_entropy_backward<S>(Tensor<S>({3, 8}), 1.0f, x, Tensor<S>({2}), index_view<S>({0, 1, 2}), r.counted), Error);
}

}  // namespace
}  // namespace ptk::test
