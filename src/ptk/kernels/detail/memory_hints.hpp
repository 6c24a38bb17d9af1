#pragma once
// How kernels touch memory where the target decides the instruction, and nothing else: the host's
// software prefetch ahead of a stream and non-temporal (streaming) stores for outputs too large for
// the cache (no-ops on a GPU and in device passes; the x86 intrinsics appear only here), and the
// GPU's 16-byte vector loads from team scratch (plain loads on the host).
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

#include "ptk/core/dtype.hpp"
// Streaming stores (store_block) use x86 intrinsics: only in plain host compilers (not under nvcc
// or hipcc, whose GPU builds keep plain stores on the host too).
#if defined(__SSE__) && !defined(__CUDACC__) && !defined(__HIPCC__)
#define PTK_STREAMING_STORES 1
#include <immintrin.h>
#endif
// 16 values an instruction where the portable code stays scalar (f16 conversions, quantized loads: load.hpp,
// store_rounded and widen_block below), in plain host compilers that target AVX-512 and F16C.
#if defined(__AVX512F__) && defined(__F16C__) && !defined(__CUDACC__) && !defined(__HIPCC__)
#define PTK_HOST_AVX512 1
#include <immintrin.h>
#endif
// 8 values an instruction where a host has AVX2 and not AVX-512 (the avx2 CPU variant: core/cpu_variants.def): the
// GEMM's transposing pack (load.hpp).
#if !defined(PTK_HOST_AVX512) && defined(__AVX2__) && !defined(__CUDACC__) && !defined(__HIPCC__)
#define PTK_HOST_AVX2 1
#include <immintrin.h>
#endif

namespace ptk::kernels {

constexpr int line_floats = 16;  // floats in a 64-byte cache line

// A hint to fetch the cache line `Traits::prefetch_distance` floats past row + j; ForWrite: for
// writing (prefetchw), so a later store finds its line already owned. A no-op where the distance
// is 0, and in device code. The address is formed as an integer: it may lie past the row, even
// past the allocation, which a prefetch tolerates but pointer arithmetic would not.

template <class Traits, bool ForWrite = false, class T>
KOKKOS_FORCEINLINE_FUNCTION void prefetch_ahead(const T* row, int j) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  if constexpr (Traits::prefetch_distance > 0)
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(row + j) +
                                                     Traits::prefetch_distance * sizeof(float)),
                       ForWrite ? 1 : 0);
#else
  (void)row;
  (void)j;
#endif
}

// The prefetches of one block [b, b + W) of a pipelined sweep: `stream` (the row read from memory)
// and, for writing, y (the row written; none with streaming stores, which do not read their
// lines), each prefetch_distance ahead, one hint a cache line. Rows of 16-bit items (S, O: float, bf16, f16) take a
// hint a line of their own bytes too, prefetch_distance floats' worth of bytes ahead: a hint every 32 values, or
// every 16 where the other row is float.
template <class Traits, int W, class S, class O>
KOKKOS_FORCEINLINE_FUNCTION void prefetch_block(const S* stream, const O* y, int b, bool streaming = false) {
  constexpr int step = sizeof(S) == sizeof(float) || sizeof(O) == sizeof(float) ? line_floats : 2 * line_floats;
  for (int q = 0; q < W; q += step) {
    prefetch_ahead<Traits>(stream, b + q);
    if (!streaming) prefetch_ahead<Traits, true>(y, b + q);
  }
}

// One hint a cache line of the `bytes` bytes at address `at` (host code only): a run shorter than a line takes a hint
// only where a line begins in it, so that the runs of one row (a bf16 row's 32 bytes a block) hint each line once.
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
template <int bytes>
inline void prefetch_lines(std::uintptr_t at) {
  if constexpr (bytes >= 64) {
    for (int q = 0; q < bytes; q += 64) __builtin_prefetch(reinterpret_cast<const void*>(at + q), 0);
  } else {
    const std::uintptr_t to_line = (0 - at) & 63;  // bytes to the next line start
    if (to_line < static_cast<std::uintptr_t>(bytes))
      __builtin_prefetch(reinterpret_cast<const void*>(at + to_line), 0);
  }
}
#endif

// The prefetches of values [b, b + W) of a row of stored items E (dtype.hpp) read as a stream: one hint a
// cache line of their bytes, prefetch_distance floats' worth of bytes ahead. For float the same hints as
// prefetch_block's stream.
template <class Traits, int W, class E>
KOKKOS_FORCEINLINE_FUNCTION void prefetch_items(const E* row, int b) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  if constexpr (Traits::prefetch_distance > 0)
    prefetch_lines<static_cast<int>(W * sizeof(E) / Element<E>::block)>(
        reinterpret_cast<std::uintptr_t>(row + b / Element<E>::block) + Traits::prefetch_distance * sizeof(float));
#else
  (void)row;
  (void)b;
#endif
}

// The prefetches of values [b, b + W) of row j of a group of J rows (each `ldw` items apart, K values long) that one
// thread sweeps side by side before the J rows after them: prefetch_distance floats' worth of bytes ahead in the
// row, or, past its end, as far into row j + J. A hint that went on in memory past the row's end would land in a row
// the group is already reading wherever rows are shorter than J times the distance (bf16 at K = 2048: 4 KB rows).
template <class Traits, int W, int J, class E>
KOKKOS_FORCEINLINE_FUNCTION void prefetch_group_items(const E* row, std::size_t ldw, int K, int b) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  if constexpr (Traits::prefetch_distance > 0) {
    constexpr std::uintptr_t item = sizeof(E), block = Element<E>::block;
    const std::uintptr_t ahead = b * item / block + Traits::prefetch_distance * sizeof(float);
    const std::uintptr_t row_bytes = K * item / block;
    prefetch_lines<static_cast<int>(W * item / block)>(reinterpret_cast<std::uintptr_t>(row) + ahead +
                                                       (ahead >= row_bytes ? J * ldw * item - row_bytes : 0));
  }
#else
  (void)row;
  (void)ldw;
  (void)K;
  (void)b;
#endif
}

// Hints to fetch items [0, count) of a row (one a cache line of its bytes) that a loop will read after the row it
// is on: a short contiguous run (a GEMM slab's stretch of a weight row) gives the hardware prefetcher too few lines to
// find it in time. A no-op in device code.
template <class E>
KOKKOS_FORCEINLINE_FUNCTION void prefetch_span(const E* row, int count) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  const auto at = reinterpret_cast<std::uintptr_t>(row);
  const std::uintptr_t bytes = static_cast<std::uintptr_t>(count) * sizeof(E) / Element<E>::block;
  for (std::uintptr_t q = 0; q < bytes; q += 64) __builtin_prefetch(reinterpret_cast<const void*>(at + q), 0);
#else
  (void)row;
  (void)count;
#endif
}

// y[l * V] = o[l] for the L values of one block of vector lane v (y points at its first column).
// With `streaming` on the host, a 64-byte-aligned block of 16 floats goes out as non-temporal
// stores (see Rows::stream_store_bytes in tuning.hpp), with the widest the build's ISA has; anything else
// (GPU, other block shapes, an unaligned row) is plain stores. Streaming stores are weakly ordered:
// a kernel that issued them ends with streaming_fence() before its results are read.
// A 16-bit y (bf16, f16) takes o rounded to nearest even (round_to), with plain stores.
template <int N, class O>
KOKKOS_FORCEINLINE_FUNCTION void store_rounded(O* y, const float (&t)[N]);

template <class Traits, int L, class O>
KOKKOS_FORCEINLINE_FUNCTION void store_block(O* y, const float (&o)[L], bool streaming) {
#if defined(PTK_STREAMING_STORES)
  if constexpr (std::is_same_v<O, float> && Traits::host && Traits::vector_length == 1 && L == line_floats) {
    if (streaming && (reinterpret_cast<std::uintptr_t>(y) & 63) == 0) {
#if defined(__AVX512F__)
      _mm512_stream_ps(y, _mm512_loadu_ps(o));
#elif defined(__AVX__)
      _mm256_stream_ps(y, _mm256_loadu_ps(o));
      _mm256_stream_ps(y + 8, _mm256_loadu_ps(o + 8));
#else
      for (int q = 0; q < L; q += 4) _mm_stream_ps(y + q, _mm_loadu_ps(o + q));
#endif
      return;
    }
  }
#else
  (void)streaming;
#endif
  if constexpr (Traits::vector_length == 1) {
    store_rounded(y, o);
  } else {
    for (int l = 0; l < L; ++l) y[l * Traits::vector_length] = round_to<O>(o[l]);
  }
}

// t[0, N) = x[0, N) as float (widen), for a block of a 16-bit row (E: bf16, f16) that a sweep then reads as float.
// On a host with AVX-512, 16 values at a time (a widening move and a shift for bf16, VCVTPH2PS for f16); g++ left
// the sweeps that read 16-bit values one by one scalar (bf16 softmax ran at a twelfth of f32's speed).
template <int N, class E>
KOKKOS_FORCEINLINE_FUNCTION void widen_block(const E* x, float (&t)[N]) {
#if defined(PTK_HOST_AVX512)
  if constexpr (N % 16 == 0 && (std::is_same_v<E, bf16> || std::is_same_v<E, f16>)) {
    for (int q = 0; q < N; q += 16) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + q));
      if constexpr (std::is_same_v<E, bf16>)
        _mm512_storeu_ps(t + q, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
      else
        _mm512_storeu_ps(t + q, _mm512_cvtph_ps(h));
    }
    return;
  }
#endif
  for (int l = 0; l < N; ++l) t[l] = widen(x[l]);
}

// y[0, N) = t[0, N) rounded to O (round_to; float: a copy). On a host with AVX-512, 16 values at a time, the bits
// of to_f16 and to_bf16 (Half.VectorF16RoundingMatchesToF16): f16 by VCVTPS2PH (round to nearest even), bf16 by
// to_bf16's integer steps on 16 lanes. g++ left both scalar inside the row ops' sweeps (bf16 rmsnorm ran at a fifth
// of f32's speed). (8 lanes at a time gained the norms 10 % and cost softmax and the activations 25 %: where a sweep
// forms t in 256-bit halves, a 512-bit load of it misses store forwarding.)
template <int N, class O>
KOKKOS_FORCEINLINE_FUNCTION void store_rounded(O* y, const float (&t)[N]) {
#if defined(PTK_HOST_AVX512)
  if constexpr (std::is_same_v<O, f16> && N % 16 == 0) {
    for (int q = 0; q < N; q += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + q),
                          _mm512_cvtps_ph(_mm512_loadu_ps(t + q), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return;
  }
  if constexpr (std::is_same_v<O, bf16> && N % 16 == 0) {
    for (int q = 0; q < N; q += 16) {
      const __m512i u = _mm512_castps_si512(_mm512_loadu_ps(t + q)), high = _mm512_srli_epi32(u, 16);
      const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
      const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd), 16);
      const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                    _mm512_set1_epi32(0x7f800000));
      const __m512i bits = _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + q), _mm512_cvtepi32_epi16(bits));
    }
    return;
  }
#endif
  for (int l = 0; l < N; ++l) y[l] = round_to<O>(t[l]);
}

// y[0, n) = t[0, n) rounded to O, a contiguous run: whole groups of 16 through store_rounded (one instruction a group
// on an AVX-512 host), the rest a value at a time. A KV cache's append rounded an f16 key a value at a time (the
// portable to_f16): 6x the f32 append's time, 7 % of a 512-token prefill (docs/benchmarks.md).
template <class O>
KOKKOS_FORCEINLINE_FUNCTION void store_rounded_run(O* y, const float* t, int n) {
  int l = 0;
  for (; l + 16 <= n; l += 16) store_rounded(y + l, *reinterpret_cast<const float(*)[16]>(t + l));
  for (; l < n; ++l) y[l] = round_to<O>(t[l]);
}

// Orders a thread's streaming stores before whatever follows (an sfence on the host; nothing where
// store_block never streams).
template <class Traits>
KOKKOS_FORCEINLINE_FUNCTION void streaming_fence(bool streaming) {
#if defined(PTK_STREAMING_STORES)
  if (Traits::host && streaming) _mm_sfence();
#else
  (void)streaming;
#endif
}
// dst[0..4) = src[0..4) for src a 16-byte aligned address in team scratch: one 128-bit shared-memory
// load in a CUDA device pass (ld.shared.v4: nvcc cannot tell that a pointer carved from Kokkos'
// team_scratch is shared memory and would emit a generic LD.E.128), a 128-bit load in a HIP device
// pass, four scalar loads on the host (which the compiler vectorizes as it sees fit).
KOKKOS_FORCEINLINE_FUNCTION void load4_scratch(float* dst, const float* src) {
#if defined(__CUDA_ARCH__)
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(src));
  // volatile and "memory": never moved across the team barriers that guard the slab.
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(dst[0]), "=f"(dst[1]), "=f"(dst[2]), "=f"(dst[3])
               : "r"(address)
               : "memory");
#elif defined(__HIP_DEVICE_COMPILE__)
  const float4 v = *reinterpret_cast<const float4*>(src);
  dst[0] = v.x;
  dst[1] = v.y;
  dst[2] = v.z;
  dst[3] = v.w;
#else
  for (int i = 0; i < 4; ++i) dst[i] = src[i];
#endif
}

}  // namespace ptk::kernels
