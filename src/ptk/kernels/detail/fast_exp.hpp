#pragma once
// fast_exp(x) ≈ e^x in fp32 with straight-line arithmetic (no library call, no table), so that a
// loop over it vectorizes on the host and stays a handful of FMAs on a GPU. The FMAs are written
// (compat::mul_add), so a unit compiled without contraction gets the same bits as one with it.
// docs/tolerances.md derives its error: within 2.6 u relative of e^x (u = 2^-24) for x in [-87.3, 88.7]
// (2.0 u with FMA; 1.32 u measured exhaustively with FMA); below that the result is flushed to +0
// (e^x < FLT_MIN), above it +inf; NaN stays NaN.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

#include "ptk/core/compat.hpp"

namespace ptk::kernels {

// min(max(x, lo), hi), NaN kept, as a select on the bits. The plain ternaries let g++ 12 thread
// the clamped paths into copies of the caller's code with the bound constant-folded in, merged
// back with masked AVX-512 ops (two or three masked divisions per vector in silu); this form
// compiles to two compares, masked moves and a bit blend, and the rest stays unmasked.
KOKKOS_INLINE_FUNCTION float clamp_select(float x, float lo, float hi) {
  std::uint32_t xb, lb, hb;
  std::memcpy(&xb, &x, sizeof xb);
  std::memcpy(&lb, &lo, sizeof lb);
  std::memcpy(&hb, &hi, sizeof hb);
  const std::uint32_t ml = 0u - static_cast<std::uint32_t>(x < lo);
  const std::uint32_t mh = 0u - static_cast<std::uint32_t>(x > hi);
  const std::uint32_t rb = (xb & ~(ml | mh)) | (lb & ml) | (hb & mh);
  float r;
  std::memcpy(&r, &rb, sizeof r);
  return r;
}

// e^r for |r| <= ln2 / 2 (0.3466): a polynomial of degree 6, 1 + r + r^2 (c2 + c3 r + ... + c6 r^4),
// its five coefficients fitted for the least maximum relative error on that interval (a linear
// program over 8001 points, then rounded to float): 0.074 u from e^r, less than the 0.1 u that the
// degree-7 Taylor polynomial it replaced left, with one FMA fewer. `times` (a power of two, a
// constant at the call) scales every coefficient, so the result comes out multiplied by it exactly.
KOKKOS_FORCEINLINE_FUNCTION float exp_reduced(float r, float times = 1.0f) {
  using compat::mul_add;
  float p = times * 0x1.6a2352p-10f;
  p = mul_add(p, r, times * 0x1.123a6cp-7f);
  p = mul_add(p, r, times * 0x1.5558f4p-5f);
  p = mul_add(p, r, times * 0x1.55549p-3f);
  p = mul_add(p, r, times * 0x1.fffffcp-2f);
  p = mul_add(p, r, times);
  return mul_add(p, r, times);
}

// The argument reduction all three variants share: e^x = 2^n · e^r with n = round(x / ln 2) and
// |r| <= ln2 / 2 (Cody–Waite: ln 2 split into a 9-bit head, so n · head is exact for |n| <= 128, and
// a tail). `shifted` = x · log2e + 1.5 · 2^23 (adding that rounds to an integer) holds n in its low
// mantissa bits; each variant builds its 2^n from those bits.
struct ExpReduction {
  float shifted, r;
};
constexpr float exp_round_magic = 12582912.0f;           // 1.5 · 2^23
constexpr std::uint32_t exp_round_magic_bits = 0x4B400000u;  // its bits

KOKKOS_FORCEINLINE_FUNCTION ExpReduction exp_reduce(float x) {
  constexpr float log2e = 1.44269504088896341f;
  constexpr float ln2_head = 0.693359375f;
  constexpr float ln2_tail = -2.12194440e-4f;
  const float shifted = compat::mul_add(x, log2e, exp_round_magic);
  const float n = shifted - exp_round_magic;
  return ExpReduction{shifted, compat::mul_add(-n, ln2_tail, compat::mul_add(-n, ln2_head, x))};
}

KOKKOS_INLINE_FUNCTION float fast_exp(float x) {
  const float hi_clamp = 88.7228394f, lo_clamp = -87.3365479f;  // ln(FLT_MAX), ln(FLT_MIN)
  const float xc = clamp_select(x, lo_clamp, hi_clamp);  // a bit select: see clamp_select
  const ExpReduction red = exp_reduce(xc);
  const float p = exp_reduced(red.r);

  // 2^n from the exponent bits: n is in [-126, 128]; 2^128 is split as 2 · 2^127. The bit
  // arithmetic is unsigned: for a NaN input `shifted` holds arbitrary bits, and a left shift of a
  // negative signed value would be undefined (that lane's result is replaced by x below).
  std::uint32_t shifted_bits;
  std::memcpy(&shifted_bits, &red.shifted, sizeof shifted_bits);
  const std::uint32_t ni = shifted_bits - exp_round_magic_bits;  // n mod 2^32
  const std::uint32_t half = (ni == 128u) ? 1u : 0u;
  const std::uint32_t scale_bits = (ni - half + 127u) << 23;
  float scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  const float y = p * scale * (half ? 2.0f : 1.0f);

  const float inf = __builtin_huge_valf();
  return x > hi_clamp ? inf : (x < lo_clamp ? 0.0f : (x == x ? y : x));
}

// e^x for the activations, without fast_exp's special-value selects: the caller gets
// e^min(max(x, -80), 88.72) (NaN stays NaN: it fails both comparisons and then poisons the
// arithmetic). The low clamp keeps n >= -116, so 2^(n-1) is a normal float and the polynomial can
// carry the factor 2 (its coefficients doubled: exact), which makes n = 128 need no split; above
// 88.72 the result is finite (near FLT_MAX) and the caller must select its own limit. Same
// polynomial and reduction as fast_exp, so within fast_exp's error on [-80, 88.72]; below -80 the
// result is e^-80 (1.8e-35), which the activations add to 1 and which vanishes there.
KOKKOS_INLINE_FUNCTION float fast_exp_clamped(float x) {
  const float lo = -80.0f, hi = 88.7228394f;
  const ExpReduction red = exp_reduce(clamp_select(x, lo, hi));
  const float p = exp_reduced(red.r, 2.0f);

  // The low 9 bits of `shifted` hold n + 0x400000's low bits = n mod 2^9 offset; shifting left by
  // 23 drops round_magic's bits (0x4B400000 << 23 == 0 mod 2^32) and leaves n << 23; adding 126
  // << 23 biases it to 2^(n-1). Unsigned, so a NaN's arbitrary bits are well defined.
  std::uint32_t shifted_bits;
  std::memcpy(&shifted_bits, &red.shifted, sizeof shifted_bits);
  const std::uint32_t scale_bits = (shifted_bits + 126u) << 23;
  float scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return p * scale;
}

// Below this, fast_exp_nonpositive returns +0 (e^-86.9 = 1.8e-38, just above FLT_MIN = 1.2e-38):
// from it up, n >= -125, so p · 2^n is a normal float and 2^n can be applied to p's exponent bits.
constexpr float fast_exp_nonpositive_floor = -86.9f;

// e^x for x <= ~1 (softmax's x - max, the activations' -|v|), with no clamp and no overflow
// selects: for x in [-86.9, 1], n is in [-125, 1] and 2^n is applied by adding n to p's exponent
// field (an integer add instead of a multiply, for softmax's exp sweep, which is bound by
// floating-point issue). Below the floor (x = -inf included) a bit mask clears whatever the
// arithmetic gave to +0; for a NaN x the exponent add is masked off, so p's NaN comes through
// whatever its payload. Same reduction and polynomial as fast_exp, and the same result bit for bit
// on [-86.9, 1] (a multiply by 2^n is exact there). (The clamp this had cost 6 of ~20 vector ops;
// the exponent add saved another multiply: softmax 4096x512 +9 %.)
KOKKOS_INLINE_FUNCTION float fast_exp_nonpositive(float x) {
  const ExpReduction red = exp_reduce(x);
  const float p = exp_reduced(red.r);

  // The low 9 bits of `shifted` hold n mod 2^9; shifted left by 23 they are n's addend to an
  // exponent field (round_magic's bits shift out), modulo 2^32: unsigned, so any bits are defined.
  std::uint32_t shifted_bits, bits;
  std::memcpy(&shifted_bits, &red.shifted, sizeof shifted_bits);
  std::memcpy(&bits, &p, sizeof bits);
  bits += (shifted_bits << 23) & (0u - static_cast<std::uint32_t>(x == x));
  // +0 below the floor, as a bit mask (a ternary here made g++ 12 leave the loop scalar).
  bits &= 0u - static_cast<std::uint32_t>(!(x < fast_exp_nonpositive_floor));
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

}  // namespace ptk::kernels
