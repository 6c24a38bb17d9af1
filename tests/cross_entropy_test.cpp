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

template <class Space, class Tune>
void check_cross_entropy(const CrossEntropyCase& c) {
  auto targets = random_ids(c.N, static_cast<int>(c.V), name(c) + "targets");
  if (c.ignored_every)
    for (std::size_t i = 0; i < targets.size(); i += static_cast<std::size_t>(c.ignored_every)) targets[i] = kIgnore;
  const auto logits = uniform(c.N * c.V, -c.logit_range, c.logit_range, name(c) + "logits");
  const auto base = uniform(c.N * c.V, -0.01f, 0.01f, name(c) + "base");
  const float dloss = 1.7f;

  float want_loss = 0;
  std::vector<float> want_losses(static_cast<std::size_t>(c.N)), want_lse(want_losses.size()), want_d = base;
  const auto counted = reference::cross_entropy_forward(&want_loss, want_losses.data(), want_lse.data(), logits.data(),
                                                        targets.data(), c.N, c.V, kIgnore);
  reference::cross_entropy_backward(want_d.data(), dloss, logits.data(), targets.data(), c.N, c.V, kIgnore);

  const auto t = index_view<Space>(targets);
  const auto x = Tensor<Space>::from_host({c.N, c.V}, logits);
  const auto r = ops::cross_entropy<Space>(x, t, kIgnore);
  const auto tol = tolerance::cross_entropy(c.V, c.logit_range);
  const float loss = r.loss_value();
  EXPECT_EQ(r.counted_value(), counted) << Space::name();
  if (counted == 0) {
    EXPECT_TRUE(std::isnan(loss)) << Space::name() << " loss " << loss;
  } else {
    EXPECT_NEAR(loss, want_loss, tol.allowed(want_loss) + tolerance::reduction(c.N) * std::fabs(want_loss))
        << Space::name() << " loss";
  }
  EXPECT_TRUE(all_close(r.losses.to_vector(), want_losses, {c.N}, tol)) << Space::name() << " losses";
  EXPECT_TRUE(all_close(r.lse.to_vector(), want_lse, {c.N}, tol)) << Space::name() << " lse";

  const auto d = Tensor<Space>::from_host({c.N, c.V}, base);
  ops::cross_entropy_backward<Space>(d, dloss, x, r.lse, t, r.counted, kIgnore);
  const double weight = counted ? dloss / static_cast<double>(counted) : 0.0;
  EXPECT_TRUE(all_close(d.to_vector(), want_d, {c.N, c.V}, tolerance::cross_entropy_backward(c.V, c.logit_range, weight)))
      << Space::name() << " dlogits";
}

class CrossEntropyParity : public ::testing::TestWithParam<CrossEntropyCase> {};

TEST_P(CrossEntropyParity, ForwardBackward) {
  for_each_space([&](auto space) { check_cross_entropy<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
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
