#pragma once
// The host's GEMM (Tune::matmul::register_tiled == false; tuning.hpp, HostMatmul): Goto/BLIS-style
// cache blocks of c, op(a) and op(b) packed slab by slab into team scratch, register micro-tiles.
// c[B,M,N] = alpha · op(a) · op(b) + beta · c as matmul.hpp states it; a and b stored as EA and EB (f32, bf16,
// f16: packing reads them as float, load.hpp; b also q8_0 or q4_0 when transposed, a weight [N, K] whose blocks lie
// along k), c and every sum in f32.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>

#include "ptk/core/dtype_name.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/load.hpp"
#include "ptk/kernels/detail/memory_hints.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

// One team per (batch, row block, column block). Per slab: the team packs, synchronizes, every
// thread adds each of its micro-tiles' slab products (a length-≤slab sum held in registers) into
// c, and the team synchronizes again. Summing k in chunks, chunks into slab sums and slab sums
// into c keeps every fp32 partial sum ~ chunk + slab/chunk + K/slab additions deep, not K.
template <class Space, class Tune, class EA = float, class EB = float>
struct MatmulBlocked {
  static_assert(Element<EA>::block == 1, "a: one value per item, a pointer steps over values");
  using Tiles = typename Tune::matmul;
  // A quantized b is read transposed only (pack_rows): slabs start on whole blocks, tiles on half blocks.
  static_assert(Element<EB>::block == 1 || Tiles::slab % Element<EB>::block == 0, "slabs of whole blocks");
  static constexpr int MR = Tiles::micro_rows, NR = Tiles::micro_cols;
  // Summation depth: k is summed in chunks of `chunk`, chunks into a slab sum, slab sums into c.
  static constexpr int chunk = Tiles::chunk;
  // Dynamic: on a shared host a preempted thread's blocks go to the other threads.
  using Policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  using Scratch =
      Kokkos::View<float*, typename Space::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  Tensor3<Space> c;
  ConstTensor3Of<Space, EA> a;
  ConstTensor3Of<Space, EB> b;
  bool trans_a, trans_b;
  float alpha, beta;
  int M, N, K;
  int block_rows, block_cols, slab;  // block_rows % MR == 0, block_cols % NR == 0
  int row_blocks, col_blocks;

  // Floats of scratch per team: the packed A block and the packed B panel of one slab.
  KOKKOS_INLINE_FUNCTION static std::size_t scratch_floats(int block_rows, int block_cols, int slab) {
    return static_cast<std::size_t>(block_rows + block_cols) * static_cast<std::size_t>(slab);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int block = team.league_rank();
    const int batch = block / (row_blocks * col_blocks);
    const int i0 = (block % row_blocks) * block_rows;  // row blocks vary fastest: they share a B panel
    const int j0 = (block / row_blocks % col_blocks) * block_cols;
    const int rows = M - i0 < block_rows ? M - i0 : block_rows;
    const int cols = N - j0 < block_cols ? N - j0 : block_cols;
    const int row_panels = (rows + MR - 1) / MR, col_panels = (cols + NR - 1) / NR;
    const int ab = a.extent(0) == 1 ? 0 : batch, bb = b.extent(0) == 1 ? 0 : batch;
    const int lda = static_cast<int>(a.extent(2)), ldb = static_cast<int>(b.extent(2));
    const int ldc = N;
    const EA* const a_mat = &a(ab, 0, 0);
    const EB* const b_mat = &b(bb, 0, 0);
    float* const c_blk = &c(batch, i0, j0);

    // +: pass a value, not a reference to the static member (which has no device-side definition).
    Scratch scratch(team.team_scratch(+Tiles::scratch_level), scratch_floats(block_rows, block_cols, slab));
    float* const a_pack = scratch.data();                       // [row_panels][kc][MR]
    float* const b_pack = a_pack + static_cast<std::size_t>(block_rows) * slab;  // [col_panels][kc][NR]

    const int slabs = K > 0 ? (K + slab - 1) / slab : 1;
    for (int s = 0; s < slabs; ++s) {
      const int k0 = s * slab;
      const int kc = K - k0 < slab ? K - k0 : slab;

      // Pack op(a)[i0 .. i0+rows, k0 .. k0+kc], zero-padded to whole row panels; reads go along
      // the contiguous index of a's storage.
      if (!trans_a) {
        pack_rows<MR>(team, a_mat + static_cast<std::size_t>(i0) * lda + k0, lda, rows, row_panels, kc, a_pack);
      } else {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kc), [&](int k) {
          const EA* src = a_mat + static_cast<std::size_t>(k0 + k) * lda + i0;
          for (int p = 0; p < row_panels; ++p) {
            float* dst = a_pack + (static_cast<std::size_t>(p) * kc + k) * MR;
            for (int r = 0; r < MR; ++r) dst[r] = p * MR + r < rows ? load(src, p * MR + r) : 0.0f;
          }
        });
      }
      // Pack op(b)[k0 .. k0+kc, j0 .. j0+cols], zero-padded to whole column panels.
      if (!trans_b) {
        if constexpr (Element<EB>::block == 1) {
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kc), [&](int k) {
            const EB* src = b_mat + static_cast<std::size_t>(k0 + k) * ldb + j0;
            const int full_panels = cols / NR;
            for (int q = 0; q < full_panels; ++q) {
              float* dst = b_pack + (static_cast<std::size_t>(q) * kc + k) * NR;
              for (int j = 0; j < NR; ++j) dst[j] = load(src, q * NR + j);
            }
            for (int q = full_panels; q < col_panels; ++q) {
              float* dst = b_pack + (static_cast<std::size_t>(q) * kc + k) * NR;
              for (int j = 0; j < NR; ++j) dst[j] = q * NR + j < cols ? load(src, q * NR + j) : 0.0f;
            }
          });
        }
      } else {  // b stored transposed (a weight [N, K]; ldb and the slab's start in items: blocks for q8_0, q4_0)
        pack_rows<NR>(team, b_mat + static_cast<std::size_t>(j0) * ldb + k0 / Element<EB>::block, ldb, cols,
                      col_panels, kc, b_pack);
      }
      team.team_barrier();

      // The first slab applies beta (0: c is not read), later slabs add to c.
      const float c_scale = s == 0 ? beta : 1.0f;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, row_panels * col_panels), [&](int t) {
        const int q = t % col_panels, p = t / col_panels;  // consecutive tiles share an A micro-panel
        const float* ap = a_pack + static_cast<std::size_t>(p) * kc * MR;
        const float* bp = b_pack + static_cast<std::size_t>(q) * kc * NR;
        // Registers hold the sum over `chunk` steps; chunk sums are added into acc (L1 on the host).
        float acc[MR][NR];
        for (int r = 0; r < MR; ++r)
          for (int j = 0; j < NR; ++j) acc[r][j] = 0.0f;
        for (int k0c = 0; k0c < kc; k0c += chunk) {
          const int k_end = kc - k0c < chunk ? kc : k0c + chunk;
          float part[MR][NR];
          for (int r = 0; r < MR; ++r)
            for (int j = 0; j < NR; ++j) part[r][j] = 0.0f;
          for (int k = k0c; k < k_end; ++k) {
            const float* ak = ap + k * MR;
            const float* bk = bp + k * NR;
            for (int r = 0; r < MR; ++r) {
              const float ar = ak[r];
              for (int j = 0; j < NR; ++j) part[r][j] += ar * bk[j];
            }
          }
          for (int r = 0; r < MR; ++r)
            for (int j = 0; j < NR; ++j) acc[r][j] += part[r][j];
        }
        const int r_end = rows - p * MR < MR ? rows - p * MR : MR;
        const int j_end = cols - q * NR < NR ? cols - q * NR : NR;
        float* ct = c_blk + static_cast<std::size_t>(p * MR) * ldc + q * NR;
        if (r_end == MR && j_end == NR) {
          for (int r = 0; r < MR; ++r) store_row(ct + static_cast<std::size_t>(r) * ldc, acc[r], NR, c_scale);
        } else {
          for (int r = 0; r < r_end; ++r) store_row(ct + static_cast<std::size_t>(r) * ldc, acc[r], j_end, c_scale);
        }
      });
      team.team_barrier();
    }
  }

  // pack[(r / P) · kc · P + k · P + r % P] = src[r · ld + k] for r < rows, k < kc, zeros up to whole panels: a row-major
  // operand whose rows become the panels' columns (a untransposed, P = MR; b transposed, P = NR). Whole 16 x 16 tiles
  // are read transposed (load.hpp), the ragged edges value by value, and the next 16 rows are fetched ahead: a slab's
  // stretch of a row is too short a run for the hardware prefetcher. Packing one value at a time, strided, was most of
  // a 16-row GEMM's time (docs/benchmarks.md, "The GEMM for prefill rows"). src and ld count items: for q8_0 and q4_0
  // blocks, src a row's first block of the slab; a tile's 16 values of a row are then half a block, widened first
  // (load_lanes) into an f32 tile that is transposed as f32 is, so the pack holds the values to_f32 would give.
  template <int P, class E>
  KOKKOS_INLINE_FUNCTION void pack_rows(const Team& team, const E* src, int ld, int rows, int panels, int kc,
                                        float* pack) const {
    static_assert(P % 8 == 0, "each half of a 16-row tile lies in one panel");
    const auto at = [&](int r, int k) {
      return pack + static_cast<std::size_t>(r / P) * kc * P + static_cast<std::size_t>(k) * P + r % P;
    };
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (panels * P + 15) / 16), [&](int g) {
      const int r0 = 16 * g;
      for (int r = r0 + 16; r < r0 + 32 && r < rows; ++r) prefetch_span(src + static_cast<std::size_t>(r) * ld, kc);
      int k = 0;
      if (r0 + 16 <= rows)
        for (; k + 16 <= kc; k += 16) {
          if constexpr (Element<E>::block == 1) {
            load_transposed_16(src + static_cast<std::size_t>(r0) * ld + k, ld, at(r0, k), at(r0 + 8, k), P);
          } else {
            float tile[16][16];
            for (int j = 0; j < 16; ++j) load_lanes<16, 1>(src + static_cast<std::size_t>(r0 + j) * ld, k, 0, tile[j]);
            load_transposed_16(&tile[0][0], 16, at(r0, k), at(r0 + 8, k), P);
          }
        }
      for (int r = r0; r < r0 + 16 && r < panels * P; ++r)
        for (int kk = k; kk < kc; ++kk) *at(r, kk) = r < rows ? load(src + static_cast<std::size_t>(r) * ld, kk) : 0.0f;
    });
  }

  KOKKOS_INLINE_FUNCTION void store_row(float* dst, const float* acc, int n, float c_scale) const {
    if (c_scale == 0.0f) {
      for (int j = 0; j < n; ++j) dst[j] = alpha * acc[j];
    } else {
      for (int j = 0; j < n; ++j) dst[j] = alpha * acc[j] + c_scale * dst[j];
    }
  }
};

namespace detail {

// Splits `extent` into `blocks` near-equal blocks whose size is a multiple of `multiple`.
inline int block_size(int extent, int blocks, int multiple) {
  const int size = (extent + blocks - 1) / blocks;
  return (size + multiple - 1) / multiple * multiple;
}

}  // namespace detail

// c = alpha · op(a) · op(b) + beta · c with the blocked kernel; c is not empty.
template <class Space, class Tune, class EA = float, class EB = float>
void matmul_blocked(const Tensor3<Space>& c, const ConstTensor3Of<Space, EA>& a, const ConstTensor3Of<Space, EB>& b,
                    bool trans_a, bool trans_b, float alpha, float beta) {
  const int batches = static_cast<int>(c.extent(0));
  const int M = static_cast<int>(c.extent(1)), N = static_cast<int>(c.extent(2));
  const int K = static_cast<int>(trans_a ? a.extent(1) : a.extent(2));
  using Kernel = MatmulBlocked<Space, Tune, EA, EB>;
  using Tiles = typename Kernel::Tiles;
  if constexpr (Element<EB>::block > 1)
    require(trans_b && !trans_a && K == static_cast<int>(b.extent(2)) * Element<EB>::block, "matmul: a ",
            dtype_name(Element<EB>::dtype), " b is a weight [N, K] read transposed, K whole blocks");
  // Fewest blocks that fit the tile limits, then (where the league is small) a few more if that
  // shortens the slowest team's share: e.g. 9 equal blocks on 2 threads run as 5 + 4.
  const int min_rb = (M + Tiles::block_rows - 1) / Tiles::block_rows;
  const int min_cb = (N + Tiles::block_cols - 1) / Tiles::block_cols;
  const long long teams_at_once =
      std::max<long long>(1, Space().concurrency() / Tiles::team_size);  // teams that run side by side
  int row_blocks = min_rb, col_blocks = min_cb;
  double best = -1;
  for (int rb = min_rb; rb <= min_rb + 3; ++rb) {
    for (int cb = min_cb; cb <= min_cb + 3; ++cb) {
      const int mc = detail::block_size(M, rb, Kernel::MR), nc = detail::block_size(N, cb, Kernel::NR);
      if ((M + mc - 1) / mc != rb || (N + nc - 1) / nc != cb) continue;  // an empty block
      const long long league = static_cast<long long>(batches) * rb * cb;
      const long long waves = (league + teams_at_once - 1) / teams_at_once;
      // Makespan in padded multiply-adds, plus a little per block for packing and its C traffic.
      const double cost = static_cast<double>(waves) * mc * nc * (1.0 + 0.02 * (rb * cb));
      if (best < 0 || cost < best) best = cost, row_blocks = rb, col_blocks = cb;
    }
  }
  const int block_rows = detail::block_size(M, row_blocks, Kernel::MR);
  const int block_cols = detail::block_size(N, col_blocks, Kernel::NR);
  const int slab = K < Tiles::slab ? (K > 0 ? K : 1) : Tiles::slab;
  const std::size_t bytes = Kernel::scratch_floats(block_rows, block_cols, slab) * sizeof(float);
  const auto policy = typename Kernel::Policy(batches * row_blocks * col_blocks, Tiles::team_size)
                          .set_scratch_size(Tiles::scratch_level, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for("ptk::matmul_forward", policy,
                       Kernel{c, a, b, trans_a, trans_b, alpha, beta, M, N, K, block_rows, block_cols, slab,
                              row_blocks, col_blocks});
}

}  // namespace ptk::kernels
