#pragma once
// attention_forward: out[BH,T,D] = softmax(scale · q kᵀ, causal) · v and lse[BH,T] = log Σ_j exp(scale · q·k_j)
// over the attended keys, for q[BH,T,D], k and v [BH,S,D]; causal (needs T == S) lets query t see keys j <= t.
// attention_backward: dq += scale·dS·k, dk += scale·dSᵀ·q, dv += Pᵀ·dout with P = exp(scale·q kᵀ − lse) rebuilt from the
// forward's lse, dS = P ∘ (dout·vᵀ − Drow), Drow[t] = dout[t]·out[t]; shapes as the forward's, dout and out as q.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/fast_exp.hpp"

namespace ptk::kernels {

// Every per-space choice of the attention kernel, and nothing else. A team owns `query_rows` rows
// of one head and streams the head's keys through team scratch `key_rows` at a time. Inner products
// are register-blocked: a thread owns `micro_rows` query rows × `micro_cols` columns (keys in q·kᵀ,
// head dims in p·v) as a local float array. On the host a team is one thread that walks every
// micro-tile of its block: an 8 × 32 tile is 16 AVX-512 accumulators, and each step loads two
// vectors and broadcasts 8 scalars for 16 FMAs (a 4 × 64 tile measured 1.6× slower: GCC reloaded
// the four column vectors once per row). On a GPU a team is a thread block and each thread owns
// a small tile.
template <class Space,
          bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible>
struct AttentionTiles {
  static constexpr int query_rows = 128;
  static constexpr int key_rows = 128;
  static constexpr int micro_rows = 8;
  static constexpr int micro_cols = 32;  // must divide key_rows; head dims are padded to a multiple of it
  static constexpr int team_size = 1;
  static constexpr int lanes = 16;  // independent partial max / sum per row: one AVX-512 vector
  static constexpr int level0_bytes = 0;  // host scratch levels are both thread-private memory: use level 1
  // Backward: query rows × keys of one step (both kernels). 64 × 128 keeps the dK/dV kernel's scratch
  // (K, V, their gradient accumulators, a Q and a dO tile, P and dS) at 224 KB for D = 64.
  static constexpr int backward_query_rows = 64;
  static constexpr int backward_key_rows = 128;
};

template <class Space>
struct AttentionTiles<Space, false> {
  static constexpr int query_rows = 64;
  static constexpr int key_rows = 32;
  static constexpr int micro_rows = 2;
  static constexpr int micro_cols = 8;
  static constexpr int team_size = 128;
  static constexpr int lanes = 1;
  static constexpr int level0_bytes = 48 * 1024;  // shared memory per block
  // Backward: 64 × 32 gives every one of the 128 threads one 2 × 8 score micro-tile.
  static constexpr int backward_query_rows = 64;
  static constexpr int backward_key_rows = 32;
};

// Flash-style forward: per (head, query tile) the [T,S] score matrix exists only one key tile at a
// time, in scratch. Online softmax: each row keeps its running max m and sum l; a new key tile with a
// larger max rescales the row's accumulator and sum by exp(m_old − m_new). Causal key tiles wholly
// after a query tile are never visited; inside the diagonal tile, masked keys are skipped (never
// multiplied by 0, so a NaN or inf in a masked row of k or v cannot reach the output).
// Special values follow the softmax kernel: a NaN score makes its row NaN; a row whose attended
// scores are all −inf gives 0 and lse = −inf.
template <class Space>
struct AttentionForward {
  using Tiles = AttentionTiles<Space>;
  static constexpr int BQ = Tiles::query_rows, BK = Tiles::key_rows, MR = Tiles::micro_rows, NR = Tiles::micro_cols;
  static_assert(BK % NR == 0 && BQ % MR == 0, "attention tiles: micro tiles must divide the block");
  using Policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  using ScratchMatrix = Kokkos::View<float**, Kokkos::LayoutRight, typename Space::scratch_memory_space,
                                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using ScratchVector = Kokkos::View<float*, Kokkos::LayoutRight, typename Space::scratch_memory_space,
                                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  Tensor3<Space> out;
  Matrix<Space> lse;
  ConstTensor3<Space> q, k, v;
  float scale;
  bool causal;
  int T, S, D, Dp;  // Dp: D padded to a multiple of NR (zeros in scratch)
  int q_tiles;
  int level;

  static std::size_t scratch_bytes(int Dp) {
    return ScratchMatrix::shmem_size(BQ, Dp) * 2 + ScratchMatrix::shmem_size(Dp, BK) +
           ScratchMatrix::shmem_size(BK, Dp) + ScratchMatrix::shmem_size(BQ, BK) + ScratchVector::shmem_size(BQ) * 3;
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

    ScratchMatrix Qs(team.team_scratch(level), BQ, Dp);  // q tile, pre-multiplied by scale
    ScratchMatrix Os(team.team_scratch(level), BQ, Dp);  // unnormalized output accumulator
    ScratchMatrix Kt(team.team_scratch(level), Dp, BK);  // k tile, transposed
    ScratchMatrix Vs(team.team_scratch(level), BK, Dp);
    ScratchMatrix Ps(team.team_scratch(level), BQ, BK);  // scores, then probabilities
    ScratchVector m(team.team_scratch(level), BQ), l(team.team_scratch(level), BQ),
        alpha(team.team_scratch(level), BQ);

    // Scratch Views are contiguous LayoutRight: inner loops use raw row pointers, so the compiler
    // sees plain arrays (no View strides reloaded after every store).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BQ), [&](int i) {
      float* qs = &Qs(i, 0);
      float* os = &Os(i, 0);
      const int n = i < qcount ? D : 0;
      const float* qg = n ? &q(head, q0 + i, 0) : nullptr;
      for (int d = 0; d < n; ++d) qs[d] = scale * qg[d];
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
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BK), [&](int j) {
        float* kt = &Kt(0, j);
        float* vs = &Vs(j, 0);
        const int n = j < kcount ? D : 0;
        const float* kg = n ? &k(head, k0 + j, 0) : nullptr;
        const float* vg = n ? &v(head, k0 + j, 0) : nullptr;
        for (int d = 0; d < n; ++d) kt[d * BK] = kg[d];
        for (int d = n; d < Dp; ++d) kt[d * BK] = 0.0f;
        for (int d = 0; d < n; ++d) vs[d] = vg[d];
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
        for (int j = 0; j < n_lanes; j += L)
          for (int c = 0; c < L; ++c) lane_max[c] = pr[j + c] > lane_max[c] ? pr[j + c] : lane_max[c];  // skips NaN
        float tile_max = -__builtin_huge_valf();
        for (int c = 0; c < L; ++c) tile_max = lane_max[c] > tile_max ? lane_max[c] : tile_max;
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
        float sum = 0.0f;
        for (int c = 0; c < L; ++c) sum += lane_sum[c];
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
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qcount * D), [&](int e) {
      const int i = e / D, d = e % D;
      const float inv = l(i) == 0.0f ? 0.0f : 1.0f / l(i);
      out(head, q0 + i, d) = Os(i, d) * inv;
    });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qcount), [&](int i) {
      const float shift = m(i) == -__builtin_huge_valf() ? 0.0f : m(i);
      lse(head, q0 + i) = l(i) == 0.0f ? -__builtin_huge_valf() : shift + compat::log(l(i));
    });
  }
};

// out[BH,T,D], lse[BH,T] from q[BH,T,D], k and v [BH,S,D] (the [B,H,·,·] buffers with B·H heads).
template <class Space>
void attention_forward(const Tensor3<Space>& out, const Matrix<Space>& lse, const ConstTensor3<Space>& q,
                       const ConstTensor3<Space>& k, const ConstTensor3<Space>& v, float scale, bool causal) {
  using Kernel = AttentionForward<Space>;
  const int heads = static_cast<int>(q.extent(0)), T = static_cast<int>(q.extent(1));
  const int S = static_cast<int>(k.extent(1)), D = static_cast<int>(q.extent(2));
  const int Dp = (D + Kernel::NR - 1) / Kernel::NR * Kernel::NR;
  const int q_tiles = (T + Kernel::BQ - 1) / Kernel::BQ;
  const std::size_t bytes = Kernel::scratch_bytes(Dp);
  const int level = bytes <= static_cast<std::size_t>(AttentionTiles<Space>::level0_bytes) ? 0 : 1;
  typename Kernel::Policy policy(heads * q_tiles, AttentionTiles<Space>::team_size);
  Kokkos::parallel_for("ptk::attention_forward", policy.set_scratch_size(level, Kokkos::PerTeam(bytes)),
                       Kernel{out, lse, q, k, v, scale, causal, T, S, D, Dp, q_tiles, level});
}

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
template <class Space>
struct AttentionBackwardRows {
  Matrix<Space> drow;
  ConstTensor3<Space> dout, out;
  ConstMatrix<Space> lse;
  int T, D;
  KOKKOS_INLINE_FUNCTION void operator()(const int e) const {
    const int h = e / T, t = e % T;
    float sum = 0.0f;
    const float* g = &dout(h, t, 0);
    const float* o = &out(h, t, 0);
    for (int d = 0; d < D; ++d) sum += g[d] * o[d];
    drow(h, t) = lse(h, t) == -__builtin_huge_valf() ? 0.0f : sum;
  }
};

// What both backward kernels share: tile sizes, scratch types, and the score tile. A step stages
// scale·q (Qs) and dout (dOs) rows with their lse and Drow, and k (transposed, Kt) and v (transposed,
// Vt) rows; then every thread computes, for each of its MR × NR micro-tiles of the [query, key] tile,
//   P  = exp(Qs·Kt − lse)                (0 where masked, padded, or for a row with lse = −inf)
//   dS = P ∘ (dOs·Vt − Drow)             (0 where P is masked: never 0 · NaN)
// into Ps and dSs (which may be the same buffer: each element is read and written by its own thread).
// Rows with lse = −inf are staged as zeros, so they add nothing anywhere (no −inf · 0).
template <class Space>
struct AttentionBackwardBase {
  using Tiles = AttentionTiles<Space>;
  static constexpr int BQ = Tiles::backward_query_rows, BK = Tiles::backward_key_rows;
  static constexpr int MR = Tiles::micro_rows, NR = Tiles::micro_cols;
  // NR % MR: the MR keys of a dK/dV micro-tile lie in one NR-wide column of score micro-tiles.
  static_assert(BK % NR == 0 && BQ % MR == 0 && NR % MR == 0, "attention backward tiles: micro tiles must divide them");
  using Policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  using ScratchMatrix = Kokkos::View<float**, Kokkos::LayoutRight, typename Space::scratch_memory_space,
                                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using ScratchVector = Kokkos::View<float*, Kokkos::LayoutRight, typename Space::scratch_memory_space,
                                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  ConstTensor3<Space> dout, q, k, v;
  ConstMatrix<Space> lse, drow;
  float scale;
  bool causal;
  int T, S, D, Dp;  // Dp: D padded to a multiple of NR (zeros in scratch)
  int level;

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
      const float* qg = n ? &q(head, q0 + i, 0) : nullptr;
      const float* gg = n ? &dout(head, q0 + i, 0) : nullptr;
      for (int d = 0; d < n; ++d) qs[d] = scale * qg[d];
      for (int d = n; d < Dp; ++d) qs[d] = 0.0f;
      for (int d = 0; d < n; ++d) gs[d] = gg[d];
      for (int d = n; d < Dp; ++d) gs[d] = 0.0f;
      ls(i) = l;
      ds(i) = n ? drow(head, q0 + i) : 0.0f;
    });
  }

  // Key rows [k0, k0 + kcount), transposed: Kt[d][j], Vt[d][j] (zeros past kcount and D).
  KOKKOS_INLINE_FUNCTION void stage_keys_transposed(const Team& team, int head, int k0, int kcount,
                                                    const ScratchMatrix& Kt, const ScratchMatrix& Vt) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BK), [&](int j) {
      float* kt = &Kt(0, j);
      float* vt = &Vt(0, j);
      const int n = j < kcount ? D : 0;
      const float* kg = n ? &k(head, k0 + j, 0) : nullptr;
      const float* vg = n ? &v(head, k0 + j, 0) : nullptr;
      for (int d = 0; d < n; ++d) kt[d * BK] = kg[d];
      for (int d = n; d < Dp; ++d) kt[d * BK] = 0.0f;
      for (int d = 0; d < n; ++d) vt[d * BK] = vg[d];
      for (int d = n; d < Dp; ++d) vt[d * BK] = 0.0f;
    });
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

// dK and dV: a team owns one head's key tile, keeps its K and V (transposed) and the dK, dV
// accumulators in scratch, and streams the query tiles that attend it (causal: from the tile that
// holds its first key on). Per query tile: P and dS, then dV += Pᵀ·dOs and dK += dSᵀ·Qs (Qs holds
// scale·q) over MR keys × NR head dims micro-tiles; the reduction over query rows starts at the first
// row that attends the micro-tile's first key.
template <class Space>
struct AttentionBackwardKV : AttentionBackwardBase<Space> {
  using Base = AttentionBackwardBase<Space>;
  using typename Base::Team;
  using typename Base::ScratchMatrix;
  using typename Base::ScratchVector;
  using Base::BQ;
  using Base::BK;
  using Base::MR;
  using Base::NR;

  Tensor3<Space> dk, dv;  // either may be empty (not wanted)
  int k_tiles;

  static std::size_t scratch_bytes(int Dp) {
    return ScratchMatrix::shmem_size(Dp, BK) * 2 + ScratchMatrix::shmem_size(BK, Dp) * 2 +
           ScratchMatrix::shmem_size(BQ, Dp) * 2 + ScratchMatrix::shmem_size(BQ, BK) * 2 +
           ScratchVector::shmem_size(BQ) * 2;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int level = this->level, Dp = this->Dp, D = this->D, T = this->T;
    const int rank = team.league_rank();
    const int head = rank / k_tiles;
    const int k0 = rank % k_tiles * BK;  // causal: the first key tiles have the most queries; they go first
    const int kcount = this->S - k0 < BK ? this->S - k0 : BK;

    ScratchMatrix Kt(team.team_scratch(level), Dp, BK), Vt(team.team_scratch(level), Dp, BK);
    ScratchMatrix dKs(team.team_scratch(level), BK, Dp), dVs(team.team_scratch(level), BK, Dp);
    ScratchMatrix Qs(team.team_scratch(level), BQ, Dp), dOs(team.team_scratch(level), BQ, Dp);
    ScratchMatrix Ps(team.team_scratch(level), BQ, BK), dSs(team.team_scratch(level), BQ, BK);
    ScratchVector ls(team.team_scratch(level), BQ), ds(team.team_scratch(level), BQ);

    this->stage_keys_transposed(team, head, k0, kcount, Kt, Vt);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BK), [&](int j) {
      for (int d = 0; d < Dp; ++d) dKs(j, d) = 0.0f, dVs(j, d) = 0.0f;
    });

    const int q_begin = this->causal ? k0 / BQ * BQ : 0;
    for (int q0 = q_begin; q0 < T; q0 += BQ) {
      const int qcount = T - q0 < BQ ? T - q0 : BQ;
      team.team_barrier();  // the previous step's Qs, dOs, Ps, dSs are no longer read
      this->stage_queries(team, head, q0, qcount, Qs, dOs, ls, ds);
      team.team_barrier();
      this->probabilities(team, q0, qcount, k0, kcount, Qs, dOs, Kt, Vt, ls, ds, Ps, dSs);
      team.team_barrier();

      const int d_tiles = Dp / NR;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (BK / MR) * d_tiles), [&](int tile) {
        const int j0 = tile / d_tiles * MR, c0 = tile % d_tiles * NR;
        if (j0 >= kcount) return;
        // Rows before the first that attends key j0 have P = dS = 0 for all MR keys.
        const int first = this->causal ? (k0 + j0 - q0 > 0 ? k0 + j0 - q0 : 0) : 0;
        if (first >= qcount) return;
        float acc[MR][NR];
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) acc[r][c] = dVs(j0 + r, c0 + c);
        detail::micro_product<MR, NR>(acc, &Ps(0, j0), 1, BK, &dOs(0, c0), Dp, first, qcount);
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) dVs(j0 + r, c0 + c) = acc[r][c];
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) acc[r][c] = dKs(j0 + r, c0 + c);
        detail::micro_product<MR, NR>(acc, &dSs(0, j0), 1, BK, &Qs(0, c0), Dp, first, qcount);
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) dKs(j0 + r, c0 + c) = acc[r][c];
      });
    }
    team.team_barrier();
    if (dk.data() != nullptr)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kcount * D), [&](int e) {
        const int j = e / D, d = e % D;
        dk(head, k0 + j, d) += dKs(j, d);
      });
    if (dv.data() != nullptr)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, kcount * D), [&](int e) {
        const int j = e / D, d = e % D;
        dv(head, k0 + j, d) += dVs(j, d);
      });
  }
};

// dQ: a team owns one head's query tile and streams the key tiles it attends (causal: up to its last
// query), as the forward. Its Q and dO tiles are staged once, transposed (Qt, dOt); K and V tiles are
// plain row copies, so no step transposes anything. The score tile is computed transposed, keys ×
// queries (St = K·Qt, then dSᵀ in place), and dQ += dS·K runs over MR query rows × NR head dims
// micro-tiles; keys inside the causal diagonal that only some rows of a micro-tile attend go row by
// row and a masked key is skipped, so a NaN or inf in a masked row of K cannot reach dQ.
template <class Space>
struct AttentionBackwardQ : AttentionBackwardBase<Space> {
  using Base = AttentionBackwardBase<Space>;
  using typename Base::Team;
  using typename Base::ScratchMatrix;
  using typename Base::ScratchVector;
  using Base::BQ;
  using Base::BK;
  using Base::MR;
  using Base::NR;
  static_assert(BQ % NR == 0 && BK % MR == 0, "attention backward tiles: micro tiles must divide them");

  Tensor3<Space> dq;
  int q_tiles;

  static std::size_t scratch_bytes(int Dp) {
    return ScratchMatrix::shmem_size(Dp, BQ) * 2 + ScratchMatrix::shmem_size(BQ, Dp) +
           ScratchMatrix::shmem_size(BK, Dp) * 2 + ScratchMatrix::shmem_size(BK, BQ) + ScratchVector::shmem_size(BQ) * 2;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int level = this->level, Dp = this->Dp, D = this->D, S = this->S;
    const bool causal = this->causal;
    const int rank = team.league_rank();
    const int head = rank / q_tiles;
    const int q0 = (q_tiles - 1 - rank % q_tiles) * BQ;  // the longest (causal) query tiles first
    const int qcount = this->T - q0 < BQ ? this->T - q0 : BQ;

    ScratchMatrix Qt(team.team_scratch(level), Dp, BQ), dOt(team.team_scratch(level), Dp, BQ),
        dQs(team.team_scratch(level), BQ, Dp);
    ScratchMatrix Ks(team.team_scratch(level), BK, Dp), Vs(team.team_scratch(level), BK, Dp);
    ScratchMatrix St(team.team_scratch(level), BK, BQ);  // Pᵀ, then dSᵀ in place
    ScratchVector ls(team.team_scratch(level), BQ), ds(team.team_scratch(level), BQ);

    // Qt = (scale·q)ᵀ, dOt = doutᵀ; padding and rows with lse = −inf are zeros with ls = −inf.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BQ), [&](int i) {
      const float l = i < qcount ? this->lse(head, q0 + i) : -__builtin_huge_valf();
      const int n = l == -__builtin_huge_valf() ? 0 : D;
      const float* qg = n ? &this->q(head, q0 + i, 0) : nullptr;
      const float* gg = n ? &this->dout(head, q0 + i, 0) : nullptr;
      float* qt = &Qt(0, i);
      float* gt = &dOt(0, i);
      for (int d = 0; d < n; ++d) qt[d * BQ] = this->scale * qg[d];
      for (int d = n; d < Dp; ++d) qt[d * BQ] = 0.0f;
      for (int d = 0; d < n; ++d) gt[d * BQ] = gg[d];
      for (int d = n; d < Dp; ++d) gt[d * BQ] = 0.0f;
      for (int d = 0; d < Dp; ++d) dQs(i, d) = 0.0f;
      ls(i) = l;
      ds(i) = n ? this->drow(head, q0 + i) : 0.0f;
    });

    const int key_end = causal ? (q0 + qcount < S ? q0 + qcount : S) : S;
    for (int k0 = 0; k0 < key_end; k0 += BK) {
      const int kcount = key_end - k0 < BK ? key_end - k0 : BK;
      team.team_barrier();  // the previous step's Ks, Vs and St are no longer read
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BK), [&](int j) {
        float* ks = &Ks(j, 0);
        float* vs = &Vs(j, 0);
        const int n = j < kcount ? D : 0;
        const float* kg = n ? &this->k(head, k0 + j, 0) : nullptr;
        const float* vg = n ? &this->v(head, k0 + j, 0) : nullptr;
        for (int d = 0; d < n; ++d) ks[d] = kg[d];
        for (int d = n; d < Dp; ++d) ks[d] = 0.0f;
        for (int d = 0; d < n; ++d) vs[d] = vg[d];
        for (int d = n; d < Dp; ++d) vs[d] = 0.0f;
      });
      team.team_barrier();

      // Pᵀ and dSᵀ over MR keys × NR queries micro-tiles; a tile whose keys all come after all its
      // queries (causal) is skipped: dQ's loop below never reads it.
      constexpr int col_tiles = BQ / NR;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (BK / MR) * col_tiles), [&](int tile) {
        const int j0 = tile / col_tiles * MR, c0 = tile % col_tiles * NR;
        if (j0 >= kcount || c0 >= qcount || (causal && k0 + j0 > q0 + c0 + NR - 1)) return;
        float shift[NR], drow_c[NR];
        bool row_ok[NR];
        for (int c = 0; c < NR; ++c) {
          const float l = ls(c0 + c);
          row_ok[c] = l != -__builtin_huge_valf();
          shift[c] = row_ok[c] ? l : 0.0f;
          drow_c[c] = ds(c0 + c);
        }
        float acc[MR][NR];
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) acc[r][c] = 0.0f;
        detail::micro_product<MR, NR>(acc, &Ks(j0, 0), Dp, 1, &Qt(0, c0), BQ, 0, Dp);
        float* st = &St(j0, c0);
        // Key j0 + r is attended by queries c0 + c >= first (causal) that attended anything.
        for (int r = 0; r < MR; ++r) {
          const int first = j0 + r >= kcount ? BQ + NR : (causal ? k0 + j0 + r - q0 - c0 : 0);
          for (int c = 0; c < NR; ++c) {
            const float p = fast_exp(acc[r][c] - shift[c]);
            st[r * BQ + c] = c >= first && row_ok[c] ? p : 0.0f;
          }
        }
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) acc[r][c] = 0.0f;
        detail::micro_product<MR, NR>(acc, &Vs(j0, 0), Dp, 1, &dOt(0, c0), BQ, 0, Dp);
        for (int r = 0; r < MR; ++r) {
          const int first = j0 + r >= kcount ? BQ + NR : (causal ? k0 + j0 + r - q0 - c0 : 0);
          for (int c = 0; c < NR; ++c) {
            const float g = st[r * BQ + c] * (acc[r][c] - drow_c[c]);
            st[r * BQ + c] = c >= first && row_ok[c] ? g : 0.0f;
          }
        }
      });
      team.team_barrier();

      const int d_tiles = Dp / NR;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (BQ / MR) * d_tiles), [&](int tile) {
        const int i0 = tile / d_tiles * MR, c0 = tile % d_tiles * NR;
        if (i0 >= qcount) return;
        const int all = this->valid_keys(i0, q0, qcount, k0, kcount);
        const int any = this->valid_keys(i0 + MR - 1, q0, qcount, k0, kcount);
        float acc[MR][NR];
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) acc[r][c] = dQs(i0 + r, c0 + c);
        detail::micro_product<MR, NR>(acc, &St(0, i0), 1, BQ, &Ks(0, c0), Dp, 0, all);
        for (int j = all; j < any; ++j) {
          const float* kj = &Ks(j, c0);
          for (int r = 0; r < MR; ++r) {
            if (j >= this->valid_keys(i0 + r, q0, qcount, k0, kcount)) continue;
            const float g = St(j, i0 + r);
            for (int c = 0; c < NR; ++c) acc[r][c] += g * kj[c];
          }
        }
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) dQs(i0 + r, c0 + c) = acc[r][c];
      });
    }
    team.team_barrier();
    const float scale = this->scale;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, qcount * D), [&](int e) {
      const int i = e / D, d = e % D;
      dq(head, q0 + i, d) += scale * dQs(i, d);
    });
  }
};

// dq, dk, dv [BH,·,D] += the gradients of attention_forward(out, lse, q, k, v, scale, causal) for the
// upstream gradient dout, from the forward's out and lse. Any of dq, dk, dv may be an empty View (not
// wanted). Memory: the three kernels' team scratch plus one float per query row (Drow).
template <class Space>
void attention_backward(const Tensor3<Space>& dq, const Tensor3<Space>& dk, const Tensor3<Space>& dv,
                        const ConstTensor3<Space>& dout, const ConstTensor3<Space>& q, const ConstTensor3<Space>& k,
                        const ConstTensor3<Space>& v, const ConstTensor3<Space>& out, const ConstMatrix<Space>& lse,
                        float scale, bool causal) {
  const int heads = static_cast<int>(q.extent(0)), T = static_cast<int>(q.extent(1));
  const int S = static_cast<int>(k.extent(1)), D = static_cast<int>(q.extent(2));
  if (heads == 0 || T == 0 || S == 0 || D == 0) return;
  const bool want_q = dq.data() != nullptr, want_kv = dk.data() != nullptr || dv.data() != nullptr;
  if (!want_q && !want_kv) return;
  using KV = AttentionBackwardKV<Space>;
  using Q = AttentionBackwardQ<Space>;
  const int Dp = (D + KV::NR - 1) / KV::NR * KV::NR;

  Matrix<Space> drow(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ptk::attention_drow"), heads, T);
  Kokkos::parallel_for("ptk::attention_backward_rows", Kokkos::RangePolicy<Space>(0, heads * T),
                       AttentionBackwardRows<Space>{drow, dout, out, lse, T, D});
  const auto level_for = [](std::size_t bytes) {
    return bytes <= static_cast<std::size_t>(AttentionTiles<Space>::level0_bytes) ? 0 : 1;
  };
  if (want_kv) {
    const int k_tiles = (S + KV::BK - 1) / KV::BK;
    const std::size_t bytes = KV::scratch_bytes(Dp);
    const int level = level_for(bytes);
    KV kernel;
    static_cast<AttentionBackwardBase<Space>&>(kernel) =
        AttentionBackwardBase<Space>{dout, q, k, v, lse, drow, scale, causal, T, S, D, Dp, level};
    kernel.dk = dk;
    kernel.dv = dv;
    kernel.k_tiles = k_tiles;
    typename KV::Policy policy(heads * k_tiles, AttentionTiles<Space>::team_size);
    Kokkos::parallel_for("ptk::attention_backward_kv", policy.set_scratch_size(level, Kokkos::PerTeam(bytes)), kernel);
  }
  if (want_q) {
    const int q_tiles = (T + Q::BQ - 1) / Q::BQ;
    const std::size_t bytes = Q::scratch_bytes(Dp);
    const int level = level_for(bytes);
    Q kernel;
    static_cast<AttentionBackwardBase<Space>&>(kernel) =
        AttentionBackwardBase<Space>{dout, q, k, v, lse, drow, scale, causal, T, S, D, Dp, level};
    kernel.dq = dq;
    kernel.q_tiles = q_tiles;
    typename Q::Policy policy(heads * q_tiles, AttentionTiles<Space>::team_size);
    Kokkos::parallel_for("ptk::attention_backward_q", policy.set_scratch_size(level, Kokkos::PerTeam(bytes)), kernel);
  }
}

}  // namespace ptk::kernels
