#pragma once
// Stored values read as float, whatever the element type (dtype.hpp): the one place a kernel written over E learns
// how E stores a value. float is a load; bf16 and f16 a conversion (exact); q8_0 and q4_0 a block's scale times
// its integer (exact in float). Kernels accumulate what these return in fp32.
#include <Kokkos_Core.hpp>

#include <type_traits>

#include "ptk/core/dtype.hpp"
#include "ptk/kernels/detail/memory_hints.hpp"

// g++ leaves the portable loops below scalar for f16, q8_0 and q4_0 (16 int-to-float conversions and, for f16,
// a branchy decode each): a host compiler with AVX-512 (PTK_HOST_AVX512, memory_hints.hpp) takes 16 values in a few
// vector instructions instead (f16 was 15x and q8_0 7x slower than bf16 before).

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

// A block's scale, returned, and its 32 integers as floats: lo[l] = q[l], hi[l] = q[L + l] (L = 16), in portable code.
template <int L, class E>
KOKKOS_FORCEINLINE_FUNCTION float load_block_integers_portable(const E& blk, float (&lo)[L], float (&hi)[L]) {
  static_assert(2 * L == quant_block, "two halves of a block");
  for (int l = 0; l < L; ++l) {
    if constexpr (std::is_same_v<E, q8_0>) {
      lo[l] = static_cast<float>(blk.qs[l]);
      hi[l] = static_cast<float>(blk.qs[L + l]);
    } else {
      lo[l] = static_cast<float>((blk.qs[l] & 0x0f) - 8);
      hi[l] = static_cast<float>((blk.qs[l] >> 4) - 8);
    }
  }
  return to_float(blk.d);
}

// load_lanes_portable's values, the same bits, through the host's vector instructions where it has them: 16 f16
// lanes of one vector lane (the host tunings' decode). Quantized weights on the host step over whole blocks
// instead (load_block_integers).
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

// load_block_integers_portable's values through the host's vector instructions where it has them.
template <int L, class E>
KOKKOS_FORCEINLINE_FUNCTION float load_block_integers(const E& blk, float (&lo)[L], float (&hi)[L]) {
#if defined(PTK_HOST_AVX512)
  if constexpr (L == 16) {
    __m512i q0, q1;
    if constexpr (std::is_same_v<E, q8_0>) {
      q0 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qs)));
      q1 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qs + L)));
    } else {
      const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qs)));
      const __m512i eight = _mm512_set1_epi32(8);
      q0 = _mm512_sub_epi32(_mm512_and_si512(bytes, _mm512_set1_epi32(0x0f)), eight);
      q1 = _mm512_sub_epi32(_mm512_srli_epi32(bytes, 4), eight);
    }
    _mm512_storeu_ps(lo, _mm512_cvtepi32_ps(q0));
    _mm512_storeu_ps(hi, _mm512_cvtepi32_ps(q1));
    return to_float(blk.d);
  }
#endif
  return load_block_integers_portable<L>(blk, lo, hi);
}

}  // namespace ptk::kernels
