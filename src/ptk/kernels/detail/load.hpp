#pragma once
// Stored values read as float, whatever the element type (dtype.hpp): the one place a kernel written over E learns
// how E stores a value. float is a load; bf16 and f16 a conversion (exact); q8_0 and q4_0 a block's scale times
// its integer (exact in float). Kernels accumulate what these return in fp32.
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <type_traits>

#include "ptk/core/dtype.hpp"
#include "ptk/kernels/detail/memory_hints.hpp"

// g++ leaves the portable loops below scalar for f16 (a branchy decode a value): a host compiler with AVX-512
// (PTK_HOST_AVX512, memory_hints.hpp) converts 16 values with one instruction instead (f16 was 15x slower than bf16
// before). The decode matmul over q8_0 and q4_0 weights multiplies integers instead (matmul_decode_quantized.hpp).

namespace ptk::kernels {

// Value k of a row of items.
template <class E>
KOKKOS_FORCEINLINE_FUNCTION float load(const E* row, int k) {
  if constexpr (std::is_same_v<E, float>) {
    return row[k];
  } else if constexpr (Element<E>::block == 1) {
    return to_float(row[k]);
  } else {
    return value(row[k / quant_block], k % quant_block);
  }
}

// out[l] = value b + l·V + v of a row, for l < L, where b is a multiple of L·V, in portable code. With one vector
// lane (V = 1) and L dividing the block, the L values lie in one block: its scale is read once and, for q4_0, in
// one half of its bytes (one shift for all).
template <int L, int V, class E>
KOKKOS_FORCEINLINE_FUNCTION void load_lanes_portable(const E* row, int b, int v, float (&out)[L]) {
  if constexpr (Element<E>::block > 1 && V == 1 && quant_block % L == 0) {
    const E& blk = row[b / quant_block];
    const float d = to_float(blk.d);
    const int first = b % quant_block;
    if constexpr (std::is_same_v<E, q8_0>) {
      for (int l = 0; l < L; ++l) out[l] = d * static_cast<float>(blk.qs[first + l]);
    } else {
      static_assert(L <= quant_block / 2, "q4_0 lanes must lie in one half of a block");
      const int shift = first >= quant_block / 2 ? 4 : 0, byte = first % (quant_block / 2);
      for (int l = 0; l < L; ++l) out[l] = d * static_cast<float>(((blk.qs[byte + l] >> shift) & 0x0f) - 8);
    }
  } else {
    for (int l = 0; l < L; ++l) out[l] = load(row, b + l * V + v);
  }
}

// load_lanes_portable's values, the same bits, through the host's vector instructions where it has them: 16 f16
// lanes of one vector lane (the host tunings' decode).
template <int L, int V, class E>
KOKKOS_FORCEINLINE_FUNCTION void load_lanes(const E* row, int b, int v, float (&out)[L]) {
#if defined(PTK_HOST_AVX512)
  if constexpr (L == 16 && V == 1 && std::is_same_v<E, f16>) {
    _mm512_storeu_ps(out, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b))));
    return;
  }
#endif
  load_lanes_portable<L, V>(row, b, v, out);
}

// A 16 x 16 tile read transposed, as a GEMM packs a row-major operand into k-major panels (matmul_blocked.hpp): value k
// of row j (rows `ld` items apart) goes to lo[k · ldd + j] for j < 8 and to hi[k · ldd + j - 8] for j >= 8 (hi = lo + 8
// where both halves lie in one panel). A host with AVX-512 loads the 16 rows as vectors and transposes them in
// registers (64 shuffles a tile); the portable copy stores one value at a time, and that store, strided, was most of a
// 16-row prefill GEMM's time.
template <class E>
KOKKOS_FORCEINLINE_FUNCTION void load_transposed_16_portable(const E* src, std::size_t ld, float* lo, float* hi,
                                                             std::size_t ldd) {
  for (int j = 0; j < 16; ++j)
    for (int k = 0; k < 16; ++k) (j < 8 ? lo + j : hi + (j - 8))[k * ldd] = load(src + j * ld, k);
}

#if defined(PTK_HOST_AVX2)
// An 8 x 8 block of floats (rows ld apart) stored transposed: column k of the block to dst + k · ldd. Pairs of rows
// interleaved by 32 bits, groups of four by 64 bits, then the 128-bit halves exchanged (24 shuffles a block).
KOKKOS_FORCEINLINE_FUNCTION void store_transposed_8x8(const float* src, std::size_t ld, float* dst, std::size_t ldd) {
  __m256 r[8], t[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + j * ld);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int g = 0; g < 8; g += 4) {  // r[g + c] holds, in half H, rows g .. g+3 at column 4H + c
    r[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
    r[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xEE);
    r[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
    r[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
  }
  for (int c = 0; c < 4; ++c) {
    _mm256_storeu_ps(dst + c * ldd, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
    _mm256_storeu_ps(dst + (4 + c) * ldd, _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
  }
}
#endif

// load_transposed_16_portable's values, the same bits, through the host's vector instructions where it has them.
template <class E>
KOKKOS_FORCEINLINE_FUNCTION void load_transposed_16(const E* src, std::size_t ld, float* lo, float* hi, std::size_t ldd) {
#if defined(PTK_HOST_AVX2)
  if constexpr (std::is_same_v<E, float>) {
    for (int h = 0; h < 2; ++h)    // rows 0-7 to lo, 8-15 to hi
      for (int c = 0; c < 2; ++c)  // columns 0-7, 8-15: values k = 8c .. 8c+7
        store_transposed_8x8(src + 8 * h * ld + 8 * c, ld, (h == 0 ? lo : hi) + 8 * c * ldd, ldd);
    return;
  } else if constexpr (std::is_same_v<E, bf16> || std::is_same_v<E, f16>) {
    float wide[16][16];
    for (int j = 0; j < 16; ++j) widen_block<16>(src + j * ld, wide[j]);
    return load_transposed_16(&wide[0][0], 16, lo, hi, ldd);
  }
#endif
#if defined(PTK_HOST_AVX512)
  if constexpr (std::is_same_v<E, float> || std::is_same_v<E, bf16> || std::is_same_v<E, f16>) {
    __m512 r[16], t[16];
    for (int j = 0; j < 16; ++j) {
      if constexpr (std::is_same_v<E, float>) {
        r[j] = _mm512_loadu_ps(src + j * ld);
      } else {
        float wide[16];
        widen_block<16>(src + j * ld, wide);
        r[j] = _mm512_loadu_ps(wide);
      }
    }
    // Within each 128-bit lane: pairs of rows interleaved by 32 bits, then groups of four rows by 64 bits; r[4g + c]
    // then holds, in lane L, rows 4g .. 4g+3 at column 4L + c.
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 16; g += 4) {
      r[g] = _mm512_shuffle_ps(t[g], t[g + 2], 0x44);
      r[g + 1] = _mm512_shuffle_ps(t[g], t[g + 2], 0xEE);
      r[g + 2] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0x44);
      r[g + 3] = _mm512_shuffle_ps(t[g + 1], t[g + 3], 0xEE);
    }
    // Column 4L + c gathers lane L of r[c], r[4 + c], r[8 + c], r[12 + c]: two rounds of 128-bit lane shuffles.
    const auto store = [&](int k, __m512 v) {
      if (hi == lo + 8) {
        _mm512_storeu_ps(lo + k * ldd, v);
      } else {
        _mm256_storeu_ps(lo + k * ldd, _mm512_castps512_ps256(v));
        _mm256_storeu_ps(hi + k * ldd, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
      }
    };
    for (int c = 0; c < 4; ++c) {
      const __m512 v0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88), v1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);
      const __m512 v2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
      const __m512 v3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
      store(c, _mm512_shuffle_f32x4(v0, v2, 0x88));
      store(4 + c, _mm512_shuffle_f32x4(v1, v3, 0x88));
      store(8 + c, _mm512_shuffle_f32x4(v0, v2, 0xDD));
      store(12 + c, _mm512_shuffle_f32x4(v1, v3, 0xDD));
    }
    return;
  }
#endif
  load_transposed_16_portable(src, ld, lo, hi, ldd);
}

}  // namespace ptk::kernels
