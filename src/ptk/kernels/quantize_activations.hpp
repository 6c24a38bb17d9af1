#pragma once
// quantize_activations: x[R,K] -> y[R,K], K a multiple of 32: per block of 32 along a row, d = max|x| / 127 (float),
// q = round(x / d) (halves away from zero, within ±127), y = q · d (one rounding); a block holding NaN or ±inf is NaN.
// What a product with q8_0 or q4_0 weights multiplies W by, on every path (llama.cpp rounds its activations to q8
// blocks for such weights whatever the batch): the decode kernel takes d and q as they are (matmul_decode_quantized.hpp);
// the GEMM of a prefill takes y. block_scale and block_integer are the one definition of d and q for both.
#include <Kokkos_Core.hpp>

#include <cstdint>

#include "ptk/core/quant.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/memory_hints.hpp"  // PTK_HOST_AVX512
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

// A block's scale, and whether its values can be divided by it. poison is Σ (v − v): 0 if every value is finite,
// else NaN, which a kernel adds to the scale so that the block's products are NaN.
struct BlockScale {
  float d, poison;
  KOKKOS_INLINE_FUNCTION bool usable() const { return poison == 0.0f && d > 0.0f; }
};

KOKKOS_INLINE_FUNCTION BlockScale block_scale(const float* x) {
  float amax = 0.0f, poison = 0.0f;
  for (int k = 0; k < quant_block; ++k) {
    const float v = x[k], a = v < 0.0f ? -v : v;
    poison += v - v;
    amax = a > amax ? a : amax;
  }
  return BlockScale{amax / 127.0f, poison};
}

// v's integer in a block of scale s: |v / d| <= 127 but for a denormal d, where 1 / d is inexact (clamped); 0 where
// the block is all zeros or not finite.
KOKKOS_INLINE_FUNCTION int block_integer(float v, const BlockScale& s) {
  float t = s.usable() ? v / s.d : 0.0f;
  t = t > 127.0f ? 127.0f : t < -127.0f ? -127.0f : t;
  return ptk::detail::round_half_away(t);
}

// One block of 32: y = q · d + poison (block_scale, block_integer).
KOKKOS_INLINE_FUNCTION void round_block_to_int8_portable(const float* x, float* y) {
  const BlockScale s = block_scale(x);
  for (int k = 0; k < quant_block; ++k) y[k] = static_cast<float>(block_integer(x[k], s)) * s.d + s.poison;
}

// One block of 32 as the decode kernel takes it: q[k] its integers, and the scale d + poison returned.
KOKKOS_INLINE_FUNCTION float block_to_int8_portable(const float* x, std::int8_t* q) {
  const BlockScale s = block_scale(x);
  for (int k = 0; k < quant_block; ++k) q[k] = static_cast<std::int8_t>(block_integer(x[k], s));
  return s.d + s.poison;
}

// The same bits 16 values at a time where the host has AVX-512: g++ leaves the portable loops scalar and branchy
// (about 6 ns a value: a quarter of a q8_0 prefill, a seventh of a q4_0 decode step; docs/benchmarks.md). A block
// with a NaN or an infinity takes the portable loop, so its NaNs are the portable ones too.
#if defined(PTK_HOST_AVX512)
namespace avx512 {
// Whether the block's values (lo, hi) are all finite (v − v is +0 for a finite v, NaN otherwise: block_scale's
// poison), and then their scale: the largest magnitude over 127, the same value in any order (|−0| is +0).
inline bool finite_scale(__m512 lo, __m512 hi, float& d) {
  const __m512 zero = _mm512_setzero_ps();
  if ((_mm512_cmp_ps_mask(_mm512_sub_ps(lo, lo), zero, _CMP_EQ_OQ) &
       _mm512_cmp_ps_mask(_mm512_sub_ps(hi, hi), zero, _CMP_EQ_OQ)) != 0xFFFF)
    return false;
  d = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi))) / 127.0f;
  return true;
}
// block_integer of 16 values for a scale d > 0, as floats: v / d clamped to ±127, then truncated and moved one step
// away from zero at a remainder of at least a half.
inline __m512 integers(__m512 v, __m512 dv) {
  const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
  const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(v, dv), _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  const __m512 whole = _mm512_roundscale_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), f = _mm512_sub_ps(t, whole);
  const __m512 q = _mm512_mask_add_ps(whole, _mm512_cmp_ps_mask(f, half, _CMP_GE_OQ), whole, one);
  return _mm512_mask_sub_ps(q, _mm512_cmp_ps_mask(f, _mm512_sub_ps(_mm512_setzero_ps(), half), _CMP_LE_OQ), q, one);
}
}  // namespace avx512
#endif

KOKKOS_FORCEINLINE_FUNCTION void round_block_to_int8(const float* x, float* y) {
#if defined(PTK_HOST_AVX512)
  const __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16), zero = _mm512_setzero_ps();
  float d = 0.0f;
  if (avx512::finite_scale(lo, hi, d)) {
    if (!(d > 0.0f)) {  // all zeros, or a scale below the smallest denormal: every q is 0, every y +0
      _mm512_storeu_ps(y, zero);
      _mm512_storeu_ps(y + 16, zero);
      return;
    }
    // y = q · d + 0 (the + 0 makes a −0 from a truncated −0.3 the portable +0).
    const __m512 dv = _mm512_set1_ps(d);
    _mm512_storeu_ps(y, _mm512_add_ps(_mm512_mul_ps(avx512::integers(lo, dv), dv), zero));
    _mm512_storeu_ps(y + 16, _mm512_add_ps(_mm512_mul_ps(avx512::integers(hi, dv), dv), zero));
    return;
  }
#endif
  round_block_to_int8_portable(x, y);
}

KOKKOS_FORCEINLINE_FUNCTION float block_to_int8(const float* x, std::int8_t* q) {
#if defined(PTK_HOST_AVX512)
  const __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16);
  float d = 0.0f;
  if (avx512::finite_scale(lo, hi, d)) {
    if (!(d > 0.0f)) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_setzero_si256());
      return d;
    }
    const __m512 dv = _mm512_set1_ps(d);  // the integers are whole floats: converting them is exact
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(avx512::integers(lo, dv))));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(avx512::integers(hi, dv))));
    return d;
  }
#endif
  return block_to_int8_portable(x, q);
}

template <class Space>
void quantize_activations(const Matrix<Space>& y, const ConstMatrix<Space>& x) {
  const int blocks = static_cast<int>(x.extent(1)) / quant_block;
  Kokkos::parallel_for(
      "ptk::quantize_activations", Kokkos::RangePolicy<Space>(0, static_cast<int>(x.extent(0)) * blocks),
      KOKKOS_LAMBDA(const int i) {
        const int r = i / blocks, k0 = (i % blocks) * quant_block;
        round_block_to_int8(&x(r, k0), &y(r, k0));
      });
}

}  // namespace ptk::kernels

#define PTK_QUANTIZE_ACTIVATIONS_SPACE_INSTANCES(EXT, Space) \
  EXT template void quantize_activations<Space>(const Matrix<Space>& y, const ConstMatrix<Space>& x);
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_QUANTIZE_ACTIVATIONS_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
