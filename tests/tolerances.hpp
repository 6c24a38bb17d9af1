#pragma once
// Every parity tolerance of the suite, in one place; docs/tolerances.md explains each one.
// A kernel value y passes against the float64 oracle's y_ref when |y - y_ref| <= atol + rtol * |y_ref|.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ptk::test {

struct Tolerance {
  double atol;
  double rtol;
  double allowed(double ref) const { return atol + rtol * std::fabs(ref); }
};

namespace tolerance {

constexpr double u = 0x1p-24;  // fp32 unit roundoff: one rounding moves a value by at most u relative
constexpr double tiny = 1e-37;  // results that underflow to 0 (or are flushed from denormals)

// A length-n fp32 sum of random-sign terms drifts like sqrt(n) roundings; 4 sqrt(n) + 8 leaves
// headroom for the worst tails of a few thousand elements without hiding a wrong index or scale.
inline double reduction(std::int64_t n) { return u * (8.0 + 4.0 * std::sqrt(static_cast<double>(n))); }

// The row ops sum in 32 slots, 8 terms plainly (7u) and then into a Kahan sum (2u + O(n u^2)),
// slots merged by exact two-sums (about u more): at most 10u + 2 n u^2 of the sum of the terms'
// magnitudes. It grows with n only through n u^2, so long rows keep fp32 accuracy.
inline double row_reduction(std::int64_t n) { return 2.0 * u * (5.0 + static_cast<double>(n) * u); }

// fast_exp (src/ptk/kernels/detail/fast_exp.hpp): relative error bound on [-87.3, 88.7], with or without FMA.
constexpr double fast_exp = 2.6 * u;

// An output a kernel writes in a 16-bit type (the row ops and activations over E = bf16, f16), from inputs stored
// in that type: the oracle runs on the stored values (exact as float), so the kernel's fp32 arithmetic keeps fp32's
// bound `t`, and the one rounding of the result to the type adds its unit roundoff `unit` (2^-8, 2^-11) relative,
// plus, for f16, half its subnormal spacing (2^-25) absolute. `unit` = 0 (f32) gives t back.
inline Tolerance stored_output(const Tolerance& t, double unit, double subnormal_half_step) {
  return {t.atol * (1.0 + unit) + subnormal_half_step, t.rtol + unit};
}

// matmul on inputs in [-1, 1]: partial sums grow like sqrt(k/9), so K roundings accumulate to
// ~0.24 u K absolute on average; 2 u K is about 8x that.
inline Tolerance matmul(std::int64_t K) { return {2.0 * u * static_cast<double>(K), 4.0 * u}; }

// softmax: outputs in [0, 1]; exp adds a few ulps, the row sum a reduction error, and a rounding of
// the scaled input x*scale perturbs exp's argument by u |scale x| (softmax's own conditioning).
inline Tolerance softmax(std::int64_t cols, double max_abs_scaled_input) {
  return {tiny, reduction(cols) + 2.0 * u * max_abs_scaled_input};
}

// layernorm / rmsnorm with gamma, beta in [-1, 1]: mean and variance carry a reduction error
// each, which moves every normalized value (|x̂| <~ 4 for the test data) by that relative amount.
inline Tolerance normalization(std::int64_t cols) { return {4.0 * reduction(cols), reduction(cols)}; }

// layernorm / rmsnorm on any row, hard ones included (docs/tolerances.md): the fp32 mean (and the
// mean and rstd of the compensated row sums) move every output by e = row_reduction(n) + 6u
// relative, times K = max |x| * rstd (the rows' magnitude over their spread) for the mean's share,
// and times |x̂| + 1 <= 6 for the rest.
inline Tolerance normalization_row(std::int64_t cols, double K) {
  const double e = row_reduction(cols) + 6.0 * u;
  return {e * (K + 6.0), e};
}

// softmax with compensated row sums and fast_exp: each exp is off by fast_exp plus u |scale x - max|
// (the rounding of its argument; `spread` is the largest |scale x - max|), the sum by
// row_reduction(n) + fast_exp, the division by 2u.
inline Tolerance softmax_row(std::int64_t cols, double spread) {
  return {tiny, row_reduction(cols) + 2.0 * fast_exp + 3.0 * u + u * spread};
}

// gelu / silu: x / (1 + exp(v)) with v computed in fp32. An error of d in v changes exp(v) by d
// relative; gelu's v = -2 sqrt(2/pi) (x + 0.044715 x^3) takes five roundings (x*x, *x, *0.044715,
// +x, *sqrt(2/pi)), so d <= ~5 u |v|, and 6 u |v| covers it; the rest is a few ulps of exp and /.
inline Tolerance activation(double exp_argument) { return {tiny, u * (8.0 + 6.0 * std::fabs(exp_argument))}; }

// Backward passes accumulate: dX += g. Each adds one rounding of the sum (u |dX_new|) to g's own
// error, and the oracle's result is itself a rounding of its float64 value (u): rtol 2u below.

// softmax backward, per element: g = scale·y·(dy − dot), dot = Σ y·dy a compensated row sum, off by
// (row_reduction(n) + u)·Σ|y dy| (the products round once each) plus its rounding to fp32, u |dot|;
// the subtraction and two products round once each. With scale_y = |scale·y|:
inline Tolerance softmax_backward(std::int64_t cols, double scale_y, double abs_dy, double abs_dot, double sum_abs_ydy) {
  return {tiny + scale_y * ((row_reduction(cols) + u) * sum_abs_ydy + 4.0 * u * (abs_dy + abs_dot)), 2.0 * u};
}

// layernorm / rmsnorm backward dX, per element: dx += r (g − mean(g) − x̂ mean(g x̂)), g = dy·γ, x̂ = (x − mean) r
// (rmsnorm: x r, and no mean(g) term). The two row means carry a compensated reduction error
// row_reduction(n) of Σ|g|/n and Σ|g x̂|/n plus a few roundings of their terms (x̂: 2u, g: u, g x̂: u) and
// of themselves; the expression adds five more. All are bounded by (row_reduction(n) + 10u) times
// magnitude = r (|g| + Σ|g|/n + |x̂| Σ|g x̂|/n), computed by the test per element.
inline Tolerance normalization_backward(std::int64_t cols, double magnitude) {
  return {tiny + (row_reduction(cols) + 10.0 * u) * magnitude, 2.0 * u};
}

// dgamma, dbeta, dweight: a column sum over the rows of terms t formed in fp32 with `term_error` relative
// error (dgamma: dy·x̂, x̂ carrying 2u, the product u: 3u; dbeta: dy, exact; rmsnorm's dweight: dy·(x·r), 2u).
// Each partial row adds up to 8 rows in fp32 (7u of their Σ|t|) before it adds them to a double sum
// (ColumnPartials in row_traits.hpp); the double sums add rows·2⁻⁵³ of Σ|t| and are rounded once.
inline Tolerance column_sum(std::int64_t rows, double sum_abs_terms, double term_error) {
  return {tiny + (term_error + 7.0 * u + static_cast<double>(rows) * 0x1p-53) * sum_abs_terms, 2.0 * u};
}

// gelu / silu backward, per element: dx += dy·(s + t), s = σ(−a), t = x·a'·s(1 − s), a the exp argument
// (gelu: −2√(2/π)(x + 0.044715x³), silu: −x). An error δ in a (gelu: 6u|a|, five roundings as in the
// forward; silu: exact) moves s by s(1 − s)·δ and t by |t|·δ; exp, 1/(1 + E), a', the products and the
// sum add ~14u of |s| + |t| (16u allowed). Where exp(−|a|) underflows (|a| > 86.9, fast_exp_nonpositive flushes
// below e^-86.9 = 1.8e-38) the kernel drops t and the small one of s, 1 − s: `lost` is their size (< 1e-35·|dy|).
inline Tolerance activation_backward(double abs_dy, double s_times_1_minus_s, double abs_s, double abs_t,
                                     double exp_argument_error, double lost) {
  return {tiny + lost + abs_dy * ((s_times_1_minus_s + abs_t) * exp_argument_error + 16.0 * u * (abs_s + abs_t)),
          2.0 * u};
}

// attention: a score s = scale * q·k is a length-D fp32 dot product (q pre-scaled: one more
// rounding), so its error is about (r(D) + 2u) * score_bound with score_bound = |scale| * sum_d |q_d k_d|.
// An error e in a score moves its probability by e relative and so the output, a convex combination
// of v in [-1, 1], by at most ~2e; the length-S weighted sum and the row sum add r(S) each.
inline double attention_score_error(std::int64_t D, double score_bound) { return (reduction(D) + 2.0 * u) * score_bound; }
inline Tolerance attention(std::int64_t D, std::int64_t S, double score_bound = 1.0) {
  return {2.0 * attention_score_error(D, score_bound) + reduction(S), reduction(S)};
}
// lse = max + log(sum): the max carries the score error, log(sum) the sum's relative error r(S).
inline Tolerance attention_lse(std::int64_t D, std::int64_t S, double score_bound = 1.0) {
  return {attention_score_error(D, score_bound) + reduction(S), 2.0 * u};
}

// matmul backward: each gradient element is an fp32 sum of `reduction` products (N for dA, M for dB, times the
// batch where a broadcast operand's gradient is summed over it) added to its old value: the forward's bound at
// that length (the final += is one more rounding of the result, inside rtol).
inline Tolerance matmul_backward(std::int64_t reduction) { return matmul(reduction); }

// attention backward. What the test measures per case (inputs, dO and the old gradients in [-1, 1]):
//   score    b = |scale|·max Σ_d |q_d k_d|, as the forward;   dov  g = max_{t,j} Σ_d |dO_td v_jd| >= |dP|;
//   drow     r = max_t Σ_d |dO_td O_td| >= |Drow|;           dout_l1 a = max_t Σ_d |dO_td|;
//   col_sum  c = max_j Σ_t P[t,j] (rows of P sum to 1; a column sums to ~T/S, more for early causal keys).
//   out_unit: the unit roundoff of O's storage (0: fp32 O; bf16 2⁻⁸, f16 2⁻¹¹: O was rounded once more).
struct AttentionBackwardBounds {
  double score, dov, drow, dout_l1, col_sum;
  double out_unit = 0;
};
// Relative error of one rebuilt probability P = exp(s − lse) (lse is an input, shared with the oracle): the
// score's error e, the rounding of s − lse (|s − lse| <= 2b + log S), fast_exp, and the product P·(dP − Drow).
inline double attention_prob_error(std::int64_t D, std::int64_t S, double b) {
  return attention_score_error(D, b) + fast_exp + u * (2.0 * b + std::log(static_cast<double>(S)) + 4.0);
}
// Absolute error of dP − Drow: dP is a length-D dot product, reduction(D)·g; Drow = dO·O reads the forward's O,
// off by at most the forward's bound errO, which moves Drow by a·errO, plus its own reduction(D)·r. A stored O
// (|O| <= 1) adds its rounding: errO·(1 + out_unit) + out_unit.
inline double attention_dsum_error(std::int64_t D, std::int64_t S, const AttentionBackwardBounds& m) {
  const Tolerance fwd = attention(D, S, std::max(1.0, m.score));
  return reduction(D) * (m.dov + m.drow) + m.dout_l1 * ((fwd.atol + fwd.rtol) * (1.0 + m.out_unit) + m.out_unit);
}
// dS = P (dP − Drow) has |dS| <= P·G with G = g + r, and error P·(ε_P·G + dsum error). A gradient sums n such
// terms times values in [-1, 1] with weights Σ P (c for a key, 1 for a query) and adds reduction(n) of that.
//   dV[j] = Σ_t P dO_t            (n = T):  c·(ε_P + reduction(T))
//   dK[j] = scale Σ_t dS Q_t      (n = T):  |scale|·c·((ε_P + reduction(T))·G + dsum error)
//   dQ[t] = scale Σ_j dS K_j      (n = S):  |scale|·((ε_P + reduction(S))·G + dsum error)
// rtol 4u: the += into the old value and the final multiplication by scale.
inline Tolerance attention_dv(std::int64_t D, std::int64_t T, std::int64_t S, const AttentionBackwardBounds& m) {
  const double ep = attention_prob_error(D, S, std::max(1.0, m.score));
  return {m.col_sum * (ep + reduction(T)), 4.0 * u};
}
inline Tolerance attention_dk(std::int64_t D, std::int64_t T, std::int64_t S, double scale,
                              const AttentionBackwardBounds& m) {
  const double ep = attention_prob_error(D, S, std::max(1.0, m.score));
  return {std::fabs(scale) * m.col_sum * ((ep + reduction(T)) * (m.dov + m.drow) + attention_dsum_error(D, S, m)),
          4.0 * u};
}
inline Tolerance attention_dq(std::int64_t D, std::int64_t S, double scale, const AttentionBackwardBounds& m) {
  const double ep = attention_prob_error(D, S, std::max(1.0, m.score));
  return {std::fabs(scale) * ((ep + reduction(S)) * (m.dov + m.drow) + attention_dsum_error(D, S, m)), 4.0 * u};
}

// embedding backward: dtable[v] += a sequential fp32 sum of the k rows of dout (values in [-1, 1]) that carry id v.
// The partial sums grow like sqrt(k/3), each of the k roundings is u times that: a random walk of size
// ~u·k/sqrt(3); reduction(k)·(1 + sqrt(k)) bounds it with the usual headroom. The forward is a copy (exact).
inline Tolerance embedding_backward(std::int64_t k) {
  const double r = reduction(k);
  return {r * (1.0 + std::sqrt(static_cast<double>(k))), r};
}

// cross-entropy, per row: lse = max + log Σ exp(l - max) with a V-term fp32 sum (reduction(V) relative, hence
// absolute in lse) and fp32 roundings of arguments of size up to |l| + log V (u each, a few of them).
// The per-row loss lse - l[target] carries the same absolute error; the mean adds a reduction over rows.
inline Tolerance cross_entropy(std::int64_t V, double max_abs_logit) {
  return {reduction(V) + 4.0 * u * (max_abs_logit + std::log(static_cast<double>(V)) + 1.0), 4.0 * u};
}
// cross-entropy backward: p = exp(l - lse) in fp32 has the relative error of its argument's absolute error
// (the forward's lse error, cross_entropy(V, …).atol); the gradient w·(p - [target]) inherits it times |w|.
inline Tolerance cross_entropy_backward(std::int64_t V, double max_abs_logit, double weight) {
  return {std::fabs(weight) * (cross_entropy(V, max_abs_logit).atol + 4.0 * u), 4.0 * u};
}

// rope: one rotation of an O(1) pair by fp32-rounded cos/sin (u each, the tables are computed in double):
// two products and a sum, a few u on an O(1) value. Backward adds one more rounding (the +=).
constexpr Tolerance rope{8.0 * u, 4.0 * u};

// sampling: p = exp((l - max) / T) in fp32 with fast_exp: the argument a = (l - max)·(1/T) carries three
// roundings (u |a| each), which exp turns into relative errors, plus fast_exp's own; normalizing divides by a
// V-term fp32 sum (reduction(V) relative) and rounds once more. Relative to each kept probability.
inline Tolerance sampling(std::int64_t V, double max_abs_argument) {
  return {tiny, fast_exp + 3.0 * u * max_abs_argument + reduction(V) + 2.0 * u};
}

// Gradient check (tests/gradcheck_test.cpp), all in double: an oracle backward's vector-Jacobian product
// against central differences (f(x + h) - f(x - h)) / 2h of f = Σ g·forward(x), h = kGradcheckStep.
// Truncation: h²/6 |f‴| = 1.7e-11 |f‴|; 1e-8 covers |f‴| up to ~600 (the test data keep it O(10)).
// Rounding: each f carries a few ε_64 = 2^-52 of F = Σ |g_i y_i|, amplified by 1/2h; 4 ε_64 F / h bounds it.
// rtol 1e-6 absorbs the h² term of large gradients. A wrong index, sign or factor misses by O(1) relative.
constexpr double kGradcheckStep = 1e-5;
inline Tolerance gradcheck(double f_abs) { return {1e-8 + 4.0 * 0x1p-52 * f_abs / kGradcheckStep, 1e-6}; }

// Autograd against central finite differences of the fp32 forward with step h: the difference quotient is
// off by h^2 |f'''| / 6 (truncation, ~1e-5 here) plus the forward's rounding noise eps |f| / h (eps a few u,
// |f| ~ 1-10: ~1e-5). Measured worst |autograd - fd|: 2.2e-5 (attention, at 0.47). 1e-4 + 1e-3 relative is
// 5-10x that and far below a real mistake (a dropped term or a transposed index moves a gradient by O(|f'|)).
constexpr double finite_difference_step = 1e-2;
constexpr Tolerance finite_difference{1e-4, 1e-3};

// One training step of a small GPT (2 layers, width 16, B·T = 21) through the fp32 kernels against the
// float64 oracle. The loss and each gradient pass through ~30 chained ops with reductions of up to 64
// terms forward and as many back, each adding a few u relative; gradients are compared with atol relative
// to the largest gradient of the same parameter (small entries are differences of larger terms). Measured:
// every gradient within 3e-6 of its parameter's largest, relative error up to 1e-5 on the larger entries;
// 1e-5 of the largest plus 1e-4 relative is about 10x that (docs/tolerances.md).
constexpr Tolerance model_step{1e-5, 1e-4};

// Generation with a KV cache against the float64 oracle's full recomputation (tests/inference_test.cpp): the
// same ~30 chained fp32 ops as a model step's forward, with decode attention's split-KV merge in place of flash
// attention and the decode matmul path in place of the GEMM; logits are O(1-10). Measured: see
// docs/tolerances.md; 2e-5 + 2e-4 relative is about 10x the worst.
constexpr Tolerance cached_logits{2e-5, 2e-4};
// The same logits where the decode matmul quantized its activations (q8_0 and q4_0 weights), against the oracle on
// unquantized activations: each linear layer's input moves by up to half a step of its block, amax/254, which the
// layers after it carry to the logits. Not derived: measured (docs/tolerances.md: worst 0.245, logits up to ~10)
// and set about 2.5x the worst.
constexpr Tolerance cached_logits_int8{0.6, 0};

}  // namespace tolerance
}  // namespace ptk::test
