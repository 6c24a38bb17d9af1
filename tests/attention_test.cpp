// attention parity: ptk::ops::attention (fused, flash-style) against the float64 oracle, both the
// output and the saved log-sum-exp, over a grid of shapes, causal and not, and large scores.
#include <limits>

#include "parity.hpp"
#include "ptk/ops/attention.hpp"
#include "ptk/reference/attention.hpp"

namespace ptk::test {
namespace {

struct AttentionCase {
  std::int64_t B, H, T, S, D;
  bool causal;
  float scale = 0;  // 0: the op's default 1/sqrt(D)
};

std::string name(const AttentionCase& c) {
  std::string s = "B" + std::to_string(c.B) + "_H" + std::to_string(c.H) + "_T" + std::to_string(c.T) + "_S" +
                  std::to_string(c.S) + "_D" + std::to_string(c.D) + (c.causal ? "_causal" : "");
  if (c.scale != 0) s += std::string("_scale") + (c.scale < 0 ? "m" : "") + std::to_string(static_cast<int>(std::fabs(c.scale)));
  return s;
}

// gtest and ctest show the case by its name, not its bytes.
void PrintTo(const AttentionCase& c, std::ostream* os) { *os << name(c); }

// Tiles are 128 query rows × 128 keys on the host (64 × 32 on a GPU): the grid crosses both
// boundaries, has T ≠ S both ways, T = 1, odd lengths, D ∈ {1, 3, 5, 8, 16, 33, 64, 128}, causal up
// to T = S = 513, and scales that push the scores to about ±1e3.
const std::vector<AttentionCase> kCases = {
    {1, 1, 1, 1, 1, false},      {1, 1, 1, 1, 1, true},         {2, 3, 17, 17, 8, false},
    {2, 3, 17, 17, 8, true},     {1, 2, 127, 127, 64, true},    {2, 1, 3, 17, 5, false},
    {1, 1, 17, 3, 33, false},    {1, 2, 513, 513, 16, true},    {3, 2, 64, 127, 32, false},
    {1, 12, 65, 65, 64, true},   {1, 2, 1, 200, 64, false},     {2, 2, 1, 1, 128, false},
    {1, 2, 33, 47, 1, false},    {1, 2, 129, 129, 1, true},     {1, 3, 19, 70, 3, false},
    {1, 2, 131, 131, 3, true},   {1, 2, 130, 257, 64, false},   {1, 1, 300, 70, 64, false},
    {1, 2, 200, 200, 128, true}, {1, 1, 257, 100, 128, false},  {1, 1, 513, 513, 64, true},
    {1, 2, 255, 255, 64, true},  {1, 2, 150, 150, 64, true, 100}, {1, 2, 150, 90, 64, false, 100},
    {1, 1, 70, 70, 128, true, -60},
};

// |scale| · max_{t,j} Σ_d |q_d k_d|: bounds every score's magnitude and its rounding error.
double score_bound(const std::vector<float>& q, const std::vector<float>& k, const AttentionCase& c, float scale) {
  double bound = 0;
  for (std::int64_t h = 0; h < c.B * c.H; ++h)
    for (std::int64_t t = 0; t < c.T; ++t)
      for (std::int64_t j = 0; j < c.S; ++j) {
        double s = 0;
        for (std::int64_t d = 0; d < c.D; ++d)
          s += std::fabs(static_cast<double>(q[(h * c.T + t) * c.D + d]) * k[(h * c.S + j) * c.D + d]);
        bound = std::max(bound, s);
      }
  return std::fabs(scale) * bound;
}

template <class Space>
void check_attention(const AttentionCase& c, std::vector<float> q, std::vector<float> k, std::vector<float> v) {
  const Shape q_shape{c.B, c.H, c.T, c.D}, kv_shape{c.B, c.H, c.S, c.D}, lse_shape{c.B, c.H, c.T};
  const float scale = c.scale != 0 ? c.scale : 1.0f / std::sqrt(static_cast<float>(c.D));
  std::vector<float> want(q.size()), want_lse(static_cast<std::size_t>(c.B * c.H * c.T));
  reference::attention_forward(want.data(), want_lse.data(), q.data(), k.data(), v.data(), c.B, c.H, c.T, c.S, c.D,
                               scale, c.causal);

  const auto r = ops::attention(Tensor<Space>::from_host(q_shape, q), Tensor<Space>::from_host(kv_shape, k),
                                Tensor<Space>::from_host(kv_shape, v),
                                c.scale != 0 ? std::optional<float>(c.scale) : std::nullopt, c.causal);
  ASSERT_EQ(r.lse.shape(), lse_shape);
  const double bound = std::max(1.0, score_bound(q, k, c, scale));
  EXPECT_TRUE(all_close(r.out.to_vector(), want, q_shape, tolerance::attention(c.D, c.S, bound)))
      << Space::name() << " out";
  EXPECT_TRUE(all_close(r.lse.to_vector(), want_lse, lse_shape, tolerance::attention_lse(c.D, c.S, bound)))
      << Space::name() << " lse";
}

class AttentionParity : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionParity, Forward) {
  const auto& c = GetParam();
  const auto q = uniform(c.B * c.H * c.T * c.D, -1, 1, name(c) + "q");
  const auto k = uniform(c.B * c.H * c.S * c.D, -1, 1, name(c) + "k");
  const auto v = uniform(c.B * c.H * c.S * c.D, -1, 1, name(c) + "v");
  for_each_space([&](auto space) { check_attention<typename decltype(space)::type>(c, q, k, v); });
}

INSTANTIATE_TEST_SUITE_P(Sweep, AttentionParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

// Causal: a NaN in row j of V (or K) is masked for every query t < j. Those rows must come out
// finite and equal to the oracle's: masked keys are skipped, never multiplied by a zero weight.
// Rows t >= j attend the NaN and are NaN, as in the oracle. Rows 150 and 170 lie in the diagonal
// tile of some queries and in wholly masked tiles of others.
TEST(AttentionSpecial, MaskedNaNDoesNotLeak) {
  const AttentionCase c{1, 2, 200, 200, 64, true};
  auto q = uniform(c.B * c.H * c.T * c.D, -1, 1, "nan-q");
  auto k = uniform(c.B * c.H * c.S * c.D, -1, 1, "nan-k");
  auto v = uniform(c.B * c.H * c.S * c.D, -1, 1, "nan-v");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t d = 0; d < c.D; ++d) {
    v[(0 * c.S + 150) * c.D + d] = nan;   // head 0: V row 150
    k[(1 * c.S + 170) * c.D + d] = nan;   // head 1: K row 170
  }
  v[(1 * c.S + 65) * c.D + 3] = std::numeric_limits<float>::infinity();  // head 1: one inf in V row 65
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    check_attention<Space>(c, q, k, v);
    const auto out = ops::attention(Tensor<Space>::from_host({1, 2, 200, 64}, q),
                                    Tensor<Space>::from_host({1, 2, 200, 64}, k),
                                    Tensor<Space>::from_host({1, 2, 200, 64}, v), std::nullopt, true)
                         .out.to_vector();
    for (std::int64_t t = 0; t < 150; ++t)
      for (std::int64_t d = 0; d < c.D; ++d) ASSERT_TRUE(std::isfinite(out[t * c.D + d])) << "head 0, t " << t;
    for (std::int64_t t = 0; t < 65; ++t)
      for (std::int64_t d = 0; d < c.D; ++d)
        ASSERT_TRUE(std::isfinite(out[(200 + t) * c.D + d])) << "head 1, t " << t;
  });
}

// A row whose scores are all -inf gives 0 and lse = -inf; a NaN in q makes its own row NaN only.
TEST(AttentionSpecial, InfiniteAndNaNScores) {
  const AttentionCase c{1, 1, 70, 70, 4, false};
  auto q = uniform(c.T * c.D, -1, 1, "inf-q");
  auto k = uniform(c.S * c.D, -1, 1, "inf-k");
  const auto v = uniform(c.S * c.D, -1, 1, "inf-v");
  for (std::int64_t j = 0; j < c.S; ++j) k[j * c.D] = 1.0f;  // every key has k_0 = 1
  q[5 * c.D] = -std::numeric_limits<float>::infinity();       // row 5: every score -inf
  q[9 * c.D + 2] = std::numeric_limits<float>::quiet_NaN();   // row 9: NaN
  for_each_space([&](auto space) { check_attention<typename decltype(space)::type>(c, q, k, v); });
}

TEST(AttentionErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::attention(Tensor<S>({1, 2, 5, 8}), Tensor<S>({1, 2, 7, 8}), Tensor<S>({1, 2, 7, 8}), std::nullopt, true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "attention: causal needs T == S, got Q [1, 2, 5, 8], K [1, 2, 7, 8], V [1, 2, 7, 8]");
  }
  EXPECT_THROW(ops::attention(Tensor<S>({1, 2, 5, 8}), Tensor<S>({1, 2, 7, 4}), Tensor<S>({1, 2, 7, 4})), Error);
  EXPECT_THROW(ops::attention(Tensor<S>({2, 5, 8}), Tensor<S>({2, 5, 8}), Tensor<S>({2, 5, 8})), Error);
}

}  // namespace
}  // namespace ptk::test
