#pragma once
// Stored values read as float, whatever the element type (dtype.hpp): the one place a kernel written over E learns
// how E stores a value. float is a load; bf16 and f16 a conversion (exact); q8_0 and q4_0 a block's scale times
// its integer (exact in float). Kernels accumulate what these return in fp32.
#include <Kokkos_Core.hpp>

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

}  // namespace ptk::kernels
