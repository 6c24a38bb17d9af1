#pragma once
// The decode matmul over q8_0 and q4_0 weights (matmul_decode.hpp) multiplies integers, as llama.cpp does: x[R,K]
// is first quantized per block of 32 to int8 with a float scale d_x = amax/127 (quantize_rows), so that
//   y[r,n] = Σ_groups (d_w · d_x) · Σ_{i<4} q_w[i] · q_x[i]      (a group: 4 consecutive values of one block)
// where the inner sum is an exact integer and the outer one fp32. The host with AVX-512 VNNI (and VBMI, for W's
// scales) forms 16 groups (two blocks) of a pair with one vpdpbusd; the portable loop forms the same integers, scales
// and adds them with the same fp32 operations in the same order, so both give the same bits
// (MatmulDecode.QuantizedVnniEqualsPortable).
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ptk/core/allocate.hpp"
#include "ptk/core/buffer_pool.hpp"
#include "ptk/core/compat.hpp"
#include "ptk/core/quant.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/memory_hints.hpp"
#include "ptk/kernels/quantize_activations.hpp"

#if defined(PTK_HOST_AVX512) && defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VBMI__)
#define PTK_HOST_VNNI 1
#endif

namespace ptk::kernels {

constexpr int dot_group = 4;                                 // values one integer product covers (vpdpbusd's 4 bytes)
constexpr int block_groups = quant_block / dot_group;        // groups per block: 8

// x quantized per row: q[r, k] its integers, and per group g (values 4g .. 4g + 3) the block's scale d_x and
// −o·Σ q_x over the group, o the offset that makes W's integers unsigned for vpdpbusd (w_unsigned below).
template <class Space>
struct QuantizedRows {
  Kokkos::View<std::int8_t**, Kokkos::LayoutRight, Space> q;        // [R, K]
  Kokkos::View<float**, Kokkos::LayoutRight, Space> scale;          // [R, K / 4]
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Space> offset;  // [R, K / 4]
};

// The raw rows a kernel lane reads (pointers, so that the lane loops index as the float path does).
struct QuantizedRowsRef {
  const std::int8_t* q;
  const float* scale;
  const std::int32_t* offset;
  std::size_t ldq, ldg;  // values per row of q, groups per row of scale and offset
};

// vpdpbusd multiplies unsigned bytes by signed ones: W's integers go in as u = q + o (q8_0: q ^ 0x80 = q + 128;
// q4_0: the stored nibble, q + 8), and the group's −o·Σ q_x, added first, takes the o·Σ q_x back out.
template <class E>
inline constexpr int w_unsigned_offset = std::is_same_v<E, q8_0> || std::is_same_v<E, q8_0x16> ? 128 : 8;

// One block of x → its integers and the scale and offset of its 8 groups (block_to_int8: quantize_activations.hpp). A block with a non-finite value gets the scale NaN (so every output of its row is NaN,
// as the float product would make it NaN or ±inf) and integers 0.
template <class Space, class E>
struct QuantizeRows {
  ConstMatrix<Space> x;
  QuantizedRows<Space> out;

  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    const int blocks = static_cast<int>(x.extent(1)) / quant_block;
    const int r = i / blocks, k0 = (i % blocks) * quant_block;
    std::int8_t* q = &out.q(r, k0);
    const float scale = block_to_int8(&x(r, k0), q);
    for (int g = 0; g < block_groups; ++g) {
      int sum = 0;
      for (int t = 0; t < dot_group; ++t) sum += q[g * dot_group + t];
      out.scale(r, k0 / dot_group + g) = scale;
      out.offset(r, k0 / dot_group + g) = -w_unsigned_offset<E> * sum;
    }
  }
};

// x [R, K] (K a multiple of 32) quantized for a product with weights E, in buffers reused across calls while a
// ReuseBuffers scope lives (a decode step's linear layers).
template <class Space, class E>
QuantizedRows<Space> quantize_rows(const ConstMatrix<Space>& x) {
  const std::size_t R = x.extent(0), K = x.extent(1);
  QuantizedRows<Space> out{
      work_view<decltype(QuantizedRows<Space>::q)>("ptk::decode_x_q", R, K),
      work_view<decltype(QuantizedRows<Space>::scale)>("ptk::decode_x_scale", R, K / dot_group),
      work_view<decltype(QuantizedRows<Space>::offset)>("ptk::decode_x_offset", R, K / dot_group)};
  Kokkos::parallel_for("ptk::matmul_decode_quantize_x",
                       Kokkos::RangePolicy<Space>(0, static_cast<int>(R * (K / quant_block))),
                       QuantizeRows<Space, E>{x, out});
  return out;
}

// The 4 signed integers of group `first / 4` of a block (first = 0, 4, ..., 28).
KOKKOS_FORCEINLINE_FUNCTION void group_integers(const q8_0& b, int first, int (&out)[dot_group]) {
  for (int t = 0; t < dot_group; ++t) out[t] = b.qs[first + t];
}
KOKKOS_FORCEINLINE_FUNCTION void group_integers(const q4_0& b, int first, int (&out)[dot_group]) {
  constexpr int half = quant_block / 2;  // values 0..15 in the low nibbles of bytes 0..15, 16..31 in the high ones
  for (int t = 0; t < dot_group; ++t)
    out[t] = (first < half ? b.qs[first + t] & 0x0f : b.qs[first - half + t] >> 4) - 8;
}

// Slot l of pair (r, j) adds group g = b + l·V + v (if g < G) for the step of L·V groups at b, in portable code.
template <int R, int J, class Traits, class E>
KOKKOS_FORCEINLINE_FUNCTION void quantized_step(float (&acc)[R * J][Traits::lanes], const QuantizedRowsRef& x,
                                                const E* w, std::size_t ldw, int b, int G, int v) {
  constexpr int L = Traits::lanes, V = Traits::vector_length;
  for (int l = 0; l < L; ++l) {
    const int g = b + l * V + v;
    if (g >= G) break;
    const int blk = g / block_groups, first = (g % block_groups) * dot_group;
    int wq[J][dot_group];
    float dw[J];
    for (int j = 0; j < J; ++j) {
      const E& wb = w[j * ldw + blk];
      dw[j] = to_float(wb.d);
      group_integers(wb, first, wq[j]);
    }
    for (int r = 0; r < R; ++r) {
      const std::int8_t* xr = x.q + r * x.ldq + g * dot_group;
      const float dx = x.scale[r * x.ldg + g];
      for (int j = 0; j < J; ++j) {
        int s = 0;
        for (int t = 0; t < dot_group; ++t) s += wq[j][t] * xr[t];
        acc[r * J + j][l] = compat::mul_add(static_cast<float>(s), dw[j] * dx, acc[r * J + j][l]);
      }
    }
  }
}

#if defined(PTK_HOST_VNNI)
// W's 64 unsigned integers of blocks blk[0] and blk[1], in value order (vpdpbusd's lane l: values 4l .. 4l + 3).
inline __m512i w_unsigned(const q8_0* blk) {
  const __m512i q = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[0].qs))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[1].qs)), 1);
  return _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
}
inline __m512i w_unsigned(const q4_0* blk) {
  // 128-bit quarters: block 0's 16 bytes twice, block 1's twice; the second and fourth shifted down a nibble.
  const __m512i bytes = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[0].qs)))),
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[1].qs))), 1);
  const __m512i high = _mm512_mask_srli_epi16(bytes, 0xff00ff00u, bytes, 4);
  return _mm512_and_si512(high, _mm512_set1_epi8(0x0f));
}
// W's block scales, chunk_steps<E> steps (two blocks each) at a time: their f16 bits picked out of the 128 bytes
// from the chunk's first block with one byte permute (every scale lies within them: q4_0's 8 blocks of 18 bytes,
// q8_0's 4 of 34) and widened together, rather than two scalar loads and conversions a step.
template <class E>
inline constexpr int chunk_steps = std::is_same_v<E, q4_0> ? 4 : 2;
template <class E>
struct ScaleBytes {
  alignas(64) std::int8_t index[64] = {};  // byte 2i, 2i + 1 of the result: block i's scale
  constexpr ScaleBytes() {
    for (int i = 0; i < 2 * chunk_steps<E>; ++i) {
      index[2 * i] = static_cast<std::int8_t>(i * sizeof(E));
      index[2 * i + 1] = static_cast<std::int8_t>(i * sizeof(E) + 1);
    }
  }
};
template <class E>
inline constexpr ScaleBytes<E> scale_bytes{};

// The chunk's 2·chunk_steps scales as floats, block i in lane i.
template <class E>
inline __m256 chunk_scales(const E* blk) {
  const auto* p = reinterpret_cast<const char*>(blk);
  const __m512i picked = _mm512_permutex2var_epi8(_mm512_loadu_si512(p), _mm512_load_si512(scale_bytes<E>.index),
                                                  _mm512_loadu_si512(p + 64));
  return _mm256_cvtph_ps(_mm512_castsi512_si128(picked));
}

// quantized_step over whole steps of 16 groups (two blocks of every W row) from group 0, lane l of a register being
// slot l; returns the first group it left. Chunks of chunk_steps steps share one conversion of W's scales.
template <int R, int J, class Traits, class E>
inline int quantized_vnni_steps(float (&acc)[R * J][16], const QuantizedRowsRef& x, const E* w, std::size_t ldw,
                                int G) {
  constexpr int S = chunk_steps<E>;
  __m512 a[R * J];
  for (int i = 0; i < R * J; ++i) a[i] = _mm512_loadu_ps(acc[i]);
  int b = 0;
  for (; b + 16 * S <= G; b += 16 * S) {
    __m256 scales[J];
    for (int j = 0; j < J; ++j) scales[j] = chunk_scales(w + j * ldw + b / block_groups);
    for (int s = 0; s < S; ++s) {
      const int g = b + 16 * s;
      // Lanes 0-7 the step's first block's scale, 8-15 its second's.
      const __m512i pick = _mm512_set_epi32(2 * s + 1, 2 * s + 1, 2 * s + 1, 2 * s + 1, 2 * s + 1, 2 * s + 1, 2 * s + 1,
                                            2 * s + 1, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s, 2 * s);
      __m512i u[J];
      __m512 dw[J];
      for (int j = 0; j < J; ++j) {
        const E* wj = w + j * ldw;
        prefetch_items<Traits, 2 * quant_block>(wj, g * dot_group);
        u[j] = w_unsigned(wj + g / block_groups);
        dw[j] = _mm512_permutexvar_ps(pick, _mm512_castps256_ps512(scales[j]));
      }
      for (int r = 0; r < R; ++r) {
        const __m512i xq = _mm512_loadu_si512(x.q + r * x.ldq + g * dot_group);
        const __m512i off = _mm512_loadu_si512(x.offset + r * x.ldg + g);
        const __m512 dx = _mm512_loadu_ps(x.scale + r * x.ldg + g);
        for (int j = 0; j < J; ++j) {
          const __m512 sums = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(off, u[j], xq));
          a[r * J + j] = _mm512_fmadd_ps(sums, _mm512_mul_ps(dw[j], dx), a[r * J + j]);
        }
      }
    }
  }
  for (int i = 0; i < R * J; ++i) _mm512_storeu_ps(acc[i], a[i]);
  return b;
}
#endif

// Σ over the G = K/4 groups for every row r of x and each of J consecutive rows of W, in the lanes of vector lane v:
// slot l of a pair sums groups b + l·V + v of every step b, in order; the slots are then summed pairwise.
// Traits::int8_simd = false keeps the host on the portable loop (the test that both give the same bits).
template <int R, int J, class Traits, class E>
KOKKOS_INLINE_FUNCTION void quantized_lane_sums(float (&acc)[R * J][Traits::lanes], const QuantizedRowsRef& x,
                                                const E* w, std::size_t ldw, int G, int v) {
  constexpr int L = Traits::lanes, V = Traits::vector_length;
  int b = 0;
#if defined(PTK_HOST_VNNI)
  if constexpr (L == 16 && V == 1 && Traits::int8_simd) b = quantized_vnni_steps<R, J, Traits>(acc, x, w, ldw, G);
#endif
  for (; b < G; b += L * V) {
    for (int j = 0; j < J; ++j) prefetch_items<Traits, L * V * dot_group>(w + j * ldw, b * dot_group);
    quantized_step<R, J, Traits>(acc, x, w, ldw, b, G, v);
  }
}

}  // namespace ptk::kernels
