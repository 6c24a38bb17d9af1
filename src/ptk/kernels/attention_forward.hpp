#pragma once
// attention_forward: out[B,H,T,D] = softmax(scale · q kᵀ, causal) · v and lse[B·H,T] = log Σ_j exp(scale · q·k_j)
// over the attended keys, for q[B,H,T,D], k and v [B,H/G,S,D] (query head h reads kv head h/G: grouped-query
// attention, G = 1 for plain multi-head); causal (needs T == S) lets query t see keys j <= t. q, k, v and out are
// heads views (heads.hpp): a projection's rows are read, and the output's rows written, in place.
// E: the element type of q and out, EKV of k and v (f32, bf16, f16; EKV is E, or a 16-bit KV cache read in place by
// f32 queries): widened as the tiles are copied, every sum and lse fp32, out rounded once.
#include <Kokkos_Core.hpp>

#include <type_traits>

#include "ptk/core/compat.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/compensated.hpp"
#include "ptk/kernels/detail/fast_exp.hpp"
#include "ptk/kernels/detail/scratch.hpp"
#include "ptk/kernels/heads.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {


// Flash-style forward: per (head, query tile) the [T,S] score matrix exists only one key tile at a
// time, in scratch. Online softmax: each row keeps its running max m and sum l; a new key tile with a
// larger max rescales the row's accumulator and sum by exp(m_old − m_new). Causal key tiles wholly
// after a query tile are never visited; inside the diagonal tile, masked keys are skipped (never
// multiplied by 0, so a NaN or inf in a masked row of k or v cannot reach the output).
// Special values follow the softmax kernel: a NaN score makes its row NaN; a row whose attended
// scores are all −inf gives 0 and lse = −inf.
template <class Space, class Tune = Tuning<Space>, class E = float, class EKV = E>
struct AttentionForward {
  using Tiles = typename Tune::attention;
  static constexpr int BQ = Tiles::query_rows, BK = Tiles::key_rows, MR = Tiles::micro_rows, NR = Tiles::micro_cols;
  static_assert(BK % NR == 0 && BQ % MR == 0, "attention tiles: micro tiles must divide the block");
  using Policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  using ScratchMatrix = ScratchMatrixOf<Space>;
  using ScratchVector = ScratchVectorOf<Space>;

  HeadsOf<Space, E> out;
  Matrix<Space> lse;
  ConstHeadsOf<Space, E> q;
  ConstHeadsOf<Space, EKV> k, v;
  float scale;
  bool causal;
  int T, S, D, Dp;  // Dp: D padded to a multiple of NR (zeros in scratch)
  int q_tiles;
  int level;
  int group;  // query heads per kv head

  // The team's scratch, in order (scratch.hpp: sized and carved from this one list).
  struct Scratch {
    ScratchMatrix Qs;     // [BQ, Dp] q tile, pre-multiplied by scale
    ScratchMatrix Os;     // [BQ, Dp] unnormalized output accumulator
    ScratchMatrix Kt;     // [Dp, BK] k tile, transposed
    ScratchMatrix Vs;     // [BK, Dp]
    ScratchMatrix Ps;     // [BQ, BK] scores, then probabilities
    ScratchVector m, l, alpha;  // [BQ] running max, running sum, this tile's rescale factor
  };
  template <class Arena>
  KOKKOS_INLINE_FUNCTION static Scratch take_scratch(Arena& arena, int Dp) {
    return Scratch{arena.template take<ScratchMatrix>(BQ, Dp), arena.template take<ScratchMatrix>(BQ, Dp),
                   arena.template take<ScratchMatrix>(Dp, BK), arena.template take<ScratchMatrix>(BK, Dp),
                   arena.template take<ScratchMatrix>(BQ, BK), arena.template take<ScratchVector>(BQ),
                   arena.template take<ScratchVector>(BQ), arena.template take<ScratchVector>(BQ)};
  }

  // Keys [0, valid) of the current key tile are attended by query row i of the tile. Padding rows
  // beyond the last query take the last query's count, so they never narrow a micro-tile's range.
  KOKKOS_INLINE_FUNCTION int valid_keys(int i, int q0, int qcount, int k0, int kcount) const {
    if (!causal) return kcount;
    const int t = q0 + (i < qcount ? i : qcount - 1);
    const int n = t - k0 + 1;
    return n < 0 ? 0 : (n < kcount ? n : kcount);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int rank = team.league_rank();
    const int head = rank / q_tiles;
    const int qt = q_tiles - 1 - rank % q_tiles;  // the longest (causal) query tiles first
    const int q0 = qt * BQ;
    const int qcount = T - q0 < BQ ? T - q0 : BQ;

    const Scratch sc = carve_scratch<AttentionForward>(team, level, Dp);
    const ScratchMatrix &Qs = sc.Qs, &Os = sc.Os, &Kt = sc.Kt, &Vs = sc.Vs, &Ps = sc.Ps;
    const ScratchVector &m = sc.m, &l = sc.l, &alpha = sc.alpha;

    // Scratch Views are contiguous LayoutRight: inner loops use raw row pointers, so the compiler
    // sees plain arrays (no View strides reloaded after every store).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BQ), [&](int i) {
      float* qs = &Qs(i, 0);
      float* os = &Os(i, 0);
      const int n = i < qcount ? D : 0;
      const E* qg = n ? head_row(q, head, q0 + i) : nullptr;
      for (int d = 0; d < n; ++d) qs[d] = scale * widen(qg[d]);
      for (int d = n; d < Dp; ++d) qs[d] = 0.0f;
      for (int d = 0; d < Dp; ++d) os[d] = 0.0f;
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BQ), [&](int i) {
      m(i) = -__builtin_huge_valf();
      l(i) = 0.0f;
    });

    const int key_end = causal ? (q0 + qcount < S ? q0 + qcount : S) : S;
    for (int k0 = 0; k0 < key_end; k0 += BK) {
      const int kcount = key_end - k0 < BK ? key_end - k0 : BK;
      team.team_barrier();  // the previous tile's Kt, Vs and Ps are no longer read
      stage_transposed<Tune>(team, k, head / group, k0, kcount, BK, D, Dp, 1.0f, &Kt(0, 0), BK);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BK), [&](int j) {
        float* vs = &Vs(j, 0);
        const int n = j < kcount ? D : 0;
        const EKV* vg = n ? head_row(v, head / group, k0 + j) : nullptr;
        for (int d = 0; d < n; ++d) vs[d] = widen(vg[d]);
        for (int d = n; d < Dp; ++d) vs[d] = 0.0f;
      });
      team.team_barrier();

      // Scores: Ps = Qs · Ktᵀ over micro-tiles; tiles wholly masked for their rows are skipped.
      const int col_tiles = BK / NR;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (BQ / MR) * col_tiles), [&](int tile) {
        const int i0 = tile / col_tiles * MR, c0 = tile % col_tiles * NR;
        if (i0 >= qcount || c0 >= valid_keys(i0 + MR - 1, q0, qcount, k0, kcount)) return;
        const float* qs = &Qs(i0, 0);
        const float* kt = &Kt(0, c0);
        const int dp = Dp;
        float acc[MR][NR];
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) acc[r][c] = 0.0f;
        for (int d = 0; d < dp; ++d) {
          const float* kd = kt + d * BK;
          for (int r = 0; r < MR; ++r) {
            const float qv = qs[r * dp + d];
            for (int c = 0; c < NR; ++c) acc[r][c] += qv * kd[c];
          }
        }
        float* ps = &Ps(i0, c0);
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) ps[r * BK + c] = acc[r][c];
      });
      team.team_barrier();

      // Online softmax, one row per thread: new max, rescale factor, probabilities, running sum.
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BQ), [&](int i) {
        const int n = i < qcount ? valid_keys(i, q0, qcount, k0, kcount) : 0;
        if (n == 0) {
          alpha(i) = 1.0f;
          return;
        }
        // Max and sum over L independent lanes (they vectorize), then across the lanes.
        constexpr int L = Tiles::lanes;
        float* pr = &Ps(i, 0);
        const int n_lanes = n / L * L;
        float lane_max[L];
        for (int c = 0; c < L; ++c) lane_max[c] = -__builtin_huge_valf();
        for (int j = 0; j < n_lanes; j += L) {
          PTK_SIMD_LOOP  // g++ leaves this select scalar unasked (16 scalar maxima a block)
          for (int c = 0; c < L; ++c) lane_max[c] = pr[j + c] > lane_max[c] ? pr[j + c] : lane_max[c];  // skips NaN
        }
        // Across the lanes pairwise (tree_max, tree_sum: log2(L) dependent steps). Chains of L scalar steps, two a
        // row and key tile, kept the softmax at 37 % of the forward's samples at T = 256; pairwise, 1.03-1.07x.
        float tile_max = tree_max(lane_max);
        for (int j = n_lanes; j < n; ++j) tile_max = pr[j] > tile_max ? pr[j] : tile_max;
        const float m_old = m(i);
        const float m_new = tile_max > m_old ? tile_max : m_old;
        // While every score so far is −inf, subtract 0 instead (−inf − −inf would be NaN).
        const float shift = m_new == -__builtin_huge_valf() ? 0.0f : m_new;
        float lane_sum[L];
        for (int c = 0; c < L; ++c) lane_sum[c] = 0.0f;
        for (int j = 0; j < n_lanes; j += L)
          for (int c = 0; c < L; ++c) {
            const float p = fast_exp(pr[j + c] - shift);
            pr[j + c] = p;
            lane_sum[c] += p;
          }
        float sum = tree_sum(lane_sum);
        for (int j = n_lanes; j < n; ++j) {
          const float p = fast_exp(pr[j] - shift);
          pr[j] = p;
          sum += p;
        }
        const float a = fast_exp(m_old - shift);
        alpha(i) = a;
        l(i) = l(i) * a + sum;
        m(i) = m_new;
      });
      team.team_barrier();

      // Os = alpha · Os + Ps · Vs over micro-tiles of head dims. Keys every row of the micro-tile
      // attends are blocked; the few keys that only some rows attend (causal diagonal) go row by row.
      const int d_tiles = Dp / NR;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (BQ / MR) * d_tiles), [&](int tile) {
        const int i0 = tile / d_tiles * MR, c0 = tile % d_tiles * NR;
        if (i0 >= qcount) return;
        const int all = valid_keys(i0, q0, qcount, k0, kcount);
        const int any = valid_keys(i0 + MR - 1, q0, qcount, k0, kcount);
        const float* ps = &Ps(i0, 0);
        const float* vs = &Vs(0, c0);
        float* os = &Os(i0, c0);
        const int dp = Dp;
        float acc[MR][NR];
        for (int r = 0; r < MR; ++r) {
          const float a = alpha(i0 + r);
          for (int c = 0; c < NR; ++c) acc[r][c] = a * os[r * dp + c];
        }
        for (int j = 0; j < all; ++j) {
          const float* vj = vs + j * dp;
          for (int r = 0; r < MR; ++r) {
            const float p = ps[r * BK + j];
            for (int c = 0; c < NR; ++c) acc[r][c] += p * vj[c];
          }
        }
        for (int j = all; j < any; ++j) {
          const float* vj = vs + j * dp;
          for (int r = 0; r < MR; ++r) {
            if (j >= valid_keys(i0 + r, q0, qcount, k0, kcount)) continue;
            const float p = ps[r * BK + j];
            for (int c = 0; c < NR; ++c) acc[r][c] += p * vj[c];
          }
        }
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) os[r * dp + c] = acc[r][c];
      });
    }
    team.team_barrier();

    // l == 0 only when every attended score is −inf (or none is attended): the row is 0, lse −inf.
    for_row_runs<Tune>(team, qcount, D, [&](int i, int d0, int d1) {
      const float inv = l(i) == 0.0f ? 0.0f : 1.0f / l(i);
      E* o = head_row(out, head, q0 + i);
      const float* os = &Os(i, 0);
      for (int d = d0; d < d1; ++d) o[d] = round_to<E>(os[d] * inv);
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qcount), [&](int i) {
      const float shift = m(i) == -__builtin_huge_valf() ? 0.0f : m(i);
      lse(head, q0 + i) = l(i) == 0.0f ? -__builtin_huge_valf() : shift + compat::log(l(i));
    });
  }
};

// out[B,H,T,D], lse[B·H,T] from q[B,H,T,D], k and v [B,H/G,S,D] (flat head b·H + h reads kv head (b·H + h)/G =
// b·H/G + h/G).
template <class Space, class Tune = Tuning<Space>, class E = float, class EKV = E>
void attention_forward(const HeadsOf<Space, E>& out, const Matrix<Space>& lse, const Same<ConstHeadsOf<Space, E>>& q,
                       const Same<ConstHeadsOf<Space, EKV>>& k, const Same<ConstHeadsOf<Space, EKV>>& v, float scale,
                       bool causal) {
  using Kernel = AttentionForward<Space, Tune, E, EKV>;
  const int heads = static_cast<int>(q.extent(0) * q.extent(1)), T = static_cast<int>(q.extent(2));
  const int S = static_cast<int>(k.extent(2)), D = static_cast<int>(q.extent(3));
  using Tiles = typename Tune::attention;
  if constexpr (!std::is_same_v<Tiles, typename Tiles::wide>) {
    if (D > Tiles::level0_head_dim)
      return attention_forward<Space, WideHeads<Tune>, E, EKV>(out, lse, q, k, v, scale, causal);
  }
  const int Dp = (D + Kernel::NR - 1) / Kernel::NR * Kernel::NR;
  const int q_tiles = (T + Kernel::BQ - 1) / Kernel::BQ;
  const std::size_t bytes = scratch_bytes<Kernel>(Dp);
  const int level = bytes <= static_cast<std::size_t>(Tune::attention::level0_bytes) ? 0 : 1;
  typename Kernel::Policy policy(heads * q_tiles, Tune::attention::team_size);
  Kokkos::parallel_for("ptk::attention_forward", policy.set_scratch_size(level, Kokkos::PerTeam(bytes)),
                       Kernel{out, lse, q, k, v, scale, causal, T, S, D, Dp, q_tiles, level,
                              static_cast<int>(q.extent(1) / k.extent(1))});
}


}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_ATTENTION_FORWARD_ELEMENT_INSTANCE(EXT, Space, Tune, E, EKV) \
  EXT template void attention_forward<Space, Tune, E, EKV>(const HeadsOf<Space, E>& out, const Matrix<Space>& lse, const Same<ConstHeadsOf<Space, E>>& q, const Same<ConstHeadsOf<Space, EKV>>& k, const Same<ConstHeadsOf<Space, EKV>>& v, float scale, bool causal);
// q, k, v of one type, and f32 queries over a 16-bit KV cache (a long prefill reads the cache in place).
#define PTK_ATTENTION_FORWARD_TUNED_INSTANCES(EXT, Space, Tune)                        \
  PTK_ATTENTION_FORWARD_ELEMENT_INSTANCE(EXT, Space, Tune, float, float)             \
  PTK_ATTENTION_FORWARD_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::bf16, ::ptk::bf16) \
  PTK_ATTENTION_FORWARD_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::f16, ::ptk::f16)   \
  PTK_ATTENTION_FORWARD_ELEMENT_INSTANCE(EXT, Space, Tune, float, ::ptk::bf16)       \
  PTK_ATTENTION_FORWARD_ELEMENT_INSTANCE(EXT, Space, Tune, float, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_ATTENTION_FORWARD_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
