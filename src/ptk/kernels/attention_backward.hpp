#pragma once
// attention_backward: dq += scale·dS·k, dk += scale·dSᵀ·q, dv += Pᵀ·dout with P = exp(scale·q kᵀ − lse) rebuilt from the
// forward's lse, dS = P ∘ (dout·vᵀ − Drow), Drow[t] = dout[t]·out[t]; shapes as the forward's (k, v and their
// gradients have BH/G heads: a kv head's dk, dv sum its G query heads'), dout and out as q.
// E: the element type of q, k, v, dout, out, dq, dk, dv (f32, bf16, f16); lse, Drow and every sum fp32, each
// gradient element rounded once (its old value plus the kernel's sum).
#include <Kokkos_Core.hpp>

#include <type_traits>

#include "ptk/kernels/attention_backward_base.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

template <class Space, class Tune = Tuning<Space>, class E = float>
struct AttentionBackwardKV : AttentionBackwardBase<Space, Tune, E> {
  using Base = AttentionBackwardBase<Space, Tune, E>;
  using typename Base::Team;
  using typename Base::ScratchMatrix;
  using typename Base::ScratchVector;
  using Base::BQ;
  using Base::BK;
  using Base::MR;
  using Base::NR;

  HeadsOf<Space, E> dk, dv;  // either may be empty (not wanted)
  int k_tiles;

  // The team's scratch, in order (scratch.hpp: sized and carved from this one list).
  struct Scratch {
    ScratchMatrix Kt, Vt;    // [Dp, BK] the key tile's k and v, transposed
    ScratchMatrix dKs, dVs;  // [BK, Dp] its gradient accumulators
    ScratchMatrix Qs, dOs;   // [BQ, Dp] the query step's scale·q and dout
    ScratchMatrix Ps, dSs;   // [BQ, BK] P and dS
    ScratchVector ls, ds;    // [BQ] lse and Drow of the query rows
  };
  template <class Arena>
  KOKKOS_INLINE_FUNCTION static Scratch take_scratch(Arena& arena, int Dp) {
    return Scratch{arena.template take<ScratchMatrix>(Dp, BK), arena.template take<ScratchMatrix>(Dp, BK),
                   arena.template take<ScratchMatrix>(BK, Dp), arena.template take<ScratchMatrix>(BK, Dp),
                   arena.template take<ScratchMatrix>(BQ, Dp), arena.template take<ScratchMatrix>(BQ, Dp),
                   arena.template take<ScratchMatrix>(BQ, BK), arena.template take<ScratchMatrix>(BQ, BK),
                   arena.template take<ScratchVector>(BQ), arena.template take<ScratchVector>(BQ)};
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int level = this->level, Dp = this->Dp, D = this->D, T = this->T;
    const int rank = team.league_rank();
    const int kv_head = rank / k_tiles;
    const int k0 = rank % k_tiles * BK;  // causal: the first key tiles have the most queries; they go first
    const int kcount = this->S - k0 < BK ? this->S - k0 : BK;

    const Scratch sc = carve_scratch<AttentionBackwardKV>(team, level, Dp);
    const ScratchMatrix &Kt = sc.Kt, &Vt = sc.Vt, &dKs = sc.dKs, &dVs = sc.dVs, &Qs = sc.Qs, &dOs = sc.dOs,
                        &Ps = sc.Ps, &dSs = sc.dSs;
    const ScratchVector &ls = sc.ls, &ds = sc.ds;

    this->stage_keys_transposed(team, kv_head, k0, kcount, Kt, Vt);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BK), [&](int j) {
      for (int d = 0; d < Dp; ++d) dKs(j, d) = 0.0f, dVs(j, d) = 0.0f;
    });

    // The query tiles of the group's heads, one head after another: one (head, query tile) per step.
    const int q_begin = this->causal ? k0 / BQ * BQ : 0;
    const int steps_per_head = (T - q_begin + BQ - 1) / BQ;
    for (int step = 0; step < this->group * steps_per_head; ++step) {
      const int head = kv_head * this->group + step / steps_per_head;
      const int q0 = q_begin + step % steps_per_head * BQ;
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
    const auto add_into = [&](const HeadsOf<Space, E>& grad, const ScratchMatrix& sum) {
      if (grad.data() == nullptr) return;
      for_row_runs<Tune>(team, kcount, D, [&](int j, int d0, int d1) {
        E* g = head_row(grad, kv_head, k0 + j);
        const float* s = &sum(j, 0);
        for (int d = d0; d < d1; ++d) g[d] = round_to<E>(this->accumulate ? widen(g[d]) + s[d] : s[d]);
      });
    };
    add_into(dk, dKs);
    add_into(dv, dVs);
  }
};

// dQ: a team owns one head's query tile and streams the key tiles it attends (causal: up to its last
// query), as the forward. Its Q and dO tiles are staged once, transposed (Qt, dOt); K and V tiles are
// plain row copies, so no step transposes anything. The score tile is computed transposed, keys ×
// queries (St = K·Qt, then dSᵀ in place), and dQ += dS·K runs over MR query rows × NR head dims
// micro-tiles; keys inside the causal diagonal that only some rows of a micro-tile attend go row by
// row and a masked key is skipped, so a NaN or inf in a masked row of K cannot reach dQ.
template <class Space, class Tune = Tuning<Space>, class E = float>
struct AttentionBackwardQ : AttentionBackwardBase<Space, Tune, E> {
  using Base = AttentionBackwardBase<Space, Tune, E>;
  using typename Base::Team;
  using typename Base::ScratchMatrix;
  using typename Base::ScratchVector;
  using Base::BQ;
  using Base::BK;
  using Base::MR;
  using Base::NR;
  static_assert(BQ % NR == 0 && BK % MR == 0, "attention backward tiles: micro tiles must divide them");

  HeadsOf<Space, E> dq;
  int q_tiles;

  // The team's scratch, in order (scratch.hpp: sized and carved from this one list).
  struct Scratch {
    ScratchMatrix Qt, dOt;  // [Dp, BQ] the query tile's scale·q and dout, transposed
    ScratchMatrix dQs;      // [BQ, Dp] its gradient accumulator
    ScratchMatrix Ks, Vs;   // [BK, Dp] the key step's k and v
    ScratchMatrix St;       // [BK, BQ] Pᵀ, then dSᵀ in place
    ScratchVector ls, ds;   // [BQ] lse and Drow of the query rows
  };
  template <class Arena>
  KOKKOS_INLINE_FUNCTION static Scratch take_scratch(Arena& arena, int Dp) {
    return Scratch{arena.template take<ScratchMatrix>(Dp, BQ), arena.template take<ScratchMatrix>(Dp, BQ),
                   arena.template take<ScratchMatrix>(BQ, Dp), arena.template take<ScratchMatrix>(BK, Dp),
                   arena.template take<ScratchMatrix>(BK, Dp), arena.template take<ScratchMatrix>(BK, BQ),
                   arena.template take<ScratchVector>(BQ), arena.template take<ScratchVector>(BQ)};
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int level = this->level, Dp = this->Dp, D = this->D, S = this->S;
    const bool causal = this->causal;
    const int rank = team.league_rank();
    const int head = rank / q_tiles;
    const int q0 = (q_tiles - 1 - rank % q_tiles) * BQ;  // the longest (causal) query tiles first
    const int qcount = this->T - q0 < BQ ? this->T - q0 : BQ;

    const Scratch sc = carve_scratch<AttentionBackwardQ>(team, level, Dp);
    const ScratchMatrix &Qt = sc.Qt, &dOt = sc.dOt, &dQs = sc.dQs, &Ks = sc.Ks, &Vs = sc.Vs, &St = sc.St;
    const ScratchVector &ls = sc.ls, &ds = sc.ds;

    // Qt = (scale·q)ᵀ, dOt = doutᵀ; padding and rows with lse = −inf are zeros with ls = −inf.
    stage_transposed<Tune>(team, this->q, head, q0, qcount, BQ, D, Dp, this->scale, &Qt(0, 0), BQ);
    stage_transposed<Tune>(team, this->dout, head, q0, qcount, BQ, D, Dp, 1.0f, &dOt(0, 0), BQ);
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BQ), [&](int i) {
      const float l = i < qcount ? this->lse(head, q0 + i) : -__builtin_huge_valf();
      const bool none = l == -__builtin_huge_valf();
      if (none)
        for (int d = 0; d < Dp; ++d) Qt(d, i) = 0.0f, dOt(d, i) = 0.0f;  // staged, but attended nothing
      for (int d = 0; d < Dp; ++d) dQs(i, d) = 0.0f;
      ls(i) = l;
      ds(i) = none ? 0.0f : this->drow(head, q0 + i);
    });

    const int key_end = causal ? (q0 + qcount < S ? q0 + qcount : S) : S;
    for (int k0 = 0; k0 < key_end; k0 += BK) {
      const int kcount = key_end - k0 < BK ? key_end - k0 : BK;
      team.team_barrier();  // the previous step's Ks, Vs and St are no longer read
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, BK), [&](int j) {
        float* ks = &Ks(j, 0);
        float* vs = &Vs(j, 0);
        const int n = j < kcount ? D : 0;
        const E* kg = n ? head_row(this->k, head / this->group, k0 + j) : nullptr;
        const E* vg = n ? head_row(this->v, head / this->group, k0 + j) : nullptr;
        for (int d = 0; d < n; ++d) ks[d] = widen(kg[d]);
        for (int d = n; d < Dp; ++d) ks[d] = 0.0f;
        for (int d = 0; d < n; ++d) vs[d] = widen(vg[d]);
        for (int d = n; d < Dp; ++d) vs[d] = 0.0f;
      });
      team.team_barrier();

      // Pᵀ and dSᵀ over MR keys × NR queries micro-tiles; a tile whose keys all come after all its
      // queries (causal) is skipped: dQ's loop below never reads it.
      constexpr int col_tiles = BQ / NR;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (BK / MR) * col_tiles), [&](int tile) {
        const int j0 = tile / col_tiles * MR, c0 = tile % col_tiles * NR;
        if (j0 >= kcount || c0 >= qcount || (causal && k0 + j0 > q0 + c0 + NR - 1)) return;
        // Column c is kept where col[c] >= the key's first attending column: col[c] = c, or the least int for a query
        // that attended nothing (ints, not bools, so that the loops over c vectorize, fast_exp included).
        float shift[NR], drow_c[NR];
        int col[NR];
        for (int c = 0; c < NR; ++c) {
          const float l = ls(c0 + c);
          const bool ok = l != -__builtin_huge_valf();
          col[c] = ok ? c : -2147483647 - 1;
          shift[c] = ok ? l : 0.0f;
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
            st[r * BQ + c] = col[c] >= first ? p : 0.0f;
          }
        }
        for (int r = 0; r < MR; ++r)
          for (int c = 0; c < NR; ++c) acc[r][c] = 0.0f;
        detail::micro_product<MR, NR>(acc, &Vs(j0, 0), Dp, 1, &dOt(0, c0), BQ, 0, Dp);
        for (int r = 0; r < MR; ++r) {
          const int first = j0 + r >= kcount ? BQ + NR : (causal ? k0 + j0 + r - q0 - c0 : 0);
          for (int c = 0; c < NR; ++c) {
            const float g = st[r * BQ + c] * (acc[r][c] - drow_c[c]);
            st[r * BQ + c] = col[c] >= first ? g : 0.0f;
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
    for_row_runs<Tune>(team, qcount, D, [&](int i, int d0, int d1) {
      E* g = head_row(dq, head, q0 + i);
      const float* s = &dQs(i, 0);
      for (int d = d0; d < d1; ++d) g[d] = round_to<E>(this->accumulate ? widen(g[d]) + scale * s[d] : scale * s[d]);
    });
  }
};

// dq [B,H,T,D], dk and dv [B,H/G,S,D] (heads views, heads.hpp: a gradient's rows in place) += the gradients of
// attention_forward(out, lse, q, k, v, scale, causal) for the upstream gradient dout, from the forward's out and lse.
// Any of dq, dk, dv may be an empty View (not wanted); with accumulate false they are written, not added to (each
// element once: the kernels write every row of every gradient they are given). Memory: the three kernels' team
// scratch plus one float per query row (Drow).
template <class Space, class Tune = Tuning<Space>, class E = float>
void attention_backward(const HeadsOf<Space, E>& dq, const HeadsOf<Space, E>& dk, const HeadsOf<Space, E>& dv,
                        const Same<ConstHeadsOf<Space, E>>& dout, const Same<ConstHeadsOf<Space, E>>& q,
                        const Same<ConstHeadsOf<Space, E>>& k, const Same<ConstHeadsOf<Space, E>>& v,
                        const Same<ConstHeadsOf<Space, E>>& out, const ConstMatrix<Space>& lse, float scale,
                        bool causal, bool accumulate = true) {
  const int heads = static_cast<int>(q.extent(0) * q.extent(1)), T = static_cast<int>(q.extent(2));
  const int kv_heads = static_cast<int>(k.extent(0) * k.extent(1)), S = static_cast<int>(k.extent(2));
  const int D = static_cast<int>(q.extent(3));
  if (heads == 0 || T == 0 || S == 0 || D == 0) return;
  const int group = heads / kv_heads;
  const bool want_q = dq.data() != nullptr, want_kv = dk.data() != nullptr || dv.data() != nullptr;
  if (!want_q && !want_kv) return;
  using Tiles = typename Tune::attention;
  if constexpr (!std::is_same_v<Tiles, typename Tiles::wide>) {
    if (D > Tiles::level0_head_dim)
      return attention_backward<Space, WideHeads<Tune>, E>(dq, dk, dv, dout, q, k, v, out, lse, scale, causal,
                                                           accumulate);
  }
  using KV = AttentionBackwardKV<Space, Tune, E>;
  using Q = AttentionBackwardQ<Space, Tune, E>;
  using Base = AttentionBackwardBase<Space, Tune, E>;
  const int Dp = (D + KV::NR - 1) / KV::NR * KV::NR;

  auto drow = work_view<Matrix<Space>>("ptk::attention_drow", heads, T);
  Kokkos::parallel_for("ptk::attention_backward_rows", Kokkos::RangePolicy<Space>(0, heads * T),
                       AttentionBackwardRows<Space, Tune, E>{drow, dout, out, lse, T, D});
  const auto level_for = [](std::size_t bytes) {
    return bytes <= static_cast<std::size_t>(Tune::attention::level0_bytes) ? 0 : 1;
  };
  if (want_kv) {
    const int k_tiles = (S + KV::BK - 1) / KV::BK;
    const std::size_t bytes = scratch_bytes<KV>(Dp);
    const int level = level_for(bytes);
    KV kernel;
    static_cast<Base&>(kernel) = Base{dout, q, k, v, lse, drow, scale, causal, T, S, D, Dp, level, group, accumulate};
    kernel.dk = dk;
    kernel.dv = dv;
    kernel.k_tiles = k_tiles;
    typename KV::Policy policy(kv_heads * k_tiles, Tune::attention::team_size);
    Kokkos::parallel_for("ptk::attention_backward_kv", policy.set_scratch_size(level, Kokkos::PerTeam(bytes)), kernel);
  }
  if (want_q) {
    const int q_tiles = (T + Q::BQ - 1) / Q::BQ;
    const std::size_t bytes = scratch_bytes<Q>(Dp);
    const int level = level_for(bytes);
    Q kernel;
    static_cast<Base&>(kernel) = Base{dout, q, k, v, lse, drow, scale, causal, T, S, D, Dp, level, group, accumulate};
    kernel.dq = dq;
    kernel.q_tiles = q_tiles;
    typename Q::Policy policy(heads * q_tiles, Tune::attention::team_size);
    Kokkos::parallel_for("ptk::attention_backward_q", policy.set_scratch_size(level, Kokkos::PerTeam(bytes)), kernel);
  }
}


}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_ATTENTION_BACKWARD_ELEMENT_INSTANCE(EXT, Space, Tune, E) \
  EXT template void attention_backward<Space, Tune, E>(const HeadsOf<Space, E>& dq, const HeadsOf<Space, E>& dk, const HeadsOf<Space, E>& dv, const Same<ConstHeadsOf<Space, E>>& dout, const Same<ConstHeadsOf<Space, E>>& q, const Same<ConstHeadsOf<Space, E>>& k, const Same<ConstHeadsOf<Space, E>>& v, const Same<ConstHeadsOf<Space, E>>& out, const ConstMatrix<Space>& lse, float scale, bool causal, bool accumulate);
#define PTK_ATTENTION_BACKWARD_TUNED_INSTANCES(EXT, Space, Tune)           \
  PTK_ATTENTION_BACKWARD_ELEMENT_INSTANCE(EXT, Space, Tune, float)       \
  PTK_ATTENTION_BACKWARD_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::bf16) \
  PTK_ATTENTION_BACKWARD_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_ATTENTION_BACKWARD_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
