// attention parity: ptk::ops::attention (fused, flash-style) against the float64 oracle, both the
// output and the saved log-sum-exp, over a grid of shapes, causal and not, and large scores; and
// ptk::ops::attention_backward (dQ, dK, dV from the forward's O and lse) against the oracle backward.
#include <limits>

#include "parity.hpp"
#include "ptk/ops/attention.hpp"
#include "ptk/reference/attention.hpp"
#include "ptk/reference/attention_backward.hpp"

namespace ptk::test {
namespace {

struct AttentionCase {
  std::int64_t B, H, T, S, D;
  bool causal;
  float scale = 0;    // 0: the op's default 1/sqrt(D)
  std::int64_t G = 1;  // query heads per kv head (grouped-query attention): K and V have H / G heads
  std::int64_t Hkv() const { return H / G; }
};

std::string name(const AttentionCase& c) {
  std::string s = "B" + std::to_string(c.B) + "_H" + std::to_string(c.H) + "_T" + std::to_string(c.T) + "_S" +
                  std::to_string(c.S) + "_D" + std::to_string(c.D) + (c.causal ? "_causal" : "");
  if (c.scale != 0) s += std::string("_scale") + (c.scale < 0 ? "m" : "") + std::to_string(static_cast<int>(std::fabs(c.scale)));
  if (c.G != 1) s += "_G" + std::to_string(c.G);
  return s;
}

// The oracle has no groups: kv [B, H/G, S, D] is expanded to [B, H, S, D], each kv head repeated for its G query
// heads (test code, not the kernels': the kernels index kv head h / G instead of copying).
std::vector<float> expand_groups(const std::vector<float>& kv, const AttentionCase& c) {
  if (c.G == 1) return kv;
  const std::size_t head = static_cast<std::size_t>(c.S * c.D);
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(c.B * c.H) * head);
  for (std::int64_t h = 0; h < c.B * c.H; ++h) {
    const auto from = kv.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(h / c.G) * head);
    out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(head));
  }
  return out;
}

// The oracle's per-query-head dK (or dV) [B, H, S, D], summed over each group and added to start [B, H/G, S, D].
std::vector<float> sum_groups(std::vector<float> start, const std::vector<float>& per_head, const AttentionCase& c) {
  const std::size_t head = static_cast<std::size_t>(c.S * c.D);
  for (std::int64_t hk = 0; hk < c.B * c.Hkv(); ++hk)
    for (std::size_t i = 0; i < head; ++i) {
      double sum = start[static_cast<std::size_t>(hk) * head + i];
      for (std::int64_t h = hk * c.G; h < (hk + 1) * c.G; ++h) sum += per_head[static_cast<std::size_t>(h) * head + i];
      start[static_cast<std::size_t>(hk) * head + i] = static_cast<float>(sum);
    }
  return start;
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
    // Grouped-query attention: G query heads per kv head, at the shapes above that cross the tiles.
    {1, 4, 17, 17, 8, true, 0, 2},   {2, 6, 130, 130, 64, true, 0, 3}, {1, 8, 1, 200, 64, false, 0, 4},
    {1, 4, 129, 129, 128, true, 0, 4}, {1, 2, 65, 90, 16, false, 0, 2}, {1, 4, 513, 513, 16, true, 0, 4},
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

// E: the element type of Q and O, EKV of K and V (f32, bf16, f16; f32 queries over a 16-bit KV cache); the oracle
// runs on the stored inputs, O carries one more rounding (stored_output), lse is fp32 in every type.
template <class Space, class Tune, class E = float, class EKV = E>
void check_attention(const AttentionCase& c, std::vector<float> q, std::vector<float> k, std::vector<float> v) {
  round_in_place<E>(q);
  round_in_place<EKV>(k);
  round_in_place<EKV>(v);
  const Shape q_shape{c.B, c.H, c.T, c.D}, kv_shape{c.B, c.Hkv(), c.S, c.D}, lse_shape{c.B, c.H, c.T};
  const float scale = c.scale != 0 ? c.scale : 1.0f / std::sqrt(static_cast<float>(c.D));
  std::vector<float> want(q.size()), want_lse(static_cast<std::size_t>(c.B * c.H * c.T));
  const auto k_all = expand_groups(k, c), v_all = expand_groups(v, c);
  reference::attention_forward(want.data(), want_lse.data(), q.data(), k_all.data(), v_all.data(), c.B, c.H, c.T, c.S,
                               c.D, scale, c.causal);

  const auto r = ops::attention<Space, Tune>(
      Tensor<Space, E>::from_host(q_shape, rounded<E>(q)), Tensor<Space, EKV>::from_host(kv_shape, rounded<EKV>(k)),
      Tensor<Space, EKV>::from_host(kv_shape, rounded<EKV>(v)),
      c.scale != 0 ? std::optional<float>(c.scale) : std::nullopt, c.causal);
  ASSERT_EQ(r.lse.shape(), lse_shape);
  const double bound = std::max(1.0, score_bound(q, k_all, c, scale));
  EXPECT_TRUE(all_close(values_of(r.out.to_vector()), want, q_shape, stored_output<E>(tolerance::attention(c.D, c.S, bound))))
      << Space::name() << ' ' << element_name<E>() << '/' << element_name<EKV>() << " out";
  EXPECT_TRUE(all_close(r.lse.to_vector(), want_lse, lse_shape, tolerance::attention_lse(c.D, c.S, bound)))
      << Space::name() << ' ' << element_name<E>() << '/' << element_name<EKV>() << " lse";
}

class AttentionParity : public ::testing::TestWithParam<AttentionCase> {};

// A case's random Q, K, V and dO in [-1, 1], seeded by its name.
struct AttentionInputs {
  std::vector<float> q, k, v, dout;
};
AttentionInputs random_inputs(const AttentionCase& c) {
  return {uniform(c.B * c.H * c.T * c.D, -1, 1, name(c) + "q"), uniform(c.B * c.Hkv() * c.S * c.D, -1, 1, name(c) + "k"),
          uniform(c.B * c.Hkv() * c.S * c.D, -1, 1, name(c) + "v"), uniform(c.B * c.H * c.T * c.D, -1, 1, name(c) + "do")};
}

TEST_P(AttentionParity, Forward) {
  const auto& c = GetParam();
  const auto in = random_inputs(c);
  for_each_space([&](auto space) {
    check_attention<typename decltype(space)::type, typename decltype(space)::tune>(c, in.q, in.k, in.v);
  });
}

// The 16-bit runs take the cases of at most 2^22 score-times-head-dim products (B·H·T·S·D): every tile path,
// grouped-query, causal and wide-tile kind among them. The types differ from f32 only in the tile copies and the
// stores, which every case reaches; the larger cases are f32's tile walks again, and under the debug build's ASan they
// tripled the attention entries' time (bf16 and f16 on both host spaces).
bool small_case(const AttentionCase& c) { return c.B * c.H * c.T * c.S * c.D <= (std::int64_t{1} << 22); }

TEST_P(AttentionParity, Forward16Bit) {
  const auto& c = GetParam();
  if (!small_case(c)) GTEST_SKIP() << "larger than the 16-bit runs' 2^22 products";
  const auto in = random_inputs(c);
  for_each_space_16bit([&](auto space, auto e) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    using E = typename decltype(e)::type;
    check_attention<Space, Tune, E>(c, in.q, in.k, in.v);
    check_attention<Space, Tune, float, E>(c, in.q, in.k, in.v);  // f32 queries over a 16-bit KV cache, in place
  });
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
    using Tune = typename decltype(space)::tune;
    check_attention<Space, Tune>(c, q, k, v);
    const auto out = ops::attention<Space, Tune>(Tensor<Space>::from_host({1, 2, 200, 64}, q),
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
  for_each_space([&](auto space) { check_attention<typename decltype(space)::type, typename decltype(space)::tune>(c, q, k, v); });
}

// Backward. The tiles are 64 query rows × 128 keys on the host (64 × 32 on a GPU): the grid crosses both,
// has T ≠ S both ways, T = 1, odd lengths, D ∈ {1, 3, 8, 16, 32, 64, 128}, causal up to T = S = 513 and
// scores of about ±1e3.
const std::vector<AttentionCase> kBackwardCases = {
    {1, 1, 1, 1, 1, false},       {1, 1, 1, 1, 1, true},         {2, 3, 17, 17, 8, false},
    {2, 3, 17, 17, 8, true},      {1, 2, 1, 200, 64, false},     {2, 1, 3, 17, 5, false},
    {1, 1, 17, 3, 33, false},     {1, 2, 130, 257, 64, false},   {1, 1, 300, 70, 64, false},
    {1, 2, 33, 47, 1, false},     {1, 2, 129, 129, 1, true},     {1, 3, 19, 70, 3, false},
    {1, 2, 131, 131, 3, true},    {1, 2, 200, 200, 128, true},   {1, 1, 257, 100, 128, false},
    {2, 2, 1, 1, 128, false},     {3, 2, 64, 127, 32, false},    {1, 12, 65, 65, 64, true},
    {1, 1, 513, 513, 64, true},   {1, 2, 255, 255, 64, true},    {1, 2, 513, 513, 16, true},
    {1, 2, 150, 150, 64, true, 100}, {1, 2, 150, 90, 64, false, 100}, {1, 1, 70, 70, 128, true, -60},
    {1, 4, 17, 17, 8, true, 0, 2},   {2, 6, 130, 130, 64, true, 0, 3}, {1, 8, 1, 200, 64, false, 0, 4},
    {1, 4, 129, 129, 128, true, 0, 4}, {1, 2, 65, 90, 16, false, 0, 2}, {1, 4, 255, 255, 64, true, 0, 2},
};

// The case's magnitudes the backward tolerances are built from (tests/tolerances.hpp), from the inputs and
// the forward's O and lse.
tolerance::AttentionBackwardBounds backward_bounds(const AttentionCase& c, float scale, const std::vector<float>& q,
                                        const std::vector<float>& k, const std::vector<float>& v,
                                        const std::vector<float>& dout, const std::vector<float>& out,
                                        const std::vector<float>& lse) {
  tolerance::AttentionBackwardBounds m{score_bound(q, k, c, scale), score_bound(dout, v, c, 1.0f), 0, 0, 0};
  for (std::int64_t row = 0; row < c.B * c.H * c.T; ++row) {
    double r = 0, a = 0;
    for (std::int64_t d = 0; d < c.D; ++d) {
      r += std::fabs(double(dout[row * c.D + d]) * out[row * c.D + d]);
      a += std::fabs(double(dout[row * c.D + d]));
    }
    if (std::isfinite(r)) m.drow = std::max(m.drow, r);
    m.dout_l1 = std::max(m.dout_l1, a);
  }
  // A kv head's column sums run over the query rows of all G heads of its group (k is the expanded [B, H, S, D]).
  for (std::int64_t hk = 0; hk < c.B * c.Hkv(); ++hk) {
    std::vector<double> col(static_cast<std::size_t>(c.S), 0.0);
    for (std::int64_t h = hk * c.G; h < (hk + 1) * c.G; ++h)
      for (std::int64_t t = 0; t < c.T; ++t) {
        const double l = lse[h * c.T + t];
        if (!std::isfinite(l)) continue;
        for (std::int64_t j = 0; j < (c.causal ? std::min(t + 1, c.S) : c.S); ++j) {
          double s = 0;
          for (std::int64_t d = 0; d < c.D; ++d) s += double(q[(h * c.T + t) * c.D + d]) * k[(h * c.S + j) * c.D + d];
          const double p = std::exp(double(scale) * s - l);
          if (std::isfinite(p)) col[static_cast<std::size_t>(j)] += p;
        }
      }
    for (double x : col) m.col_sum = std::max(m.col_sum, x);
  }
  return m;
}

// dQ, dK, dV start from random values (the op adds). O and lse come from ptk's forward in the same space;
// the oracle rebuilds P from that same lse, so the forward's lse error is not counted twice.
// E: the element type of Q, K, V, dO, O and the gradients (f32, bf16, f16). The oracle runs on the stored inputs; O
// carries one more rounding into Drow (out_unit), and each gradient one more as it is stored (stored_output).
template <class Space, class Tune, class E = float>
void check_attention_backward(const AttentionCase& c, std::vector<float> q, std::vector<float> k,
                              std::vector<float> v, std::vector<float> dout) {
  const Shape q_shape{c.B, c.H, c.T, c.D}, kv_shape{c.B, c.Hkv(), c.S, c.D};
  const float scale = c.scale != 0 ? c.scale : 1.0f / std::sqrt(static_cast<float>(c.D));
  const auto opt_scale = c.scale != 0 ? std::optional<float>(c.scale) : std::nullopt;
  auto dq0 = uniform(element_count(q_shape), -1, 1, name(c) + "dq");
  auto dk0 = uniform(element_count(kv_shape), -1, 1, name(c) + "dk");
  auto dv0 = uniform(element_count(kv_shape), -1, 1, name(c) + "dv");
  for (auto* x : {&q, &k, &v, &dout, &dq0, &dk0, &dv0}) round_in_place<E>(*x);

  const auto Q = Tensor<Space, E>::from_host(q_shape, rounded<E>(q)), K = Tensor<Space, E>::from_host(kv_shape, rounded<E>(k)),
             V = Tensor<Space, E>::from_host(kv_shape, rounded<E>(v)), dO = Tensor<Space, E>::from_host(q_shape, rounded<E>(dout));
  const auto fwd = ops::attention<Space, Tune>(Q, K, V, opt_scale, c.causal);
  const auto out = values_of(fwd.out.to_vector()), lse = fwd.lse.to_vector();
  auto want_dq = dq0, want_dk = dk0, want_dv = dv0;
  const auto k_all = expand_groups(k, c), v_all = expand_groups(v, c);
  if (c.G == 1) {
    reference::attention_backward(want_dq.data(), want_dk.data(), want_dv.data(), dout.data(), q.data(), k.data(),
                                  v.data(), lse.data(), c.B, c.H, c.T, c.S, c.D, scale, c.causal);
  } else {  // per query head into zeros, then each group's sum onto the starting values
    std::vector<float> dk_all(k_all.size(), 0.0f), dv_all(v_all.size(), 0.0f);
    reference::attention_backward(want_dq.data(), dk_all.data(), dv_all.data(), dout.data(), q.data(), k_all.data(),
                                  v_all.data(), lse.data(), c.B, c.H, c.T, c.S, c.D, scale, c.causal);
    want_dk = sum_groups(dk0, dk_all, c);
    want_dv = sum_groups(dv0, dv_all, c);
  }

  const auto dQ = Tensor<Space, E>::from_host(q_shape, rounded<E>(dq0)), dK = Tensor<Space, E>::from_host(kv_shape, rounded<E>(dk0)),
             dV = Tensor<Space, E>::from_host(kv_shape, rounded<E>(dv0));
  ops::attention_backward<Space, Tune>(dQ, dK, dV, dO, Q, K, V, fwd.out, fwd.lse, opt_scale, c.causal);
  // A kv head's gradient is one sum over the G·T query rows of its group: the tolerances of a head with G·T rows.
  auto m = backward_bounds(c, scale, q, k_all, v_all, dout, out, lse);
  m.out_unit = std::is_same_v<E, bf16> ? 0x1p-8 : std::is_same_v<E, f16> ? 0x1p-11 : 0.0;
  const std::string what = std::string(Space::name()) + ' ' + element_name<E>();
  EXPECT_TRUE(all_close(values_of(dQ.to_vector()), want_dq, q_shape,
                        stored_output<E>(tolerance::attention_dq(c.D, c.S, scale, m))))
      << what << " dQ";
  EXPECT_TRUE(all_close(values_of(dK.to_vector()), want_dk, kv_shape,
                        stored_output<E>(tolerance::attention_dk(c.D, c.G * c.T, c.S, scale, m))))
      << what << " dK";
  EXPECT_TRUE(all_close(values_of(dV.to_vector()), want_dv, kv_shape,
                        stored_output<E>(tolerance::attention_dv(c.D, c.G * c.T, c.S, m))))
      << what << " dV";
}

class AttentionBackwardParity : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionBackwardParity, Backward) {
  const auto& c = GetParam();
  const auto in = random_inputs(c);
  for_each_space([&](auto space) {
    check_attention_backward<typename decltype(space)::type, typename decltype(space)::tune>(c, in.q, in.k, in.v, in.dout);
  });
}

TEST_P(AttentionBackwardParity, Backward16Bit) {
  const auto& c = GetParam();
  if (!small_case(c)) GTEST_SKIP() << "larger than the 16-bit runs' 2^22 products";
  const auto in = random_inputs(c);
  for_each_space_16bit([&](auto space, auto e) {
    check_attention_backward<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(
        c, in.q, in.k, in.v, in.dout);
  });
}

INSTANTIATE_TEST_SUITE_P(Sweep, AttentionBackwardParity, ::testing::ValuesIn(kBackwardCases),
                         [](const auto& info) { return name(info.param); });

// A row whose scores are all −inf (lse = −inf: nothing attended) gets no gradient and adds none to dK, dV:
// no NaN from −inf · 0.
TEST(AttentionBackwardSpecial, FullyMaskedRow) {
  const AttentionCase c{1, 1, 70, 70, 4, false};
  auto q = uniform(c.T * c.D, -1, 1, "bwd-inf-q");
  auto k = uniform(c.S * c.D, -1, 1, "bwd-inf-k");
  const auto v = uniform(c.S * c.D, -1, 1, "bwd-inf-v");
  const auto dout = uniform(c.T * c.D, -1, 1, "bwd-inf-do");
  for (std::int64_t j = 0; j < c.S; ++j) k[j * c.D] = 1.0f;
  q[5 * c.D] = -std::numeric_limits<float>::infinity();
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    check_attention_backward<Space, Tune>(c, q, k, v, dout);
    Tensor<Space> dQ({1, 1, 70, 4}), dK({1, 1, 70, 4}), dV({1, 1, 70, 4});
    const auto Q = Tensor<Space>::from_host({1, 1, 70, 4}, q), K = Tensor<Space>::from_host({1, 1, 70, 4}, k),
               V = Tensor<Space>::from_host({1, 1, 70, 4}, v);
    const auto fwd = ops::attention<Space, Tune>(Q, K, V);
    ASSERT_EQ(fwd.lse.to_vector()[5], -std::numeric_limits<float>::infinity());
    ops::attention_backward<Space, Tune>(dQ, dK, dV, Tensor<Space>::from_host({1, 1, 70, 4}, dout), Q, K, V, fwd.out, fwd.lse);
    const auto gq = dQ.to_vector(), gk = dK.to_vector(), gv = dV.to_vector();
    for (std::int64_t d = 0; d < c.D; ++d) EXPECT_EQ(gq[5 * c.D + d], 0.0f) << Space::name();
    for (std::size_t i = 0; i < gq.size(); ++i) ASSERT_TRUE(std::isfinite(gq[i]) && std::isfinite(gk[i]) && std::isfinite(gv[i]));
  });
}

// Causal: a NaN in row j of V (head 0) or K (head 1) is masked for every query t < j. dQ of those rows must
// be finite and match the oracle; everything the NaN reaches is NaN, as in the oracle.
TEST(AttentionBackwardSpecial, MaskedNaNDoesNotLeak) {
  const AttentionCase c{1, 2, 200, 200, 64, true};
  auto q = uniform(c.B * c.H * c.T * c.D, -1, 1, "bwd-nan-q");
  auto k = uniform(c.B * c.H * c.S * c.D, -1, 1, "bwd-nan-k");
  auto v = uniform(c.B * c.H * c.S * c.D, -1, 1, "bwd-nan-v");
  const auto dout = uniform(c.B * c.H * c.T * c.D, -1, 1, "bwd-nan-do");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t d = 0; d < c.D; ++d) {
    v[(0 * c.S + 150) * c.D + d] = nan;
    k[(1 * c.S + 170) * c.D + d] = nan;
  }
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    check_attention_backward<Space, Tune>(c, q, k, v, dout);
    const Shape shape{1, 2, 200, 64};
    const auto Q = Tensor<Space>::from_host(shape, q), K = Tensor<Space>::from_host(shape, k),
               V = Tensor<Space>::from_host(shape, v);
    const auto fwd = ops::attention<Space, Tune>(Q, K, V, std::nullopt, true);
    Tensor<Space> dQ(shape);
    ops::attention_backward<Space, Tune>(dQ, Tensor<Space>(), Tensor<Space>(), Tensor<Space>::from_host(shape, dout), Q, K, V,
                            fwd.out, fwd.lse, std::nullopt, true);
    const auto g = dQ.to_vector();
    for (std::int64_t t = 0; t < 150; ++t)
      for (std::int64_t d = 0; d < c.D; ++d) ASSERT_TRUE(std::isfinite(g[t * c.D + d])) << "head 0, t " << t;
    for (std::int64_t t = 0; t < 170; ++t)
      for (std::int64_t d = 0; d < c.D; ++d) ASSERT_TRUE(std::isfinite(g[(200 + t) * c.D + d])) << "head 1, t " << t;
  });
}

// Any subset of the gradients; the same inputs give bitwise the same gradients on every run (no atomics).
TEST(AttentionBackwardSpecial, SubsetsAndDeterminism) {
  const Shape shape{1, 3, 150, 64};
  const auto q = uniform(element_count(shape), -1, 1, "det-q"), k = uniform(element_count(shape), -1, 1, "det-k"),
             v = uniform(element_count(shape), -1, 1, "det-v"), dout = uniform(element_count(shape), -1, 1, "det-do");
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    const auto Q = Tensor<Space>::from_host(shape, q), K = Tensor<Space>::from_host(shape, k),
               V = Tensor<Space>::from_host(shape, v), dO = Tensor<Space>::from_host(shape, dout);
    const auto fwd = ops::attention<Space, Tune>(Q, K, V, std::nullopt, true);
    std::vector<std::vector<float>> first;
    for (int run = 0; run < 3; ++run) {
      Tensor<Space> dQ(shape), dK(shape), dV(shape);
      ops::attention_backward<Space, Tune>(dQ, dK, dV, dO, Q, K, V, fwd.out, fwd.lse, std::nullopt, true);
      const std::vector<std::vector<float>> got{dQ.to_vector(), dK.to_vector(), dV.to_vector()};
      if (run == 0) first = got;
      EXPECT_EQ(got, first) << Space::name() << " run " << run;
    }
    // Each gradient alone equals its value from the full call.
    Tensor<Space> dQ(shape), dK(shape), dV(shape);
    ops::attention_backward<Space, Tune>(dQ, Tensor<Space>(), Tensor<Space>(), dO, Q, K, V, fwd.out, fwd.lse, std::nullopt, true);
    ops::attention_backward<Space, Tune>(Tensor<Space>(), dK, Tensor<Space>(), dO, Q, K, V, fwd.out, fwd.lse, std::nullopt, true);
    ops::attention_backward<Space, Tune>(Tensor<Space>(), Tensor<Space>(), dV, dO, Q, K, V, fwd.out, fwd.lse, std::nullopt, true);
    EXPECT_EQ(dQ.to_vector(), first[0]) << Space::name();
    EXPECT_EQ(dK.to_vector(), first[1]) << Space::name();
    EXPECT_EQ(dV.to_vector(), first[2]) << Space::name();
  });
}

TEST(AttentionBackwardErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  const Tensor<S> q({1, 2, 5, 8}), kv({1, 2, 7, 8}), lse({1, 2, 5});
  try {
    ops::attention_backward(Tensor<S>({1, 2, 5, 4}), Tensor<S>(), Tensor<S>(), q, q, kv, kv, q, lse);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "attention_backward: dQ has shape [1, 2, 5, 4], expected [1, 2, 5, 8]");
  }
  try {
    ops::attention_backward(Tensor<S>(), Tensor<S>(), Tensor<S>(), q, q, kv, kv, q, Tensor<S>({1, 2, 7}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "attention_backward: lse has shape [1, 2, 7], expected [B,H,T] = [1, 2, 5]");
  }
  EXPECT_THROW(ops::attention_backward(Tensor<S>(), Tensor<S>(), Tensor<S>(), q, q, kv, kv, q, lse, std::nullopt, true),
               Error);
  EXPECT_THROW(ops::attention_backward(Tensor<S>(), Tensor<S>(), Tensor<S>(), kv, q, kv, kv, q, lse), Error);
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
  try {  // grouped-query attention: H must be a multiple of Hkv
    ops::attention(Tensor<S>({1, 3, 5, 8}), Tensor<S>({1, 2, 5, 8}), Tensor<S>({1, 2, 5, 8}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "attention: Q's H heads must be a multiple of K's Hkv heads, got Q [1, 3, 5, 8], K [1, 2, 5, 8], V [1, 2, 5, 8]");
  }
  EXPECT_THROW(ops::attention(Tensor<S>({2, 5, 8}), Tensor<S>({2, 5, 8}), Tensor<S>({2, 5, 8})), Error);
}

}  // namespace
}  // namespace ptk::test
