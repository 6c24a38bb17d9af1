#pragma once
// decode_attention: out[b,h,i] = Σ_{j <= p_i} softmax_j(scale · q[b,h,i]·K[b,g,j]) V[b,g,j], lse[b,h,i] its log-sum-exp,
//   for q[B,Hq,Tq,D] at positions p_i = L - Tq + i against a cache K, V [B,Hkv,Tmax,D] filled to L; g = h / (Hq/Hkv).
//   The cache's element type E is f32, bf16 or f16 (a 16-bit KV cache); its values are read as float (load.hpp).
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/compensated.hpp"
#include "ptk/kernels/detail/fast_exp.hpp"
#include "ptk/kernels/detail/load.hpp"
#include "ptk/kernels/detail/scratch.hpp"
#include "ptk/kernels/heads.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

// Flash-decoding. A few query rows against a long key range leave flash attention's query tiles
// nearly empty, so the parallelism is taken from the keys instead: the range [0, L) is cut into
// `splits` chunks, and a team per (batch, kv head, chunk) computes, for every query row of the kv
// head's group (its Hq/Hkv query heads × Tq tokens), the chunk's partial max m, sum l and
// unnormalized output acc. The group shares the team, so each cached key and value is read from
// memory once per step, not once per query head (grouped-query attention's point). A second pass
// merges the chunks in order (deterministic): M = max m_s, l = Σ l_s e^(m_s − M),
// out = Σ acc_s e^(m_s − M) / l. Rows beyond position p_i of the cache are never read.
struct DecodeAttentionShape {
  int B, Hq, Hkv, Tq, D;
  int length;  // L: filled positions of the cache (the last query sits at L − 1)
  int chunk;   // keys a team reduces; splits = ceil(L / chunk)
  int splits;
  KOKKOS_INLINE_FUNCTION int group() const { return Hq / Hkv; }
  // Query rows of a kv head's group, and the partial results' row index of (b, h, i).
  KOKKOS_INLINE_FUNCTION int group_rows() const { return (Hq / Hkv) * Tq; }
  KOKKOS_INLINE_FUNCTION int row(int b, int h, int i) const { return (b * Hq + h) * Tq + i; }
};

template <class Space, class Tune = Tuning<Space>, class E = float>
struct DecodeAttentionPartial {
  using Tiles = typename Tune::decode_attention;
  static constexpr int RB = Tiles::query_rows;  // query rows a team holds at once
  using Policy = Kokkos::TeamPolicy<Space>;
  using Team = typename Policy::member_type;
  using ScratchMatrix = ScratchMatrixOf<Space>;
  using ScratchVector = ScratchVectorOf<Space>;

  Matrix<Space> part_max, part_sum;  // [rows, splits]
  Tensor3<Space> part_acc;           // [rows, splits, D]
  ConstHeads<Space> q;               // [B,Hq,Tq,D], any strides (the heads of a projection's rows)
  ConstTensor4Of<Space, E> k, v;     // [B,Hkv,Tmax,D]
  float scale;
  DecodeAttentionShape s;
  Heads<Space> out;  // written here when there is one chunk (splits == 1)
  Vector<Space> lse;

  struct Scratch {
    ScratchMatrix Qs;  // [RB, D] query rows, pre-multiplied by scale
    ScratchMatrix Ps;  // [RB, chunk] scores, then e^(score − m)
    ScratchVector m, l;  // [RB]
  };
  template <class Arena>
  KOKKOS_INLINE_FUNCTION static Scratch take_scratch(Arena& arena, int D, int chunk) {
    return Scratch{arena.template take<ScratchMatrix>(RB, D), arena.template take<ScratchMatrix>(RB, chunk),
                   arena.template take<ScratchVector>(RB), arena.template take<ScratchVector>(RB)};
  }

  // Keys of [j0, j0 + n) that query row i (token i of Tq) attends: those at positions <= p_i.
  KOKKOS_INLINE_FUNCTION int attended(int i, int j0, int n) const {
    const int last = s.length - s.Tq + i;  // p_i
    const int a = last - j0 + 1;
    return a < 0 ? 0 : (a < n ? a : n);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int split = team.league_rank() % s.splits;
    const int bg = team.league_rank() / s.splits;
    const int b = bg / s.Hkv, g = bg % s.Hkv;
    const int j0 = split * s.chunk;
    const int n = s.length - j0 < s.chunk ? s.length - j0 : s.chunk;
    const Scratch sc = carve_scratch<DecodeAttentionPartial>(team, Tiles::scratch_level, s.D, s.chunk);
    for (int r0 = 0; r0 < s.group_rows(); r0 += RB) {
      const int rows = s.group_rows() - r0 < RB ? s.group_rows() - r0 : RB;
      load_queries(team, sc, b, g, r0, rows);
      team.team_barrier();
      score_keys(team, sc, b, g, r0, rows, j0, n);
      team.team_barrier();
      exponentiate(team, sc, r0, rows, j0, n);
      team.team_barrier();
      accumulate_values(team, sc, b, g, r0, rows, j0, n, split);
      team.team_barrier();
    }
  }

  // Σ_d a[d]·b[d] in kLanes partial sums, then a pairwise sum: a host thread's vectorized dot (a single running
  // sum is a chain of dependent adds the compiler may not reorder). b's kLanes values come through load_lanes
  // (one vector conversion for f16 where the host has it).
  static constexpr int kLanes = 16;
  // With AVX-512 and whole vectors (D a multiple of 16: every model's head), the slots are one register and the
  // pairwise sum its reduction (the same pairs: 8 apart, then 4, 2, 1): g++ had kept the slots on the stack, and that
  // sum was 40 % of this kernel's time at 2048 cached positions.
  KOKKOS_INLINE_FUNCTION static float lane_dot(const float* a, const E* b, int D) {
    const int full = D / kLanes * kLanes;
#if defined(PTK_HOST_AVX512)
    if constexpr (kLanes == 16) {
      if (full == D) {
        __m512 acc = _mm512_setzero_ps();
        for (int d0 = 0; d0 < full; d0 += kLanes) {
          float bl[kLanes];
          load_lanes<kLanes, 1>(b, d0, 0, bl);
          acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + d0), _mm512_loadu_ps(bl), acc);
        }
        return _mm512_reduce_add_ps(acc);
      }
    }
#endif
    float part[kLanes] = {};
    for (int d0 = 0; d0 < full; d0 += kLanes) {
      float bl[kLanes];
      load_lanes<kLanes, 1>(b, d0, 0, bl);
      for (int l = 0; l < kLanes; ++l) part[l] += a[d0 + l] * bl[l];
    }
    for (int d = full; d < D; ++d) part[d - full] += a[d] * load(b, d);
    return tree_sum(part);
  }

  // Row r of the group is query head g·G + r / Tq, token r % Tq.
  KOKKOS_INLINE_FUNCTION int head_of(int g, int r) const { return g * s.group() + r / s.Tq; }

  KOKKOS_INLINE_FUNCTION void load_queries(const Team& team, const Scratch& sc, int b, int g, int r0, int rows) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](int r) {
      const int h = head_of(g, r0 + r), i = (r0 + r) % s.Tq;
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, s.D), [&](int d) { sc.Qs(r, d) = scale * q(b, h, i, d); });
    });
  }

  KOKKOS_INLINE_FUNCTION void score_keys(const Team& team, const Scratch& sc, int b, int g, int r0, int rows, int j0,
                                         int n) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int j) {
      const E* kj = &k(b, g, j0 + j, 0);
      for (int r = 0; r < rows; ++r) {
        if (j >= attended((r0 + r) % s.Tq, j0, n)) continue;
        const float* qr = &sc.Qs(r, 0);
        float dot = 0.0f;
        if constexpr (Tiles::vector_length == 1) {
          dot = lane_dot(qr, kj, s.D);
        } else {
          Kokkos::parallel_reduce(Kokkos::ThreadVectorRange(team, s.D),
                                  [&](int d, float& acc) { acc += qr[d] * load(kj, d); }, dot);
        }
        Kokkos::single(Kokkos::PerThread(team), [&]() { sc.Ps(r, j) = dot; });
      }
    });
  }

  // Per row: m = the chunk's max score, Ps = e^(score − m), l = Σ Ps. A row with nothing attended
  // keeps m = −inf, l = 0. A NaN score makes l NaN, and the merge carries it to the row's output.
  KOKKOS_INLINE_FUNCTION void exponentiate(const Team& team, const Scratch& sc, int r0, int rows, int j0, int n) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](int r) {
      const int a = attended((r0 + r) % s.Tq, j0, n);
      float* p = &sc.Ps(r, 0);
      float m = -__builtin_huge_valf(), l = 0.0f;
      if constexpr (Tiles::vector_length == 1) {
        exponentiate_lanes(p, a, m, l);
      } else {
        Kokkos::parallel_reduce(Kokkos::ThreadVectorRange(team, a), [&](int j, float& x) { x = p[j] > x ? p[j] : x; },
                                Kokkos::Max<float>(m));
        const float shift = m == -__builtin_huge_valf() ? 0.0f : m;
        Kokkos::parallel_reduce(Kokkos::ThreadVectorRange(team, a), [&](int j, float& sum) {
          const float e = fast_exp_clamped(p[j] - shift);
          p[j] = e;
          sum += e;
        }, l);
      }
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        sc.m(r) = m;
        sc.l(r) = l;
      });
    });
  }

  // exponentiate's row on a host thread: max and sum in kLanes slots (a SIMD lane each), then across the slots
  // (tree_max, tree_sum). Kokkos' vector-range reductions of one lane kept their running value on the stack, a
  // store and a reload per key (a third of this kernel's time at 2048 cached positions).
  KOKKOS_INLINE_FUNCTION static void exponentiate_lanes(float* p, int a, float& m, float& l) {
    float mx[kLanes], sum[kLanes];
    for (int k = 0; k < kLanes; ++k) {
      mx[k] = -__builtin_huge_valf();
      sum[k] = 0.0f;
    }
    const int full = a / kLanes * kLanes;
    for (int j0 = 0; j0 < full; j0 += kLanes) {
      PTK_SIMD_LOOP
      for (int k = 0; k < kLanes; ++k) mx[k] = p[j0 + k] > mx[k] ? p[j0 + k] : mx[k];
    }
    for (int j = full; j < a; ++j) mx[j - full] = p[j] > mx[j - full] ? p[j] : mx[j - full];
    m = tree_max(mx);
    const float shift = m == -__builtin_huge_valf() ? 0.0f : m;
    for (int j0 = 0; j0 < full; j0 += kLanes) {
      PTK_SIMD_LOOP
      for (int k = 0; k < kLanes; ++k) {
        const float e = fast_exp_clamped(p[j0 + k] - shift);
        p[j0 + k] = e;
        sum[k] += e;
      }
    }
    for (int j = full; j < a; ++j) {
      p[j] = fast_exp_clamped(p[j] - shift);
      sum[j - full] += p[j];
    }
    l = tree_sum(sum);
  }

  // acc[r, d] = Σ_j Ps[r, j] · V[j, d], written with m and l as this chunk's partial result.
  KOKKOS_INLINE_FUNCTION void accumulate_values(const Team& team, const Scratch& sc, int b, int g, int r0, int rows,
                                                int j0, int n, int split) const {
    if constexpr (Tiles::vector_length == 1) accumulate_values_lanes(sc, b, g, r0, rows, j0, n, split);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](int r) {
      const int h = head_of(g, r0 + r), i = (r0 + r) % s.Tq;
      const int row = s.row(b, h, i);
      float* acc = &part_acc(row, split, 0);
      if constexpr (Tiles::vector_length > 1) {
        const int a = attended(i, j0, n);
        const float* p = &sc.Ps(r, 0);
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, s.D), [&](int d) { acc[d] = 0.0f; });
        for (int j = 0; j < a; ++j) {
          const float pj = p[j];
          const E* vj = &v(b, g, j0 + j, 0);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, s.D), [&](int d) { acc[d] += pj * load(vj, d); });
        }
      }
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        part_max(row, split) = sc.m(r);
        part_sum(row, split) = sc.l(r);
      });
      if (s.splits == 1) {  // the only chunk: the merge would divide by l and nothing else (it is not launched)
        const float l = sc.l(r), m = sc.m(r);
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, s.D),
                             [&](int d) { out(b, h, i, d) = l == 0.0f ? 0.0f : acc[d] / l; });
        Kokkos::single(Kokkos::PerThread(team), [&]() {
          lse(row) = l == 0.0f ? -__builtin_huge_valf() : (m == -__builtin_huge_valf() ? 0.0f : m) + compat::log(l);
        });
      }
    });
  }

  // accumulate_values' sums on a host thread (one thread a team): key by key, each value row widened once (kLanes at
  // a time) and added into every query row of the group that attends it, rather than read again for each row.
  KOKKOS_INLINE_FUNCTION void accumulate_values_lanes(const Scratch& sc, int b, int g, int r0, int rows, int j0, int n,
                                                      int split) const {
    float* acc[RB];
    int a[RB], most = 0;
    for (int r = 0; r < rows; ++r) {
      const int i = (r0 + r) % s.Tq;
      acc[r] = &part_acc(s.row(b, head_of(g, r0 + r), i), split, 0);
      a[r] = attended(i, j0, n);
      most = a[r] > most ? a[r] : most;
      for (int d = 0; d < s.D; ++d) acc[r][d] = 0.0f;
    }
    const int full = s.D / kLanes * kLanes;
    for (int j = 0; j < most; ++j) {
      const E* vj = &v(b, g, j0 + j, 0);
      for (int d0 = 0; d0 < full; d0 += kLanes) {
        float bl[kLanes];
        load_lanes<kLanes, 1>(vj, d0, 0, bl);
        for (int r = 0; r < rows; ++r) {
          if (j >= a[r]) continue;
          const float pj = sc.Ps(r, j);
          float* out_r = acc[r] + d0;
          PTK_SIMD_LOOP
          for (int l = 0; l < kLanes; ++l) out_r[l] += pj * bl[l];
        }
      }
      for (int d = full; d < s.D; ++d)
        for (int r = 0; r < rows; ++r)
          if (j < a[r]) acc[r][d] += sc.Ps(r, j) * load(vj, d);
    }
  }
};

// The chunks' partial results merged, in chunk order, into out and lse.
template <class Space>
struct DecodeAttentionMerge {
  Heads<Space> out;   // [B,Hq,Tq,D], any strides
  Vector<Space> lse;  // [rows]
  ConstMatrix<Space> part_max, part_sum;
  ConstTensor3<Space> part_acc;

  KOKKOS_INLINE_FUNCTION void operator()(const int row, const int d) const {
    const int splits = static_cast<int>(part_max.extent(1));
    float M = -__builtin_huge_valf();
    for (int c = 0; c < splits; ++c) M = part_max(row, c) > M ? part_max(row, c) : M;
    const float shift = M == -__builtin_huge_valf() ? 0.0f : M;
    float l = 0.0f, acc = 0.0f;
    for (int c = 0; c < splits; ++c) {
      const float w = part_sum(row, c) == 0.0f ? 0.0f : fast_exp_clamped(part_max(row, c) - shift);
      l += w * part_sum(row, c);
      acc += w * part_acc(row, c, d);
    }
    const int Tq = static_cast<int>(out.extent(2)), Hq = static_cast<int>(out.extent(1));
    out(row / (Hq * Tq), row / Tq % Hq, row % Tq, d) = l == 0.0f ? 0.0f : acc / l;
    if (d == 0) lse(row) = l == 0.0f ? -__builtin_huge_valf() : shift + compat::log(l);
  }
};

// How the keys are split: enough chunks to give every execution unit `teams_per_unit` teams when
// B·Hkv alone would not, never chunks shorter than min_chunk keys, never longer than max_chunk
// (the score row is in scratch). Depends only on the shape and the space's concurrency, so a run
// on one machine is deterministic.
template <class Space, class Tune = Tuning<Space>>
DecodeAttentionShape decode_attention_shape(int B, int Hq, int Hkv, int Tq, int D, int length, int splits = 0) {
  using Tiles = typename Tune::decode_attention;
  DecodeAttentionShape s{B, Hq, Hkv, Tq, D, length, length, 1};
  if (splits <= 0) {
    const long units = static_cast<long>(Space().concurrency()) * Tiles::teams_per_unit;
    const long teams = static_cast<long>(B) * Hkv;
    splits = static_cast<int>(teams >= units ? 1 : (units + teams - 1) / teams);
    const int most = (length + Tiles::min_chunk - 1) / Tiles::min_chunk;
    splits = splits < most ? splits : most;
  }
  splits = splits < 1 ? 1 : (splits > length ? length : splits);
  s.chunk = (length + splits - 1) / splits;
  if (s.chunk > Tiles::max_chunk) s.chunk = Tiles::max_chunk;
  s.splits = (length + s.chunk - 1) / s.chunk;
  return s;
}

// out [B,Hq,Tq,D] and lse [B·Hq·Tq] from q [B,Hq,Tq,D] against the first s.length positions of the cache k, v
// [B,Hkv,Tmax,D]; part_* are the caller's workspaces: max and sum [rows, splits], acc [rows, splits, D]. q and out
// may be strided views (heads_of: a projection's rows read and written in place, no split or merge copies).
template <class Space, class Tune = Tuning<Space>, class E = float>
void decode_attention(const Heads<Space>& out, const Vector<Space>& lse, const ConstHeads<Space>& q,
                      const ConstTensor4Of<Space, E>& k, const ConstTensor4Of<Space, E>& v, float scale,
                      const DecodeAttentionShape& s, const Matrix<Space>& part_max, const Matrix<Space>& part_sum,
                      const Tensor3<Space>& part_acc) {
  using Kernel = DecodeAttentionPartial<Space, Tune, E>;
  using Tiles = typename Tune::decode_attention;
  const std::size_t bytes = scratch_bytes<Kernel>(s.D, s.chunk);
  typename Kernel::Policy policy(s.B * s.Hkv * s.splits, Tiles::team_size, Tiles::vector_length);
  Kokkos::parallel_for("ptk::decode_attention", policy.set_scratch_size(Tiles::scratch_level, Kokkos::PerTeam(bytes)),
                       Kernel{part_max, part_sum, part_acc, q, k, v, scale, s, out, lse});
  if (s.splits == 1) return;
  // The merge's rows (B·Hq·Tq) written into the bounds: a named local drew nvcc's "declared but never referenced".
  Kokkos::parallel_for("ptk::decode_attention_merge",
                       Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>>({0, 0}, {s.B * s.Hq * s.Tq, s.D}),
                       DecodeAttentionMerge<Space>{out, lse, part_max, part_sum, part_acc});
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
// The cache's element types: f32, bf16, f16.
#define PTK_DECODE_ATTENTION_ELEMENT_INSTANCE(EXT, Space, Tune, E) \
  EXT template void decode_attention<Space, Tune, E>(const Heads<Space>& out, const Vector<Space>& lse, const ConstHeads<Space>& q, const ConstTensor4Of<Space, E>& k, const ConstTensor4Of<Space, E>& v, float scale, const DecodeAttentionShape& s, const Matrix<Space>& part_max, const Matrix<Space>& part_sum, const Tensor3<Space>& part_acc);
#define PTK_DECODE_ATTENTION_TUNED_INSTANCES(EXT, Space, Tune)           \
  PTK_DECODE_ATTENTION_ELEMENT_INSTANCE(EXT, Space, Tune, float)       \
  PTK_DECODE_ATTENTION_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::bf16) \
  PTK_DECODE_ATTENTION_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_DECODE_ATTENTION_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
