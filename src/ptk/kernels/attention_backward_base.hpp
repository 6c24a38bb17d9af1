#pragma once
// What the two attention backward kernels share (attention_backward.hpp): the row term Drow, the
// staging of query and key tiles, and the tile of probabilities P and dS.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/fast_exp.hpp"
#include "ptk/kernels/detail/scratch.hpp"
#include "ptk/kernels/heads.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

// ---------------------------------------------------------------------------------------------------
// Backward (FlashAttention-2's): the probabilities are rebuilt tile by tile from the saved lse, so the
// [T,S] matrices P, dP and dS exist only one [query_rows, key_rows] tile at a time, in team scratch.
// No atomics: one kernel owns key tiles and sums dK, dV over the query tiles; another owns query tiles
// and sums dQ over the key tiles. Both recompute the scores and dP (14·T·S·D FLOPs in all where a
// kernel with atomic dQ needs 10), and every gradient element is summed by one thread in a fixed
// order, so results are bitwise reproducible on every backend.
namespace detail {

// acc[r][c] += Σ_{x ∈ [x0, x1)} a[r·a_row + x·a_x] · b[x·b_x + c]: the register-blocked inner product of
// every backward product (a broadcast per row, NR consecutive floats of b per step).
template <int MR, int NR>
KOKKOS_INLINE_FUNCTION void micro_product(float (&acc)[MR][NR], const float* a, int a_row, int a_x, const float* b,
                                          int b_x, int x0, int x1) {
  for (int x = x0; x < x1; ++x) {
    const float* bx = b + x * b_x;
    for (int r = 0; r < MR; ++r) {
      const float av = a[r * a_row + x * a_x];
      for (int c = 0; c < NR; ++c) acc[r][c] += av * bx[c];
    }
  }
}

}  // namespace detail

// Drow[h,t] = dout[h,t]·out[h,t] (0 for a row that attended nothing, lse = −inf): the row term of
// dS = P ∘ (dP − Drow), since Σ_j P[t,j] dP[t,j] = dout[t]·out[t].
template <class Space, class Tune = Tuning<Space>, class E = float>
struct AttentionBackwardRows {
  Matrix<Space> drow;
  ConstHeadsOf<Space, E> dout, out;
  ConstMatrix<Space> lse;
  int T, D;
  KOKKOS_INLINE_FUNCTION void operator()(const int e) const {
    const int h = e / T, t = e % T;
    float sum = 0.0f;
    const E* g = head_row(dout, h, t);
    const E* o = head_row(out, h, t);
    for (int d = 0; d < D; ++d) sum += widen(g[d]) * widen(o[d]);
    drow(h, t) = lse(h, t) == -__builtin_huge_valf() ? 0.0f : sum;
  }
};

// What both backward kernels share: tile sizes, scratch types, and the score tile. A step stages
// scale·q (Qs) and dout (dOs) rows with their lse and Drow, and k (transposed, Kt) and v (transposed,
// Vt) rows; then every thread computes, for each of its MR × NR micro-tiles of the [query, key] tile,
//   P  = exp(Qs·Kt − lse)                (0 where masked, padded, or for a row with lse = −inf)
//   dS = P ∘ (dOs·Vt − Drow)             (0 where P is masked: never 0 · NaN)
// into Ps and dSs (which may be the same buffer: each element is read and written by its own thread).
// Rows with lse = −inf are staged as zeros, so they add nothing anywhere (no −inf · 0). E: the element type of q, k,
// v, dout, out and the gradients (f32, bf16, f16), widened as the tiles are staged; lse, Drow and every sum fp32.
template <class Space, class Tune = Tuning<Space>, class E = float>
struct AttentionBackwardBase {
  using Tiles = typename Tune::attention;
  static constexpr int BQ = Tiles::backward_query_rows, BK = Tiles::backward_key_rows;
  static constexpr int MR = Tiles::micro_rows, NR = Tiles::micro_cols;
  // NR % MR: the MR keys of a dK/dV micro-tile lie in one NR-wide column of score micro-tiles.
  static_assert(BK % NR == 0 && BQ % MR == 0 && NR % MR == 0, "attention backward tiles: micro tiles must divide them");
  using Policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  using ScratchMatrix = ScratchMatrixOf<Space>;
  using ScratchVector = ScratchVectorOf<Space>;

  ConstHeadsOf<Space, E> dout, q, k, v;
  ConstMatrix<Space> lse, drow;
  float scale;
  bool causal;
  int T, S, D, Dp;  // Dp: D padded to a multiple of NR (zeros in scratch)
  int level;
  int group;  // query heads per kv head: query head h reads kv head h / group
  bool accumulate;  // the gradients add the kernel's sums; false: they are written (their old values not read)

  // Keys [0, n) of the key tile at k0 are attended by row i of the query tile at q0 (as the forward).
  KOKKOS_INLINE_FUNCTION int valid_keys(int i, int q0, int qcount, int k0, int kcount) const {
    if (!causal) return kcount;
    const int t = q0 + (i < qcount ? i : qcount - 1);
    const int n = t - k0 + 1;
    return n < 0 ? 0 : (n < kcount ? n : kcount);
  }

  // Query rows [q0, q0 + qcount): Qs = scale·q, dOs = dout, ls = lse, ds = Drow; padding and rows with
  // lse = −inf are zeros (ls = −inf).
  KOKKOS_INLINE_FUNCTION void stage_queries(const Team& team, int head, int q0, int qcount, const ScratchMatrix& Qs,
                                            const ScratchMatrix& dOs, const ScratchVector& ls,
                                            const ScratchVector& ds) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BQ), [&](int i) {
      const float l = i < qcount ? lse(head, q0 + i) : -__builtin_huge_valf();
      const int n = l == -__builtin_huge_valf() ? 0 : D;
      float* qs = &Qs(i, 0);
      float* gs = &dOs(i, 0);
      const E* qg = n ? head_row(q, head, q0 + i) : nullptr;
      const E* gg = n ? head_row(dout, head, q0 + i) : nullptr;
      for (int d = 0; d < n; ++d) qs[d] = scale * widen(qg[d]);
      for (int d = n; d < Dp; ++d) qs[d] = 0.0f;
      for (int d = 0; d < n; ++d) gs[d] = widen(gg[d]);
      for (int d = n; d < Dp; ++d) gs[d] = 0.0f;
      ls(i) = l;
      ds(i) = n ? drow(head, q0 + i) : 0.0f;
    });
  }

  // Key rows [k0, k0 + kcount) of kv head kv_head, transposed: Kt[d][j], Vt[d][j] (zeros past kcount and D).
  KOKKOS_INLINE_FUNCTION void stage_keys_transposed(const Team& team, int kv_head, int k0, int kcount,
                                                    const ScratchMatrix& Kt, const ScratchMatrix& Vt) const {
    stage_transposed<Tune>(team, k, kv_head, k0, kcount, BK, D, Dp, 1.0f, &Kt(0, 0), BK);
    stage_transposed<Tune>(team, v, kv_head, k0, kcount, BK, D, Dp, 1.0f, &Vt(0, 0), BK);
  }

  // P and dS of one [BQ, BK] tile (see above). Micro-tiles wholly masked for their rows are skipped:
  // neither product reads them (their rows or keys lie outside the ranges the products visit).
  KOKKOS_INLINE_FUNCTION void probabilities(const Team& team, int q0, int qcount, int k0, int kcount,
                                            const ScratchMatrix& Qs, const ScratchMatrix& dOs, const ScratchMatrix& Kt,
                                            const ScratchMatrix& Vt, const ScratchVector& ls, const ScratchVector& ds,
                                            const ScratchMatrix& Ps, const ScratchMatrix& dSs) const {
    constexpr int col_tiles = BK / NR;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (BQ / MR) * col_tiles), [&](int tile) {
      const int i0 = tile / col_tiles * MR, c0 = tile % col_tiles * NR;
      if (i0 >= qcount || c0 >= valid_keys(i0 + MR - 1, q0, qcount, k0, kcount)) return;
      const int dp = Dp;
      float acc[MR][NR];
      for (int r = 0; r < MR; ++r)
        for (int c = 0; c < NR; ++c) acc[r][c] = 0.0f;
      detail::micro_product<MR, NR>(acc, &Qs(i0, 0), dp, 1, &Kt(0, c0), BK, 0, dp);
      // Keys [0, n[r]) of the micro-tile are attended by its row r (none when lse = −inf). Every
      // element is computed and then selected, so the loops over c vectorize (fast_exp included).
      int n[MR];
      for (int r = 0; r < MR; ++r)
        n[r] = ls(i0 + r) == -__builtin_huge_valf() ? 0 : valid_keys(i0 + r, q0, qcount, k0, kcount) - c0;
      float* ps = &Ps(i0, c0);
      for (int r = 0; r < MR; ++r) {
        const float l = n[r] > 0 ? ls(i0 + r) : 0.0f;
        const int nr = n[r];
        for (int c = 0; c < NR; ++c) {
          const float p = fast_exp(acc[r][c] - l);
          ps[r * BK + c] = c < nr ? p : 0.0f;
        }
      }
      for (int r = 0; r < MR; ++r)
        for (int c = 0; c < NR; ++c) acc[r][c] = 0.0f;
      detail::micro_product<MR, NR>(acc, &dOs(i0, 0), dp, 1, &Vt(0, c0), BK, 0, dp);
      float* dss = &dSs(i0, c0);
      for (int r = 0; r < MR; ++r) {
        const float dr = ds(i0 + r);
        const int nr = n[r];
        for (int c = 0; c < NR; ++c) {
          const float g = ps[r * BK + c] * (acc[r][c] - dr);
          dss[r * BK + c] = c < nr ? g : 0.0f;
        }
      }
    });
  }
};

// dK and dV: a team owns one kv head's key tile, keeps its K and V (transposed) and the dK, dV
// accumulators in scratch, and streams the query tiles of every query head of its group that attend it
// (causal: from the tile that holds its first key on): a kv head's gradient is summed in one place, in a
// fixed order, with no copy of K and V per query head. Per query tile: P and dS, then dV += Pᵀ·dOs and dK += dSᵀ·Qs (Qs holds
// scale·q) over MR keys × NR head dims micro-tiles; the reduction over query rows starts at the first
// row that attends the micro-tile's first key.

}  // namespace ptk::kernels
