#pragma once
// The decode matmul over q8_0 and q4_0 weights in row tiles (quant.hpp q8_0x16 and q4_0x16: 16 rows' blocks of one
// column together), for R <= 8 rows of x rounded to int8 per block of 32 (block_to_int8, as every product with such W
// rounds it):
//   y[r,n] = Σ_b (d_x[r,b] · d_w[n,b]) · Σ_{i<32} q_x[r,32b+i] · q_w[n,32b+i]     (inner sum exact, int32; b in order)
// A SIMD lane is a W row: one 64-byte band of a tile holds 4 values of each of 16 rows, so the host's vpdpbusd
// multiplies them by 4 values of x broadcast, a block's 8 products add up in int32 and one conversion and one FMA a
// block finish 16 rows (the kernel over GGUF's layout, whose lanes are 4-value groups of one row, converts, scales and
// adds every group: matmul_decode_quantized.hpp). The same sums, in the same order, as the panel kernel's
// (matmul_quantized_panel.hpp): both give the same bits. The portable loop forms the same integers and fp32
// operations: the host's AVX-512 VNNI path and it give the same bits too (MatmulTiles.VnniEqualsPortableEqualsPanels).
#include <Kokkos_Core.hpp>

#include <cstdint>

#include "ptk/core/allocate.hpp"
#include "ptk/core/compat.hpp"
#include "ptk/core/quant.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/kernels/matmul_decode_quantized.hpp"

namespace ptk::kernels {

constexpr int tiles_group_max = 3;  // products of one x in a launch (matmul_decode.hpp's decode_group_max)

// x [R, K] rounded per block: q its integers, and per (row, block) the scale d_x (NaN for a block with a NaN or an
// infinity) and −o · Σ q_x, which takes back out the o that makes W's integers unsigned for vpdpbusd (q8_0: 128,
// q4_0: 8; w_unsigned_offset).
template <class Space>
struct BlockRows {
  Kokkos::View<std::int8_t**, Kokkos::LayoutRight, Space> q;        // [R, K]
  Kokkos::View<float**, Kokkos::LayoutRight, Space> scale;          // [R, K / 32]
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, Space> offset;  // [R, K / 32]
};

// x rounded for a product with tiles T (the offset is T's blocks' w_unsigned_offset).
template <class Space, class T>
BlockRows<Space> quantize_blocks(const ConstMatrix<Space>& x) {
  const int R = static_cast<int>(x.extent(0)), K = static_cast<int>(x.extent(1)), blocks = K / quant_block;
  BlockRows<Space> out{work_view<decltype(BlockRows<Space>::q)>("ptk::tiles_x_q", R, K),
                       work_view<decltype(BlockRows<Space>::scale)>("ptk::tiles_x_scale", R, blocks),
                       work_view<decltype(BlockRows<Space>::offset)>("ptk::tiles_x_offset", R, blocks)};
  Kokkos::parallel_for(
      "ptk::matmul_tiles_quantize_x", Kokkos::RangePolicy<Space>(0, R * blocks), KOKKOS_LAMBDA(const int i) {
        const int r = i / blocks, b = i % blocks;
        std::int8_t* q = &out.q(r, b * quant_block);
        out.scale(r, b) = block_to_int8(&x(r, b * quant_block), q);
        int sum = 0;
        for (int k = 0; k < quant_block; ++k) sum += q[k];
        out.offset(r, b) = -w_unsigned_offset<typename T::block_type> * sum;
      });
  return out;
}

// One product of a group: y [R, N], its tiles [N / 16, K / 32], bias [N] or empty.
template <class Space, class T>
struct TilesProduct {
  Matrix<Space> y;
  ConstMatrixOf<Space, T> w;
  ConstVector<Space> bias;
};

#if defined(PTK_HOST_VNNI)
// A block's quants of 16 rows as vpdpbusd's unsigned bytes, u[i] 4 values of each row, times x's 4 values at xq[i]:
// q8_0's 8 bands + 128, q4_0's 4 bands' low nibbles (values 0-15) then their high ones (16-31).
inline void tile_unsigned(const q8_0x16& t, __m512i (&u)[block_groups]) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int band = 0; band < q8_0x16::bands; ++band) u[band] = _mm512_xor_si512(_mm512_loadu_si512(t.qs[band]), flip);
}
inline void tile_unsigned(const q4_0x16& t, __m512i (&u)[block_groups]) {
  const __m512i low = _mm512_set1_epi8(0x0f);
  for (int band = 0; band < q4_0x16::bands; ++band) {
    const __m512i v = _mm512_loadu_si512(t.qs[band]);
    u[band] = _mm512_and_si512(v, low);
    u[q4_0x16::bands + band] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
  }
}
#endif

// Row l's integer of value k (0 <= k < 32) of a tile's block.
KOKKOS_FORCEINLINE_FUNCTION int tile_integer(const q8_0x16& t, int l, int k) { return t.qs[k / 4][l][k % 4]; }
KOKKOS_FORCEINLINE_FUNCTION int tile_integer(const q4_0x16& t, int l, int k) {
  const int half = quant_block / 2, byte = t.qs[(k % half) / 4][l][k % 4];
  return (k < half ? byte & 0x0f : byte >> 4) - 8;
}

template <int R, class Space, class Tune, class T>
struct MatmulDecodeTiles {
  TilesProduct<Space, T> part[tiles_group_max];
  int end[tiles_group_max];  // part p's tiles: items end[p - 1] .. end[p]
  int count;
  BlockRows<Space> x;
  float alpha, beta;

  // acc[r][l] = Σ_b over the blocks of tile row `t` of w, row l of the tile against row r of x.
  KOKKOS_INLINE_FUNCTION void sums(float (&acc)[R][tile_rows], const ConstMatrixOf<Space, T>& w, int t) const {
    const int blocks = static_cast<int>(w.extent(1));
#if defined(PTK_HOST_VNNI)
    if constexpr (Tune::decode::int8_simd) {
      __m512 a[R];
      for (int r = 0; r < R; ++r) a[r] = _mm512_setzero_ps();
      const char* stream = reinterpret_cast<const char*>(&w(t, 0));
      for (int b = 0; b < blocks; ++b) {
        const T& tile = w(t, b);
        // The tile row streams from memory: its lines fetched prefetch_distance floats ahead, as the f32 kernel's.
        if constexpr (Tune::decode::prefetch_distance > 0)
          for (std::size_t q = 0; q < sizeof(T); q += 64)
            __builtin_prefetch(stream + (b * sizeof(T) + Tune::decode::prefetch_distance * sizeof(float) + q), 0);
        __m512i u[block_groups];
        tile_unsigned(tile, u);
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile.d)));
        for (int r = 0; r < R; ++r) {
          std::int32_t xq[block_groups];  // x's 4-value words (copied: int8 storage is not read as int32)
          __builtin_memcpy(xq, &x.q(r, b * quant_block), sizeof xq);
          // Two chains rather than one of 8 dependent vpdpbusd.
          __m512i s0 = _mm512_set1_epi32(x.offset(r, b)), s1 = _mm512_setzero_si512();
          for (int g = 0; g < block_groups; g += 2) {
            s0 = _mm512_dpbusd_epi32(s0, u[g], _mm512_set1_epi32(xq[g]));
            s1 = _mm512_dpbusd_epi32(s1, u[g + 1], _mm512_set1_epi32(xq[g + 1]));
          }
          const __m512 s = _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1));
          a[r] = _mm512_fmadd_ps(s, _mm512_mul_ps(_mm512_set1_ps(x.scale(r, b)), dw), a[r]);
        }
      }
      for (int r = 0; r < R; ++r) _mm512_storeu_ps(acc[r], a[r]);
      return;
    }
#endif
    for (int b = 0; b < blocks; ++b) {
      const T& tile = w(t, b);
      for (int l = 0; l < tile_rows; ++l) {
        const float dw = to_float(tile.d[l]);
        for (int r = 0; r < R; ++r) {
          const std::int8_t* xq = &x.q(r, b * quant_block);
          int s = 0;  // the signed dot: the same integer as the unsigned one plus its offset
          for (int k = 0; k < quant_block; ++k) s += tile_integer(tile, l, k) * xq[k];
          acc[r][l] = compat::mul_add(static_cast<float>(s), x.scale(r, b) * dw, acc[r][l]);
        }
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const int item) const {
    int p = 0;
    while (p + 1 < count && item >= end[p]) ++p;
    const TilesProduct<Space, T>& d = part[p];
    const int t = p == 0 ? item : item - end[p - 1];
    float acc[R][tile_rows] = {};
    sums(acc, d.w, t);
    for (int r = 0; r < R; ++r)
      for (int l = 0; l < tile_rows; ++l) {
        const int n = t * tile_rows + l;
        const float v = alpha * acc[r][l] + (d.bias.data() ? d.bias(n) : 0.0f);
        d.y(r, n) = beta == 0.0f ? v : v + beta * d.y(r, n);
      }
  }
};

// y_p = alpha · x · w_pᵀ + bias_p + beta · y_p for each of `count` (1 to 3) products of one x [R, K] (1 <= R <= 8, K
// a multiple of 32) with tiles w_p [N_p / 16, K / 32] of T (q8_0x16 or q4_0x16): x rounded once, then one launch, a
// tile row an item. The caller checks shapes.
template <int R, class Space, class Tune, class T>
void matmul_decode_tiles_rows(const TilesProduct<Space, T>* parts, int count, const BlockRows<Space>& xq, float alpha,
                              float beta) {
  MatmulDecodeTiles<R, Space, Tune, T> f{};
  int items = 0;
  for (int p = 0; p < count; ++p) {
    f.part[p] = parts[p];
    items += static_cast<int>(parts[p].w.extent(0));
    f.end[p] = items;
  }
  f.count = count;
  f.x = xq;
  f.alpha = alpha;
  f.beta = beta;
  // Dynamic: on a shared host a preempted thread's tiles go to the other threads.
  using Policy = Kokkos::RangePolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  Kokkos::parallel_for("ptk::matmul_decode_tiles", Policy(0, items), f);
}

template <class Space, class Tune, class T>
void matmul_decode_tiles(const TilesProduct<Space, T>* parts, int count, const ConstMatrix<Space>& x, float alpha,
                         float beta) {
  if (x.extent(0) == 0) return;
  const BlockRows<Space> xq = quantize_blocks<Space, T>(x);
  switch (x.extent(0)) {
    case 1: return matmul_decode_tiles_rows<1, Space, Tune, T>(parts, count, xq, alpha, beta);
    case 2: return matmul_decode_tiles_rows<2, Space, Tune, T>(parts, count, xq, alpha, beta);
    case 3: return matmul_decode_tiles_rows<3, Space, Tune, T>(parts, count, xq, alpha, beta);
    case 4: return matmul_decode_tiles_rows<4, Space, Tune, T>(parts, count, xq, alpha, beta);
    case 5: return matmul_decode_tiles_rows<5, Space, Tune, T>(parts, count, xq, alpha, beta);
    case 6: return matmul_decode_tiles_rows<6, Space, Tune, T>(parts, count, xq, alpha, beta);
    case 7: return matmul_decode_tiles_rows<7, Space, Tune, T>(parts, count, xq, alpha, beta);
    case 8: return matmul_decode_tiles_rows<8, Space, Tune, T>(parts, count, xq, alpha, beta);
    default: Kokkos::abort("ptk::kernels::matmul_decode_tiles: x must have 1 to 8 rows");
  }
}

// tiles [N / 16, K / 32] from blocks [N, K / 32] (N a multiple of 16), and back: the same bytes, regrouped.
template <class Space, class T>
void tile_blocks(const MatrixOf<Space, T>& tiles, const ConstMatrixOf<Space, typename T::block_type>& blocks) {
  const int B = static_cast<int>(blocks.extent(1));
  Kokkos::parallel_for(
      "ptk::tile_blocks", Kokkos::RangePolicy<Space>(0, static_cast<int>(tiles.extent(0)) * B),
      KOKKOS_LAMBDA(const int i) {
        const int t = i / B, b = i % B;
        for (int l = 0; l < tile_rows; ++l) set_tile_block(tiles(t, b), l, blocks(t * tile_rows + l, b));
      });
}
template <class Space, class T>
void untile_blocks(const MatrixOf<Space, typename T::block_type>& blocks, const ConstMatrixOf<Space, T>& tiles) {
  const int B = static_cast<int>(blocks.extent(1));
  Kokkos::parallel_for(
      "ptk::untile_blocks", Kokkos::RangePolicy<Space>(0, static_cast<int>(tiles.extent(0)) * B),
      KOKKOS_LAMBDA(const int i) {
        const int t = i / B, b = i % B;
        for (int l = 0; l < tile_rows; ++l) blocks(t * tile_rows + l, b) = tile_block(tiles(t, b), l);
      });
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_MATMUL_DECODE_TILES_TILE_INSTANCE(EXT, Space, Tune, T) \
  EXT template void matmul_decode_tiles<Space, Tune, T>(const TilesProduct<Space, T>* parts, int count, const ConstMatrix<Space>& x, float alpha, float beta);
#define PTK_MATMUL_DECODE_TILES_TUNED_INSTANCES(EXT, Space, Tune)       \
  PTK_MATMUL_DECODE_TILES_TILE_INSTANCE(EXT, Space, Tune, ::ptk::q8_0x16) \
  PTK_MATMUL_DECODE_TILES_TILE_INSTANCE(EXT, Space, Tune, ::ptk::q4_0x16)
#define PTK_TILE_BLOCKS_INSTANCE(EXT, Space, T)                                                                           \
  EXT template void tile_blocks<Space, T>(const MatrixOf<Space, T>& tiles, const ConstMatrixOf<Space, typename T::block_type>& blocks); \
  EXT template void untile_blocks<Space, T>(const MatrixOf<Space, typename T::block_type>& blocks, const ConstMatrixOf<Space, T>& tiles);
#define PTK_MATMUL_DECODE_TILES_SPACE_INSTANCES(EXT, Space) \
  PTK_TILE_BLOCKS_INSTANCE(EXT, Space, ::ptk::q8_0x16)       \
  PTK_TILE_BLOCKS_INSTANCE(EXT, Space, ::ptk::q4_0x16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_MATMUL_DECODE_TILES_TUNED_INSTANCES, extern)
PTK_FOR_EACH_SPACE(PTK_MATMUL_DECODE_TILES_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
