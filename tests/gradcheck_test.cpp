// Gradient check of the oracle: every reference backward against central finite differences of the reference
// forward, all in double. For random inputs x and a random upstream gradient g, the backward's vector-Jacobian
// product (gᵀ J, accumulated into a buffer that starts non-zero, to check +=) must match ∂(Σ g·y)/∂x_i by differences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "ptk/reference/reference.hpp"
#include "tolerances.hpp"

namespace ptk::test {
namespace {

using Vec = std::vector<double>;

Vec random_vec(std::int64_t n, double lo, double hi, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

// The backward wrote base + gᵀJ into `grad` (base: what the buffer held before). Differences of f over every
// element of `param` (forward() reads param) must match grad - base.
::testing::AssertionResult matches_differences(const char* what, Vec& param, const std::function<Vec()>& forward,
                                               const Vec& g, const Vec& grad, const Vec& base) {
  double f_abs = 0.0;
  const Vec y0 = forward();
  for (std::size_t i = 0; i < y0.size(); ++i) f_abs += std::fabs(g[i] * y0[i]);
  const auto tol = tolerance::gradcheck(f_abs);
  const auto f = [&] {
    const Vec y = forward();
    double s = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) s += g[i] * y[i];
    return s;
  };
  std::ostringstream misses;
  int count = 0;
  for (std::size_t i = 0; i < param.size(); ++i) {
    const double keep = param[i], h = tolerance::kGradcheckStep;
    param[i] = keep + h;
    const double up = f();
    param[i] = keep - h;
    const double down = f();
    param[i] = keep;
    const double numeric = (up - down) / (2.0 * h), analytic = grad[i] - base[i];
    if (!(std::fabs(numeric - analytic) <= tol.allowed(numeric)) && count++ < 5)
      misses << "\n  d" << what << "[" << i << "]: backward " << analytic << ", differences " << numeric;
  }
  if (count == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << count << " of " << param.size() << " elements of d" << what
                                       << " differ:" << misses.str();
}

TEST(Gradcheck, Matmul) {
  std::uint32_t seed = 1;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const auto& layout : std::vector<std::tuple<int, bool, bool>>{{1, true, true}, {3, true, true}, {3, false, true}, {3, true, false}}) {
        // Named copies, not a structured binding: clang (hipcc) rejects capturing bindings in C++17.
        const int batch = std::get<0>(layout);
        const bool ab = std::get<1>(layout), bb = std::get<2>(layout);
        const std::int64_t M = 5, N = 3, K = 7;
        Vec a = random_vec((ab ? batch : 1) * M * K, -1, 1, seed++), b = random_vec((bb ? batch : 1) * K * N, -1, 1, seed++);
        const Vec g = random_vec(batch * M * N, -1, 1, seed++);
        const auto fwd = [&] {
          Vec c(static_cast<std::size_t>(batch * M * N));
          reference::matmul_forward(c.data(), a.data(), b.data(), batch, M, N, K, ta, tb, ab, bb);
          return c;
        };
        const Vec base_a = random_vec(static_cast<std::int64_t>(a.size()), -1, 1, seed++);
        const Vec base_b = random_vec(static_cast<std::int64_t>(b.size()), -1, 1, seed++);
        Vec da = base_a, db = base_b;
        reference::matmul_backward(da.data(), db.data(), g.data(), a.data(), b.data(), batch, M, N, K, ta, tb, ab, bb);
        SCOPED_TRACE(::testing::Message() << "trans_a " << ta << " trans_b " << tb << " batch " << batch << " a_batched "
                                          << ab << " b_batched " << bb);
        EXPECT_TRUE(matches_differences("A", a, fwd, g, da, base_a));
        EXPECT_TRUE(matches_differences("B", b, fwd, g, db, base_b));
      }
}

TEST(Gradcheck, Add) {
  const std::int64_t n = 13;
  Vec a = random_vec(n, -1, 1, 1), b = random_vec(n, -1, 1, 2);
  const Vec g = random_vec(n, -1, 1, 3), base = random_vec(n, -1, 1, 4);
  Vec da = base, db = base;
  reference::add_backward(da.data(), db.data(), g.data(), n);
  const auto fwd = [&] {
    Vec y(static_cast<std::size_t>(n));
    reference::add_forward(y.data(), a.data(), b.data(), n);
    return y;
  };
  EXPECT_TRUE(matches_differences("A", a, fwd, g, da, base));
  EXPECT_TRUE(matches_differences("B", b, fwd, g, db, base));
}

TEST(Gradcheck, Softmax) {
  for (bool causal : {false, true})
    for (float scale : {1.0f, 0.37f}) {
      const std::int64_t batch = 3, cols = 7, rows = batch * cols;
      Vec x = random_vec(rows * cols, -2, 2, causal ? 11 : 12);
      const Vec g = random_vec(rows * cols, -1, 1, 13), base = random_vec(rows * cols, -1, 1, 14);
      const auto fwd = [&] {
        Vec y(x.size());
        reference::softmax_forward(y.data(), x.data(), rows, cols, scale, causal);
        return y;
      };
      const Vec y = fwd();
      Vec dx = base;
      reference::softmax_backward(dx.data(), y.data(), g.data(), rows, cols, scale);
      SCOPED_TRACE(::testing::Message() << "causal " << causal << " scale " << scale);
      EXPECT_TRUE(matches_differences("X", x, fwd, g, dx, base));
    }
}

TEST(Gradcheck, Layernorm) {
  for (std::int64_t cols : {1, 3, 17}) {
    const std::int64_t rows = 5;
    Vec x = random_vec(rows * cols, -2, 2, 21), gamma = random_vec(cols, -1, 1, 22), beta = random_vec(cols, -1, 1, 23);
    const Vec g = random_vec(rows * cols, -1, 1, 24);
    const Vec bx = random_vec(rows * cols, -1, 1, 25), bg = random_vec(cols, -1, 1, 26), bb = random_vec(cols, -1, 1, 27);
    const float eps = 1e-5f;
    const auto fwd = [&] {
      Vec y(x.size());
      reference::layernorm_forward(y.data(), nullptr, nullptr, x.data(), gamma.data(), beta.data(), rows, cols, eps);
      return y;
    };
    Vec y(x.size()), mean(static_cast<std::size_t>(rows)), rstd(mean.size());
    reference::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(), rows, cols, eps);
    Vec dx = bx, dg = bg, db = bb;
    reference::layernorm_backward(dx.data(), dg.data(), db.data(), g.data(), x.data(), gamma.data(), mean.data(),
                                  rstd.data(), rows, cols);
    SCOPED_TRACE(::testing::Message() << "cols " << cols);
    EXPECT_TRUE(matches_differences("X", x, fwd, g, dx, bx));
    EXPECT_TRUE(matches_differences("gamma", gamma, fwd, g, dg, bg));
    EXPECT_TRUE(matches_differences("beta", beta, fwd, g, db, bb));
  }
}

TEST(Gradcheck, Rmsnorm) {
  for (std::int64_t cols : {1, 3, 17}) {
    const std::int64_t rows = 5;
    Vec x = random_vec(rows * cols, -2, 2, 31), w = random_vec(cols, -1, 1, 32);
    const Vec g = random_vec(rows * cols, -1, 1, 33), bx = random_vec(rows * cols, -1, 1, 34), bw = random_vec(cols, -1, 1, 35);
    const auto fwd = [&] {
      Vec y(x.size());
      reference::rmsnorm_forward(y.data(), nullptr, x.data(), w.data(), rows, cols, 1e-5f);
      return y;
    };
    Vec y(x.size()), rstd(static_cast<std::size_t>(rows));
    reference::rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), rows, cols, 1e-5f);
    Vec dx = bx, dw = bw;
    reference::rmsnorm_backward(dx.data(), dw.data(), g.data(), x.data(), w.data(), rstd.data(), rows, cols);
    SCOPED_TRACE(::testing::Message() << "cols " << cols);
    EXPECT_TRUE(matches_differences("X", x, fwd, g, dx, bx));
    EXPECT_TRUE(matches_differences("weight", w, fwd, g, dw, bw));
  }
}

TEST(Gradcheck, GeluSilu) {
  const std::int64_t n = 41;
  Vec x = random_vec(n, -6, 6, 41);
  const Vec g = random_vec(n, -1, 1, 42), base = random_vec(n, -1, 1, 43);
  Vec dgelu = base, dsilu = base;
  reference::gelu_backward(dgelu.data(), x.data(), g.data(), n);
  reference::silu_backward(dsilu.data(), x.data(), g.data(), n);
  EXPECT_TRUE(matches_differences("X (gelu)", x, [&] { Vec y(x.size()); reference::gelu_forward(y.data(), x.data(), n); return y; },
                                  g, dgelu, base));
  EXPECT_TRUE(matches_differences("X (silu)", x, [&] { Vec y(x.size()); reference::silu_forward(y.data(), x.data(), n); return y; },
                                  g, dsilu, base));
}

TEST(Gradcheck, Attention) {
  struct Case { std::int64_t B, H, T, S, D; bool causal; };
  for (const auto& c : {Case{1, 1, 1, 1, 3, false}, Case{2, 3, 5, 7, 3, false}, Case{1, 2, 6, 6, 5, true}, Case{2, 1, 3, 3, 1, true}}) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
    Vec q = random_vec(c.B * c.H * c.T * c.D, -1.5, 1.5, 51), k = random_vec(c.B * c.H * c.S * c.D, -1.5, 1.5, 52),
        v = random_vec(c.B * c.H * c.S * c.D, -1, 1, 53);
    const Vec g = random_vec(static_cast<std::int64_t>(q.size()), -1, 1, 54);
    const Vec bq = random_vec(static_cast<std::int64_t>(q.size()), -1, 1, 55), bk = random_vec(static_cast<std::int64_t>(k.size()), -1, 1, 56);
    const auto fwd = [&] {
      Vec o(q.size());
      reference::attention_forward_lse(o.data(), static_cast<double*>(nullptr), q.data(), k.data(), v.data(), c.B, c.H, c.T,
                                       c.S, c.D, scale, c.causal);
      return o;
    };
    Vec o(q.size()), lse(static_cast<std::size_t>(c.B * c.H * c.T));
    reference::attention_forward_lse(o.data(), lse.data(), q.data(), k.data(), v.data(), c.B, c.H, c.T, c.S, c.D, scale, c.causal);
    Vec dq = bq, dk = bk, dv = bk;
    reference::attention_backward(dq.data(), dk.data(), dv.data(), g.data(), q.data(), k.data(), v.data(), lse.data(), c.B,
                                  c.H, c.T, c.S, c.D, scale, c.causal);
    SCOPED_TRACE(::testing::Message() << "B " << c.B << " H " << c.H << " T " << c.T << " S " << c.S << " D " << c.D
                                      << " causal " << c.causal);
    EXPECT_TRUE(matches_differences("Q", q, fwd, g, dq, bq));
    EXPECT_TRUE(matches_differences("K", k, fwd, g, dk, bk));
    EXPECT_TRUE(matches_differences("V", v, fwd, g, dv, bk));
  }
}

// The float oracle forward of attention.hpp and the templated one agree (the latter is what the backward is
// checked against).
TEST(Gradcheck, AttentionForwardsAgree) {
  const std::int64_t B = 2, H = 2, T = 5, S = 5, D = 4;
  std::vector<float> q(B * H * T * D), k(q.size()), v(q.size()), o1(q.size()), o2(q.size()), lse1(B * H * T), lse2(B * H * T);
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto* p : {&q, &k, &v})
    for (auto& x : *p) x = dist(gen);
  for (bool causal : {false, true}) {
    reference::attention_forward(o1.data(), lse1.data(), q.data(), k.data(), v.data(), B, H, T, S, D, 0.5f, causal);
    reference::attention_forward_lse(o2.data(), lse2.data(), q.data(), k.data(), v.data(), B, H, T, S, D, 0.5f, causal);
    for (std::size_t i = 0; i < o1.size(); ++i) EXPECT_EQ(o1[i], o2[i]) << i;
    for (std::size_t i = 0; i < lse1.size(); ++i) EXPECT_EQ(lse1[i], lse2[i]) << i;
  }
}

TEST(Gradcheck, Embedding) {
  const std::int64_t N = 9, V = 5, C = 3;
  const std::vector<int> ids = {4, 0, 2, 4, 4, 1, 0, 2, 4};  // 3 is never used: its row must stay as it was
  Vec table = random_vec(V * C, -1, 1, 61);
  const Vec g = random_vec(N * C, -1, 1, 62), base = random_vec(V * C, -1, 1, 63);
  Vec dt = base;
  reference::embedding_backward(dt.data(), g.data(), ids.data(), N, V, C);
  EXPECT_TRUE(matches_differences("table", table, [&] {
    Vec y(static_cast<std::size_t>(N * C));
    reference::embedding_forward(y.data(), ids.data(), table.data(), N, C);
    return y;
  }, g, dt, base));
}

TEST(Gradcheck, CrossEntropy) {
  const std::int64_t N = 7, V = 11;
  for (std::int64_t ignore : {-100, 3}) {
    const std::vector<std::int64_t> targets = {3, 0, 10, 3, 5, 3, 1};
    Vec logits = random_vec(N * V, -3, 3, 71);
    const Vec base = random_vec(N * V, -1, 1, 72);
    const double dloss = 0.7;
    Vec dl = base;
    reference::cross_entropy_backward(dl.data(), dloss, logits.data(), targets.data(), N, V, ignore);
    SCOPED_TRACE(::testing::Message() << "ignore_index " << ignore);
    EXPECT_TRUE(matches_differences("logits", logits, [&] {
      Vec loss(1);
      reference::cross_entropy_forward(loss.data(), static_cast<double*>(nullptr), static_cast<double*>(nullptr),
                                       logits.data(), targets.data(), N, V, ignore);
      return loss;
    }, Vec{dloss}, dl, base));
  }
}

TEST(Gradcheck, CrossEntropyAllIgnored) {
  const std::vector<int> targets = {-100, -100};
  Vec logits = random_vec(2 * 3, -1, 1, 81), dl(6, 0.5);
  double loss = 0;
  EXPECT_EQ(reference::cross_entropy_forward(&loss, static_cast<double*>(nullptr), static_cast<double*>(nullptr),
                                             logits.data(), targets.data(), 2, 3, -100), 0);
  EXPECT_TRUE(std::isnan(loss));
  reference::cross_entropy_backward(dl.data(), 1.0, logits.data(), targets.data(), 2, 3, -100);
  for (double d : dl) EXPECT_EQ(d, 0.5);
}

TEST(Gradcheck, Rope) {
  for (std::int64_t offset : {0, 13}) {
    const std::int64_t O = 2, T = 5, H = 3, D = 6;
    Vec x = random_vec(O * T * H * D, -1, 1, 91);
    const Vec g = random_vec(static_cast<std::int64_t>(x.size()), -1, 1, 92), base = random_vec(static_cast<std::int64_t>(x.size()), -1, 1, 93);
    Vec dx = base;
    reference::rope_backward(dx.data(), g.data(), O, T, H, D, 10000.0, offset);
    SCOPED_TRACE(::testing::Message() << "pos_offset " << offset);
    EXPECT_TRUE(matches_differences("X", x, [&] {
      Vec y(x.size());
      reference::rope_forward(y.data(), x.data(), O, T, H, D, 10000.0, offset);
      return y;
    }, g, dx, base));
  }
}

}  // namespace
}  // namespace ptk::test
