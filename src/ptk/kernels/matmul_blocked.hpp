#pragma once
// The host's GEMM (Tune::matmul::register_tiled == false; tuning.hpp, HostMatmul): Goto/BLIS-style
// cache blocks of c, op(a) and op(b) packed slab by slab into team scratch, register micro-tiles.
// c[B,M,N] = alpha · op(a) · op(b) + beta · c as matmul.hpp states it; a and b stored as EA and EB (f32, bf16,
// f16: packing reads them as float, load.hpp; b also q8_0 or q4_0 when transposed, a weight [N, K] whose blocks lie
// along k), c and every sum in f32.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "ptk/core/compat.hpp"
#include "ptk/core/dtype_name.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/load.hpp"
#include "ptk/kernels/detail/memory_hints.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

// One team per (batch, row block). Its threads share the L3, so op(a)'s block is packed once a slab, by all of them,
// into team scratch, as Goto's BLAS shares its packed panel; each thread then takes an equal share of the columns,
// packs op(b)'s slab of each of its column blocks into its own part of the scratch (L2) and runs the micro-tiles:
// row panels outer, so an 8-row A micro-panel stays in L1 while the block's B micro-panels stream from L2. A barrier
// ends the slab (the next one overwrites the shared A panel). With enough row blocks, a team is one thread and the
// threads take whole row blocks (matmul_blocked below chooses). Either way each value of a is packed once and each
// of b once a row block: teams of one thread a (row block, column block), which this replaced, packed a 512-row
// prompt's activations nine times and its weight twice (docs/benchmarks.md, "The GEMM's teams share a packed A").
// Summing k in chunks, chunks into slab sums and slab sums into c keeps every fp32 partial sum
// ~ chunk + slab/chunk + K/slab additions deep, not K (the host: 384 + 6 + K/2048).
template <class Space, class Tune, class EA = float, class EB = float>
struct MatmulBlocked {
  static_assert(Element<EA>::block == 1, "a: one value per item, a pointer steps over values");
  using Tiles = typename Tune::matmul;
  // A quantized b is read transposed only (pack_rows): slabs start on whole blocks, tiles on half blocks.
  static_assert(Element<EB>::block == 1 || Tiles::slab % Element<EB>::block == 0, "slabs of whole blocks");
  static constexpr int MR = Tiles::micro_rows, NR = Tiles::micro_cols;
  // Summation depth: k is summed in chunks of `chunk`, chunks into a slab sum, slab sums into c.
  static constexpr int chunk = Tiles::chunk;
  static constexpr int pack_k = 16;  // k-steps a copy_runs call packs
  using Policy = Kokkos::TeamPolicy<Space>;
  using Team = typename Policy::member_type;
  using Scratch =
      Kokkos::View<float*, typename Space::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  Tensor3<Space> c;
  ConstTensor3Of<Space, EA> a;
  ConstTensor3Of<Space, EB> b;
  ConstVector<Space> bias;  // [N], added to every row with the first slab, or empty
  bool trans_a, trans_b;
  float alpha, beta;
  int M, N, K;
  int block_rows, block_cols, slab;  // block_rows % MR == 0, block_cols % NR == 0
  int row_blocks;
  int thread_cols;  // a multiple of NR: thread t takes columns [t · thread_cols, (t + 1) · thread_cols)
  bool b_in_place;  // op(b) = b, f32, its blocks' rows spread over the L2: blocks of whole vectors are not packed

  // Floats of scratch per team of `threads`: the shared packed A block and each thread's packed B panel of one slab.
  KOKKOS_INLINE_FUNCTION static std::size_t scratch_floats(int block_rows, int block_cols, int slab, int threads) {
    return (static_cast<std::size_t>(block_rows) + static_cast<std::size_t>(block_cols) * threads) *
           static_cast<std::size_t>(slab);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int batch = team.league_rank() / row_blocks;
    const int i0 = (team.league_rank() % row_blocks) * block_rows;
    const int rows = M - i0 < block_rows ? M - i0 : block_rows;
    const int row_panels = (rows + MR - 1) / MR;
    const int ab = a.extent(0) == 1 ? 0 : batch, bb = b.extent(0) == 1 ? 0 : batch;
    const int lda = static_cast<int>(a.extent(2)), ldb = static_cast<int>(b.extent(2));
    const EA* const a_mat = &a(ab, 0, 0);
    const EB* const b_mat = &b(bb, 0, 0);

    // +: pass a value, not a reference to the static member (which has no device-side definition).
    Scratch scratch(team.team_scratch(+Tiles::scratch_level),
                    scratch_floats(block_rows, block_cols, slab, team.team_size()));
    float* const a_pack = scratch.data();  // [row_panels][kc][MR], shared
    float* const b_pack = a_pack + (static_cast<std::size_t>(block_rows) +
                                    static_cast<std::size_t>(block_cols) * team.team_rank()) * slab;  // [col_panels][kc][NR]

    const int slabs = K > 0 ? (K + slab - 1) / slab : 1;
    for (int s = 0; s < slabs; ++s) {
      const int k0 = s * slab;
      const int kc = K - k0 < slab ? K - k0 : slab;
      pack_a(team, a_mat, lda, i0, rows, row_panels, k0, kc, a_pack);
      team.team_barrier();
      const int j_begin = team.team_rank() * thread_cols;
      const int j_end = N - j_begin < thread_cols ? N : j_begin + thread_cols;
      for (int j0 = j_begin; j0 < j_end; j0 += block_cols) {
        const int cols = j_end - j0 < block_cols ? j_end - j0 : block_cols;
        const int col_panels = (cols + NR - 1) / NR;
        // The tiles read op(b)'s block in place, its rows ldb apart, or packed, NR apart.
        const float* const b_direct = b_in_place_at(b_mat, ldb, k0, j0, cols);
        if (!b_direct) pack_b(team, b_mat, ldb, j0, cols, col_panels, k0, kc, b_pack);
        const int ldbp = b_direct ? ldb : NR;
        // The first slab applies beta (0: c is not read) and adds the bias, later slabs add to c.
        const float c_scale = s == 0 ? beta : 1.0f;
        const float* const bias_blk = s == 0 && bias.data() ? bias.data() + j0 : nullptr;
        float* const c_blk = &c(batch, i0, j0);
        for (int p = 0; p < row_panels; ++p)
          for (int q = 0; q < col_panels; ++q)  // consecutive tiles share an A micro-panel
            tile_rows<MR>(a_pack + static_cast<std::size_t>(p) * kc * MR,
                          b_direct ? b_direct + q * NR : b_pack + static_cast<std::size_t>(q) * kc * NR, ldbp, kc,
                          c_blk + static_cast<std::size_t>(p * MR) * N + q * NR, rows - p * MR, cols - q * NR,
                          c_scale, bias_blk ? bias_blk + q * NR : nullptr);
      }
      team.team_barrier();  // the next slab's A pack overwrites the panel
    }
  }

  // Pack op(a)[i0 .. i0+rows, k0 .. k0+kc], zero-padded to whole row panels, by the whole team; reads go along the
  // contiguous index of a's storage.
  KOKKOS_INLINE_FUNCTION void pack_a(const Team& team, const EA* a_mat, int lda, int i0, int rows, int row_panels,
                                     int k0, int kc, float* a_pack) const {
    if (!trans_a) {
      pack_rows<MR>(team, true, a_mat + static_cast<std::size_t>(i0) * lda + k0, lda, rows, row_panels, kc, a_pack);
    } else {  // a stored [K, M]: a row k holds MR values of each panel, copied whole (the last panel padded)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (kc + pack_k - 1) / pack_k), [&](int g) {
        copy_runs<MR>(a_mat + static_cast<std::size_t>(k0) * lda + i0, lda, g * pack_k, kc, rows, row_panels, a_pack);
      });
    }
  }

  // op(b)[k0, j0] in b itself where the tiles read the block in place: b_in_place, and whole vectors of columns (a
  // ragged edge is packed, zero-padded); else nullptr.
  KOKKOS_INLINE_FUNCTION const float* b_in_place_at(const EB* b_mat, int ldb, int k0, int j0, int cols) const {
    if constexpr (std::is_same_v<EB, float>) {
      if (b_in_place && cols % line_floats == 0) return b_mat + static_cast<std::size_t>(k0) * ldb + j0;
    }
    return nullptr;
  }

  // Pack op(b)[k0 .. k0+kc, j0 .. j0+cols], zero-padded to whole column panels, by the calling thread alone.
  KOKKOS_INLINE_FUNCTION void pack_b(const Team& team, const EB* b_mat, int ldb, int j0, int cols, int col_panels,
                                     int k0, int kc, float* b_pack) const {
    if (!trans_b) {
      if constexpr (Element<EB>::block == 1)
        for (int k = 0; k < kc; k += pack_k)
          copy_runs<NR>(b_mat + static_cast<std::size_t>(k0) * ldb + j0, ldb, k, kc, cols, col_panels, b_pack);
    } else {  // b stored transposed (a weight [N, K]; ldb and the slab's start in items: blocks for q8_0, q4_0)
      pack_rows<NR>(team, false, b_mat + static_cast<std::size_t>(j0) * ldb + k0 / Element<EB>::block, ldb, cols,
                    col_panels, kc, b_pack);
    }
  }

  // A ragged edge's tile multiplies the rows and columns it has, not the whole MR x NR: its rows rounded up to a power
  // of two (MR, MR / 2, ... 1), its columns to whole vectors of 16 (NR, NR - 16, ... 16). A 16-column edge took the
  // full tile's time for a third of its columns (N = 1024: one panel in 22; a Llama's 256-wide k and v projections:
  // one in 6), a 17-token prompt's last row the time of eight.
  template <int R>
  KOKKOS_INLINE_FUNCTION void tile_rows(const float* ap, const float* bp, int ldbp, int kc, float* ct, int rows_left,
                                        int cols_left, float c_scale, const float* bias_tile) const {
    if constexpr (R > 1)
      if (rows_left <= R / 2) return tile_rows<R / 2>(ap, bp, ldbp, kc, ct, rows_left, cols_left, c_scale, bias_tile);
    tile_cols<R, NR>(ap, bp, ldbp, kc, ct, rows_left, cols_left, c_scale, bias_tile);
  }
  template <int R, int C>
  KOKKOS_INLINE_FUNCTION void tile_cols(const float* ap, const float* bp, int ldbp, int kc, float* ct, int rows_left,
                                        int cols_left, float c_scale, const float* bias_tile) const {
    static_assert(NR % line_floats == 0, "columns narrow by whole vectors");
    if constexpr (C > line_floats)
      if (cols_left <= C - line_floats)
        return tile_cols<R, C - line_floats>(ap, bp, ldbp, kc, ct, rows_left, cols_left, c_scale, bias_tile);
    tile<R, C>(ap, bp, ldbp, kc, ct, rows_left, cols_left, c_scale, bias_tile);
  }

  // c_tile (row stride N) = alpha · (A micro-panel · B micro-panel over kc) (+ bias) + c_scale · c_tile, the first
  // rows_left × cols_left of the first R rows and C columns of the MR × NR tile. Registers hold the sum over `chunk`
  // steps of Tiles::register_cols columns at a time (every column where the registers allow); chunk sums are added
  // into acc (L1). Each value's sum runs over k in the same order whatever the grouping: the same bits. B's rows are
  // ldbp floats apart (NR packed, ldb in place); they are fetched Tiles::prefetch_distance / NR k-steps (16) ahead:
  // the block's B panel lies in L2.
  template <int R, int C>
  KOKKOS_INLINE_FUNCTION void tile(const float* ap, const float* bp, int ldbp, int kc, float* ct, int rows_left,
                                   int cols_left, float c_scale, const float* bias_tile) const {
    constexpr int G = C < Tiles::register_cols ? C : Tiles::register_cols;
    static_assert(C % G == 0, "whole groups of columns");
    const std::size_t ahead = static_cast<std::size_t>(ldbp - NR) * (Tiles::prefetch_distance / NR);  // beyond NR
    float acc[R][C];
    for (int k0c = 0; k0c < kc; k0c += chunk) {
      const int k_end = kc - k0c < chunk ? kc : k0c + chunk;
      for (int g = 0; g < C; g += G) {
        float part[R][G];
        for (int r = 0; r < R; ++r)
          for (int j = 0; j < G; ++j) part[r][j] = 0.0f;
        for (int k = k0c; k < k_end; ++k) {
          const float* ak = ap + k * MR;
          const float* bk = bp + static_cast<std::size_t>(k) * ldbp + g;
          if (g % line_floats == 0)  // a hint a line: groups narrower than a line share one
            for (int j = 0; j < G; j += line_floats) prefetch_ahead<Tiles>(bk + ahead, j);
          for (int r = 0; r < R; ++r) {
            const float ar = ak[r];
            PTK_SIMD_LOOP  // narrow tiles: g++ otherwise vectorizes across r, with shuffles, at 1/10 of the speed
            for (int j = 0; j < G; ++j) part[r][j] += ar * bk[j];
          }
        }
        for (int r = 0; r < R; ++r)
          for (int j = 0; j < G; ++j) acc[r][g + j] = k0c == 0 ? part[r][j] : acc[r][g + j] + part[r][j];
      }
    }
    const int r_end = rows_left < R ? rows_left : R;
    const int j_end = cols_left < C ? cols_left : C;
    if (r_end == R && j_end == C) {
      for (int r = 0; r < R; ++r) store_row(ct + static_cast<std::size_t>(r) * N, acc[r], C, c_scale, bias_tile);
    } else {
      for (int r = 0; r < r_end; ++r) store_row(ct + static_cast<std::size_t>(r) * N, acc[r], j_end, c_scale, bias_tile);
    }
  }

  // pack[(j / P) · kc · P + k · P + j % P] = src[k · ld + j] for k in [k_begin, k_begin + pack_k) within kc, j < count,
  // zeros up to whole panels: a row-major operand whose rows are already the panels' rows (a transposed, P = MR; b
  // untransposed, P = NR), copied P values at a time, panel by panel, so the writes run on through pack_k steps of
  // one panel. Copying a value at a time, k by k across the panels, was 2 % of a training step's samples; software
  // prefetch of the next steps' rows stalled the copy (docs/benchmarks.md, "The GEMM's copies for the backward").
  template <int P, class E>
  KOKKOS_INLINE_FUNCTION static void copy_runs(const E* src, int ld, int k_begin, int kc, int count, int panels,
                                               float* pack) {
    const int k_end = kc - k_begin < pack_k ? kc : k_begin + pack_k;
    const int full = count / P;
    for (int p = 0; p < panels; ++p)
      for (int k = k_begin; k < k_end; ++k) {
        const E* row = src + static_cast<std::size_t>(k) * ld + p * P;
        float* dst = pack + (static_cast<std::size_t>(p) * kc + k) * P;
        if (p < full) {
          if constexpr (std::is_same_v<E, float>) {
            std::memcpy(dst, row, P * sizeof(float));  // g++ leaves the loop below scalar at P = 8
          } else {
            for (int j = 0; j < P; ++j) dst[j] = load(row, j);
          }
        } else {
          for (int j = 0; j < P; ++j) dst[j] = p * P + j < count ? load(row, j) : 0.0f;
        }
      }
  }

  // pack[(r / P) · kc · P + k · P + r % P] = src[r · ld + k] for r < rows, k < kc, zeros up to whole panels: a row-major
  // operand whose rows become the panels' columns (a untransposed, P = MR; b transposed, P = NR). Whole 16 x 16 tiles
  // are read transposed (load.hpp), the ragged edges value by value, and the next 16 rows are fetched ahead, a line a
  // tile (their whole stretches at once stalled on full line buffers). by_team: the team's threads share the 16-row
  // groups, else the calling thread packs them all. Packing one value at a time, strided, was most of
  // a 16-row GEMM's time (docs/benchmarks.md, "The GEMM for prefill rows"). src and ld count items: for q8_0 and q4_0
  // blocks, src a row's first block of the slab; a tile's 16 values of a row are then half a block, widened first
  // (load_lanes) into an f32 tile that is transposed as f32 is, so the pack holds the values to_f32 would give.
  template <int P, class E>
  KOKKOS_INLINE_FUNCTION void pack_rows(const Team& team, bool by_team, const E* src, int ld, int rows, int panels,
                                        int kc, float* pack) const {
    static_assert(P % 8 == 0, "each half of a 16-row tile lies in one panel");
    const auto at = [&](int r, int k) {
      return pack + static_cast<std::size_t>(r / P) * kc * P + static_cast<std::size_t>(k) * P + r % P;
    };
    const auto group = [&](int g) {
      const int r0 = 16 * g;
      // The next group's rows a line a tile: fetching their whole stretch at once filled the line buffers and
      // stalled the pack.
      int k = 0;
      if (r0 + 16 <= rows)
        for (; k + 16 <= kc; k += 16) {
          for (int r = r0 + 16; r < r0 + 32 && r < rows; ++r)
            prefetch_span(src + static_cast<std::size_t>(r) * ld + k / Element<E>::block, 16);
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
    };
    const int groups = (panels * P + 15) / 16;
    if (by_team) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, groups), group);
    } else {
      for (int g = 0; g < groups; ++g) group(g);
    }
  }

  // dst[j] = alpha · acc[j] (+ bias[j]) + c_scale · dst[j], as the decode kernel stores (c_scale 0: dst not read).
  KOKKOS_INLINE_FUNCTION void store_row(float* dst, const float* acc, int n, float c_scale, const float* bias_row) const {
    if (bias_row) {
      if (c_scale == 0.0f) {
        for (int j = 0; j < n; ++j) dst[j] = alpha * acc[j] + bias_row[j];
      } else {
        for (int j = 0; j < n; ++j) dst[j] = alpha * acc[j] + bias_row[j] + c_scale * dst[j];
      }
    } else if (c_scale == 0.0f) {
      for (int j = 0; j < n; ++j) dst[j] = alpha * acc[j];
    } else {
      for (int j = 0; j < n; ++j) dst[j] = alpha * acc[j] + c_scale * dst[j];
    }
  }

};

namespace detail {

// The most lines of a block of b read in place (kc rows of `cols` floats, ld floats apart) that fall on one set of an
// L2 of `sets` sets of 64-byte lines, were its lines spread evenly over the sets they touch. Rows whose starts differ
// by a multiple of the L2's period (sets · 16 floats) share sets: the starts take period / g offsets, g = gcd(ld,
// period) floats apart, so rows 4 KB apart (ld = 1024 floats) all start on 32 of 2048 sets.
inline long b_lines_per_set(int ld, int kc, int cols, int sets) {
  const long period = static_cast<long>(sets) * line_floats;
  const long g = std::gcd(static_cast<long>(ld), period);
  const long row_lines = (cols + line_floats - 1) / line_floats + (ld % line_floats != 0);
  const long touched = g >= static_cast<long>(cols) ? std::min<long>(sets, period / g * row_lines) : sets;
  return (static_cast<long>(kc) * row_lines + touched - 1) / touched;
}

// Splits `extent` into `blocks` near-equal blocks whose size is a multiple of `multiple`.
inline int block_size(int extent, int blocks, int multiple) {
  const int size = (extent + blocks - 1) / blocks;
  return (size + multiple - 1) / multiple * multiple;
}

}  // namespace detail

// c = alpha · op(a) · op(b) (+ bias) + beta · c with the blocked kernel; c is not empty, bias [N] or empty.
template <class Space, class Tune, class EA = float, class EB = float>
void matmul_blocked(const Tensor3<Space>& c, const ConstTensor3Of<Space, EA>& a, const ConstTensor3Of<Space, EB>& b,
                    bool trans_a, bool trans_b, float alpha, float beta, const ConstVector<Space>& bias) {
  const int batches = static_cast<int>(c.extent(0));
  const int M = static_cast<int>(c.extent(1)), N = static_cast<int>(c.extent(2));
  const int K = static_cast<int>(trans_a ? a.extent(1) : a.extent(2));
  using Kernel = MatmulBlocked<Space, Tune, EA, EB>;
  using Tiles = typename Kernel::Tiles;
  if constexpr (Element<EB>::block > 1)
    require(trans_b && !trans_a && K == static_cast<int>(b.extent(2)) * Element<EB>::block, "matmul: a ",
            dtype_name(Element<EB>::dtype), " b is a weight [N, K] read transposed, K whole blocks");
  // Two ways to share the work among the threads, the cheaper one in padded multiply-adds and packed values (one
  // costs Tiles::pack_cost multiply-adds) for the slowest thread:
  // - rows: a team is one thread and takes whole row blocks, the fewest within the limit, their count over the batch
  //   made a multiple of the threads where a few more blocks do it; each packs all of b once per block;
  // - columns (fewer row blocks than threads): the threads form teams that pack a row block of a once and split its
  //   columns, an equal share of NR-multiples a thread, cut into the fewest blocks within the limit (4096 on 2
  //   threads: 2048 each, 4 x 432 + 320); each packs its share of b once.
  using Policy = typename Kernel::Policy;
  const int threads = std::max(1, std::min<int>(Space().concurrency(), Tiles::team_threads));
  const int fewest = (M + Tiles::block_rows - 1) / Tiles::block_rows;
  const auto padded = [](int n, int multiple) { return static_cast<double>((n + multiple - 1) / multiple * multiple); };
  int row_blocks = fewest;
  for (int rb = fewest; rb < fewest + threads; ++rb)
    if (batches * rb % threads == 0) {
      row_blocks = rb;
      break;
    }
  const double rows_cost = [&] {
    const int rows = detail::block_size(M, row_blocks, Kernel::MR);
    const double waves = (batches * ((M + rows - 1) / rows) + threads - 1) / threads;
    return waves * (rows * padded(N, Kernel::NR) * K + Tiles::pack_cost * (static_cast<double>(N) + rows) * K);
  }();
  int team = 1;
  if (batches * fewest < threads) {
    const int t = threads / (batches * fewest), rows = detail::block_size(M, fewest, Kernel::MR);
    const int cols = detail::block_size(N, t, Kernel::NR);
    const double cols_cost = rows * static_cast<double>(cols) * K + Tiles::pack_cost * (cols + rows / t) * static_cast<double>(K);
    if (cols_cost < rows_cost) team = t, row_blocks = fewest;
  }
  const int block_rows = detail::block_size(M, row_blocks, Kernel::MR);
  row_blocks = (M + block_rows - 1) / block_rows;
  const int slab = K < Tiles::slab ? (K > 0 ? K : 1) : Tiles::slab;
  // op(b) = b in f32 is read in place where at most Tiles::b_in_place_lines of a block's lines share an L2 set: packing
  // it cost 4-8 % of the time at training shapes; in place with rows 4 or 6 KB apart, twice the time (lines evicted).
  const auto in_place = [&](int block_cols) {
    return std::is_same_v<EB, float> && !trans_b &&
           detail::b_lines_per_set(static_cast<int>(b.extent(2)), slab, block_cols, Tiles::l2_sets) <=
               Tiles::b_in_place_lines;
  };
  const auto kernel_for = [&](int thread_cols) {
    const int blocks = (thread_cols + Tiles::block_cols - 1) / Tiles::block_cols;
    const int block_cols = detail::block_size(thread_cols, blocks, Kernel::NR);
    return Kernel{c, a, b, bias, trans_a, trans_b, alpha, beta, M, N, K, block_rows, block_cols, slab, row_blocks,
                  thread_cols, in_place(block_cols)};
  };
  team = std::max(1, std::min(team, Policy(1, 1).team_size_max(kernel_for(N), Kokkos::ParallelForTag())));
  const Kernel kernel = kernel_for(detail::block_size(N, team, Kernel::NR));
  const std::size_t bytes = Kernel::scratch_floats(block_rows, kernel.block_cols, slab, team) * sizeof(float);
  const auto policy = Policy(batches * row_blocks, team).set_scratch_size(Tiles::scratch_level, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for("ptk::matmul_forward", policy, kernel);
}

}  // namespace ptk::kernels
