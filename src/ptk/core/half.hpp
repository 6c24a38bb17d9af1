#pragma once
// The 16-bit element types: bf16 (bfloat16: float's sign and 8-bit exponent, 7 mantissa bits; unit roundoff 2^-8) and
// f16 (IEEE binary16: 5-bit exponent, 10 mantissa bits, subnormals; unit roundoff 2^-11), as storage: 16 bits that
// kernels convert to float, compute in float and round back. Plain integer code, the same on every Kokkos (3.4 has
// no bhalf_t) and every backend, host and device; a target's native conversion instruction can replace a body here
// without changing a result, since both are exact (to float) or round to nearest, ties to even (from float).
// NaN stays NaN (quiet, sign kept), ±inf stays ±inf; a float beyond the type's range rounds to ±inf as IEEE says
// (f16: |x| >= 65520; bf16: |x| >= 2^128 - 2^119); f16's subnormals are kept, down to 2^-24.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

// f16 to float with F16C's instruction in plain host compilers that target it (not under nvcc or hipcc), and with
// the CUDA device's own conversion (cvt.f32.f16) in CUDA device code.
#if defined(__F16C__) && !defined(__CUDACC__) && !defined(__HIPCC__)
#define PTK_F16C 1
#include <immintrin.h>
#endif
#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace ptk {

struct bf16 {
  std::uint16_t bits;
};
struct f16 {
  std::uint16_t bits;
};

// Bit casts: the builtin where a plain host compiler has it (a register move, in every build: ASan's debug build
// intercepts memcpy, a call a value that made the 16-bit tests there several times slower); memcpy under nvcc and
// hipcc, whose front ends may lack the builtin.
#if defined(__has_builtin) && !defined(__CUDACC__) && !defined(__HIPCC__)
#if __has_builtin(__builtin_bit_cast)
#define PTK_BIT_CAST 1
#endif
#endif
namespace detail {
KOKKOS_INLINE_FUNCTION std::uint32_t bits_of(float x) {
#if defined(PTK_BIT_CAST)
  return __builtin_bit_cast(std::uint32_t, x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
KOKKOS_INLINE_FUNCTION float float_of(std::uint32_t u) {
#if defined(PTK_BIT_CAST)
  return __builtin_bit_cast(float, u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
// value >> shift, rounded to nearest, ties to even (shift in 1 … 31).
KOKKOS_INLINE_FUNCTION std::uint32_t shift_round_even(std::uint32_t value, int shift) {
  const std::uint32_t kept = value >> shift, rest = value & ((1u << shift) - 1u), half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}
}  // namespace detail

KOKKOS_INLINE_FUNCTION float to_float(bf16 x) { return detail::float_of(static_cast<std::uint32_t>(x.bits) << 16); }

// Branch-free (a select), so that a loop of them vectorizes.
KOKKOS_INLINE_FUNCTION bf16 to_bf16(float x) {
  const std::uint32_t u = detail::bits_of(x);
  // The low 16 bits rounded away, to nearest, ties to even: adding 0x7fff plus the kept part's lowest bit carries
  // exactly when the rest is above half, or half with an odd kept part (shift_round_even(u, 16)). A carry moves
  // into the exponent (the largest finite values round up to inf); no finite u overflows.
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (u >> 16) | 0x0040u;  // NaN: the top of its payload, made quiet
  return bf16{static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded)};
}

namespace detail {
KOKKOS_INLINE_FUNCTION float f16_to_float_portable(f16 x) {
  const std::uint32_t sign = static_cast<std::uint32_t>(x.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (x.bits >> 10) & 0x1fu, mantissa = x.bits & 0x3ffu;
  if (exponent == 0x1fu) return float_of(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {  // zero and subnormals: mantissa · 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
    return float_of(sign | bits_of(magnitude));
  }
  return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));  // rebias 15 -> 127
}

// The same value with bit masks instead of branches, so that a loop of them vectorizes (widen, dtype.hpp): the
// scalar F16C instruction of to_float stops g++'s vectorizer, the branches above do too, and so do selects (g++ will
// not move the subnormal's float multiply under a condition: it may trap).
KOKKOS_INLINE_FUNCTION float f16_to_float_masked(f16 x) {
  const std::uint32_t h = x.bits, sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  // zero and subnormals: mantissa · 2^-24 (an int conversion: exact), taken where the exponent is 0.
  const std::uint32_t small = bits_of(static_cast<float>(static_cast<std::int32_t>(mantissa)) * 5.9604644775390625e-08f);
  const std::uint32_t top = 0u - static_cast<std::uint32_t>(exponent == 0x1fu);  // all ones for inf and NaN
  const std::uint32_t zero = 0u - static_cast<std::uint32_t>(exponent == 0);
  // Rebias 15 -> 127; inf and NaN take float's top exponent (143 | 255 = 255).
  const std::uint32_t normal = (((exponent + 112u) | (top & 0xffu)) << 23) | (mantissa << 13);
  return float_of(sign | (small & zero) | (normal & ~zero));
}
}  // namespace detail

// The host's F16C instruction where the compiler targets it, the CUDA device's conversion in CUDA device code (the
// same value: all are exact; the integer code's branches made the f16 decode matmul 0.75x bf16's speed on an H100),
// else the integer code.
KOKKOS_INLINE_FUNCTION float to_float(f16 x) {
#if defined(PTK_F16C)
  return _cvtsh_ss(x.bits);
#elif defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(x.bits));
#else
  return detail::f16_to_float_portable(x);
#endif
}

KOKKOS_INLINE_FUNCTION f16 to_f16(float x) {
  const std::uint32_t u = detail::bits_of(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  std::uint32_t h;
  if (a > 0x7f800000u) h = 0x7e00u | ((a >> 13) & 0x3ffu);     // NaN: quiet, the top of its payload
  else if (a >= 0x47800000u) h = 0x7c00u;                       // >= 2^16 (and inf): inf
  else if (a >= 0x38800000u) h = detail::shift_round_even(a - 0x38000000u, 13);  // normal (rebias 127 -> 15);
                                                                 // a carry may reach the next binade or inf
  else if (a > 0x33000000u)                                      // (2^-25, 2^-14): a subnormal, or 2^-14
    h = detail::shift_round_even((a & 0x7fffffu) | 0x800000u, 126 - static_cast<int>(a >> 23));
  else h = 0;  // <= 2^-25: zero (2^-25 itself is a tie with 2^-24, whose bits are odd)
  return f16{static_cast<std::uint16_t>(sign | h)};
}

}  // namespace ptk
