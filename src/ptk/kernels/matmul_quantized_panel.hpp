#pragma once
// matmul_quantized_panel: y[M,N] = alpha · x[M,K] · W[N,K]ᵀ + beta · y for W stored as q8_0 or q4_0 (also in row
// tiles, q8_0x16 and q4_0x16) and x rounded to
// int8 per block of 32 (block_to_int8, as every product with such W rounds it), for the rows of a prompt:
//   y[r,n] = Σ_blocks (d_x[r,b] · d_w[n,b]) · Σ_{i<32} q_x[r,32b+i] · q_w[n,32b+i]       (inner sum exact, int32)
// x is packed first in panels of 16 rows whose integers lie group by group (4 values of 16 rows: one 64-byte vector),
// so that a SIMD lane is a row of x: the host's vpdpbusd multiplies one group of a W row, broadcast, by the panel's 16
// rows at once and a block's 8 groups add up in int32 before one conversion and one FMA a block (the decode kernel,
// whose lanes are groups of one W row, converts and scales every group: 8x the float work). The portable loop forms
// the same integers and the same fp32 operations in the same order: both give the same bits.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

#include "ptk/core/allocate.hpp"
#include "ptk/core/compat.hpp"
#include "ptk/core/quant.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/kernels/matmul_decode_quantized.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

constexpr int panel_rows = 16;  // rows of x in a panel: the lanes of one vector of int32 sums

// x in panels: q [P, K/4, 16, 4] (panel, group, row, value), and per (panel, block, row) the block's scale d_x (NaN
// for a block with a NaN or an infinity) and −o · Σ q_x over the block (o: w_unsigned_offset). Rows past M: zeros.
template <class Space>
struct PanelRows {
  Kokkos::View<std::int8_t***, Kokkos::LayoutRight, Space> q;   // [P, K/4, 64]
  Kokkos::View<float***, Kokkos::LayoutRight, Space> scale;     // [P, K/32, 16]
  Kokkos::View<std::int32_t***, Kokkos::LayoutRight, Space> offset;  // [P, K/32, 16]
};

template <class Space, class E>
struct PackPanels {
  ConstMatrix<Space> x;
  PanelRows<Space> out;

  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    const int blocks = static_cast<int>(out.scale.extent(1));
    const int row = i / blocks, b = i % blocks, p = row / panel_rows, l = row % panel_rows;
    std::int8_t q[quant_block] = {};
    float d = 0.0f;
    if (row < static_cast<int>(x.extent(0))) d = block_to_int8(&x(row, b * quant_block), q);
    int sum = 0;
    for (int k = 0; k < quant_block; ++k) {
      out.q(p, b * block_groups + k / dot_group, l * dot_group + k % dot_group) = q[k];
      sum += q[k];
    }
    out.scale(p, b, l) = d;
    out.offset(p, b, l) = -w_unsigned_offset<E> * sum;
  }
};

// Block b of W row w as 32 unsigned integers u = q + o (value order), the bytes vpdpbusd takes.
KOKKOS_FORCEINLINE_FUNCTION void unsigned_block(const q8_0& w, std::uint8_t (&u)[quant_block]) {
  for (int k = 0; k < quant_block; ++k) u[k] = static_cast<std::uint8_t>(w.qs[k] + w_unsigned_offset<q8_0>);
}
KOKKOS_FORCEINLINE_FUNCTION void unsigned_block(const q4_0& w, std::uint8_t (&u)[quant_block]) {
  for (int k = 0; k < quant_block / 2; ++k) {
    u[k] = w.qs[k] & 0x0f;
    u[k + quant_block / 2] = w.qs[k] >> 4;
  }
}

#if defined(PTK_HOST_VNNI)
// unsigned_block in AVX-512: q8_0's 32 bytes + 128; q4_0's 16 bytes' low nibbles, then their high ones.
inline void unsigned_block_simd(const q8_0& w, std::uint8_t* u) {
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs));
  _mm256_store_si256(reinterpret_cast<__m256i*>(u), _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80))));
}
inline void unsigned_block_simd(const q4_0& w, std::uint8_t* u) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs)), low = _mm_set1_epi8(0x0f);
  _mm_store_si128(reinterpret_cast<__m128i*>(u), _mm_and_si128(q, low));
  _mm_store_si128(reinterpret_cast<__m128i*>(u + 16), _mm_and_si128(_mm_srli_epi16(q, 4), low));
}

// Block b of W rows n .. n + Jn as vpdpbusd takes them, 8 words a row (word g: the unsigned values 4g .. 4g + 3), at
// u[word_at<E, Jn>(j, g)], and their scales. From GGUF's blocks a row's words lie together; from a row tile the words
// of a group lie together, 8 rows' in one vector of the band (its bytes a nibble apart): no block is put back
// together. The kernel broadcasts each word from memory (from a register it would cost a shuffle port µop).
template <class E, int Jn>
KOKKOS_FORCEINLINE_FUNCTION constexpr int word_at(int j, int g) {
  return is_row_tile_v<E> ? g * Jn + j : j * block_groups + g;
}
// Group g's words of 8 rows from 32 bytes of a band: q8_0's bytes + 128; q4_0's low nibbles (g = band), high (g =
// band + 4).
inline void band_words(const q8_0x16& t, int band, int l0, std::uint32_t* u) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.qs[band][l0]));
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + band * 8), _mm256_xor_si256(v, flip));
}
inline void band_words(const q4_0x16& t, int band, int l0, std::uint32_t* u) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.qs[band][l0]));
  const __m256i low = _mm256_set1_epi8(0x0f), high = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + band * 8), _mm256_and_si256(v, low));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + (q4_0x16::bands + band) * 8), high);
}
inline void band_words(const q8_0x16& t, int band, int l, int j, std::uint32_t* u, int Jn) {
  std::uint32_t word;
  __builtin_memcpy(&word, t.qs[band][l], sizeof word);
  u[band * Jn + j] = word ^ 0x80808080u;
}
inline void band_words(const q4_0x16& t, int band, int l, int j, std::uint32_t* u, int Jn) {
  std::uint32_t word;
  __builtin_memcpy(&word, t.qs[band][l], sizeof word);
  u[band * Jn + j] = word & 0x0f0f0f0fu;
  u[(q4_0x16::bands + band) * Jn + j] = (word >> 4) & 0x0f0f0f0fu;
}
template <int Jn, class E>
inline void unsigned_words(const E* w, std::size_t ldw, int n, int b, std::uint32_t* u, float (&dw)[Jn]) {
  if constexpr (is_row_tile_v<E>) {
    const E& tile = w[n / tile_rows * ldw + b];
    const int l0 = n % tile_rows;
    if constexpr (Jn == 8) {
      if (l0 % 8 == 0) {
        for (int band = 0; band < E::bands; ++band) band_words(tile, band, l0, u);
        _mm_storeu_ps(dw, _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile.d + l0))));
        _mm_storeu_ps(dw + 4, _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile.d + l0 + 4))));
        return;
      }
    }
    for (int j = 0; j < Jn; ++j) {
      for (int band = 0; band < E::bands; ++band) band_words(tile, band, l0 + j, j, u, Jn);
      dw[j] = to_float(tile.d[l0 + j]);
    }
  } else {
    for (int j = 0; j < Jn; ++j) {
      unsigned_block_simd(w[(n + j) * ldw + b], reinterpret_cast<std::uint8_t*>(u + j * block_groups));
      dw[j] = to_float(w[(n + j) * ldw + b].d);
    }
  }
}
#endif

// Block b of W row n: as stored, or from row tiles ([N / 16, K / 32] tiles) taken out of its tile.
KOKKOS_FORCEINLINE_FUNCTION const q8_0& block_at(const q8_0* w, std::size_t ldw, int n, int b) { return w[n * ldw + b]; }
KOKKOS_FORCEINLINE_FUNCTION const q4_0& block_at(const q4_0* w, std::size_t ldw, int n, int b) { return w[n * ldw + b]; }
template <class T, class = std::enable_if_t<is_row_tile_v<T>>>
KOKKOS_FORCEINLINE_FUNCTION typename T::block_type block_at(const T* w, std::size_t ldw, int n, int b) {
  return tile_block(w[n / tile_rows * ldw + b], n % tile_rows);
}

template <class Space, class Tune, class E>
struct MatmulQuantizedPanel {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = typename Tune::decode;
  static constexpr int J = Traits::panel_w_rows;  // W rows a block step takes together
  Matrix<Space> y;
  ConstMatrixOf<Space, E> w;  // [N, K/32] blocks
  PanelRows<Space> x;
  float alpha, beta;
  int teams_per_panel;

  // acc[j][l] += Σ over the blocks of W rows n .. n + Jn against the panel's rows, block by block.
  template <int Jn>
  KOKKOS_INLINE_FUNCTION void sums(float (&acc)[Jn][panel_rows], int p, int n) const {
    const int blocks = static_cast<int>(x.scale.extent(1));
#if defined(PTK_HOST_VNNI)
    if constexpr (Traits::int8_simd) {
      __m512 a[Jn];
      for (int j = 0; j < Jn; ++j) a[j] = _mm512_setzero_ps();
      for (int b = 0; b < blocks; ++b) {
        alignas(64) std::uint32_t u[Jn * block_groups];
        float dw[Jn];
        unsigned_words<Jn>(w.data(), w.extent(1), n, b, u, dw);
        const __m512i start = _mm512_loadu_si512(&x.offset(p, b, 0));
        __m512i s[Jn];
        for (int j = 0; j < Jn; ++j) s[j] = start;
        for (int g = 0; g < block_groups; ++g) {
          const __m512i xg = _mm512_loadu_si512(&x.q(p, b * block_groups + g, 0));
          for (int j = 0; j < Jn; ++j)
            s[j] = _mm512_dpbusd_epi32(s[j], _mm512_set1_epi32(static_cast<int>(u[word_at<E, Jn>(j, g)])), xg);
        }
        const __m512 dx = _mm512_loadu_ps(&x.scale(p, b, 0));
        for (int j = 0; j < Jn; ++j)
          a[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[j]), _mm512_mul_ps(dx, _mm512_set1_ps(dw[j])), a[j]);
      }
      for (int j = 0; j < Jn; ++j) _mm512_storeu_ps(acc[j], a[j]);
      return;
    }
#endif
    for (int b = 0; b < blocks; ++b)
      for (int j = 0; j < Jn; ++j) {
        std::uint8_t u[quant_block];
        const auto& wb = block_at(w.data(), w.extent(1), n + j, b);
        unsigned_block(wb, u);
        const float dw = to_float(wb.d);
        for (int l = 0; l < panel_rows; ++l) {
          int s = x.offset(p, b, l);
          for (int k = 0; k < quant_block; ++k)
            s += static_cast<int>(u[k]) * x.q(p, b * block_groups + k / dot_group, l * dot_group + k % dot_group);
          acc[j][l] = compat::mul_add(static_cast<float>(s), x.scale(p, b, l) * dw, acc[j][l]);
        }
      }
  }

  template <int Jn>
  KOKKOS_INLINE_FUNCTION void rows(int p, int n) const {
    float acc[Jn][panel_rows] = {};
    sums<Jn>(acc, p, n);
    const int first = p * panel_rows, M = static_cast<int>(y.extent(0));
    for (int l = 0; l < panel_rows && first + l < M; ++l)
      for (int j = 0; j < Jn; ++j) {
        const float v = alpha * acc[j][l];
        y(first + l, n + j) = beta == 0.0f ? v : v + beta * y(first + l, n + j);
      }
  }

  // A team: W rows of one tile against one panel, J at a time, then the rest one at a time.
  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int p = team.league_rank() / teams_per_panel, tile = team.league_rank() % teams_per_panel;
    const int N = static_cast<int>(w.extent(0)) * item_rows_v<E>, first = tile * Traits::panel_rows_per_team;
    const int end = first + Traits::panel_rows_per_team < N ? first + Traits::panel_rows_per_team : N;
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      int n = first;
      for (; n + J <= end; n += J) rows<J>(p, n);
      for (; n < end; ++n) rows<1>(p, n);
    });
  }
};

// y = alpha · x · wᵀ + beta · y, x [M, K] (K a multiple of 32), w [N, K/32] blocks of E, y [M, N] (the caller checks
// shapes): x packed (one launch), then every (panel, tile of W rows) a team.
template <class Space, class Tune, class E>
void matmul_quantized_panel(const Matrix<Space>& y, const ConstMatrix<Space>& x, const ConstMatrixOf<Space, E>& w,
                            float alpha, float beta) {
  static_assert(is_quantized_v<E>, "q8_0 or q4_0 weights");
  using Traits = typename Tune::decode;
  const int M = static_cast<int>(x.extent(0)), K = static_cast<int>(x.extent(1));
  const int N = static_cast<int>(w.extent(0)) * item_rows_v<E>;  // W's rows (row tiles: its extent counts tiles)
  if (M == 0 || N == 0) return;
  const int P = (M + panel_rows - 1) / panel_rows, blocks = K / quant_block;
  PanelRows<Space> xp{
      work_view<decltype(PanelRows<Space>::q)>("ptk::panel_x_q", P, K / dot_group, panel_rows * dot_group),
      work_view<decltype(PanelRows<Space>::scale)>("ptk::panel_x_scale", P, blocks, panel_rows),
      work_view<decltype(PanelRows<Space>::offset)>("ptk::panel_x_offset", P, blocks, panel_rows)};
  Kokkos::parallel_for("ptk::matmul_panel_pack_x", Kokkos::RangePolicy<Space>(0, P * panel_rows * blocks),
                       PackPanels<Space, E>{x, xp});
  const int tiles = (N + Traits::panel_rows_per_team - 1) / Traits::panel_rows_per_team;
  using Policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  Kokkos::parallel_for("ptk::matmul_quantized_panel", Policy(P * tiles, 1, 1),
                       MatmulQuantizedPanel<Space, Tune, E>{y, w, xp, alpha, beta, tiles});
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_MATMUL_QUANTIZED_PANEL_ELEMENT_INSTANCE(EXT, Space, Tune, E) \
  EXT template void matmul_quantized_panel<Space, Tune, E>(const Matrix<Space>& y, const ConstMatrix<Space>& x, const ConstMatrixOf<Space, E>& w, float alpha, float beta);
#define PTK_MATMUL_QUANTIZED_PANEL_TUNED_INSTANCES(EXT, Space, Tune)     \
  PTK_MATMUL_QUANTIZED_PANEL_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::q8_0) \
  PTK_MATMUL_QUANTIZED_PANEL_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::q4_0)    \
  PTK_MATMUL_QUANTIZED_PANEL_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::q8_0x16) \
  PTK_MATMUL_QUANTIZED_PANEL_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::q4_0x16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_MATMUL_QUANTIZED_PANEL_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
