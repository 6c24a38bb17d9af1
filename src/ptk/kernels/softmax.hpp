#pragma once
// softmax_forward: out[R,N] = softmax(scale * inp) over the last dim; causal treats row r as query
// t = r % N of a square [T,T] block and masks columns j > t. Fully masked / all -inf rows give 0.
// softmax_backward: out, dout [R,N] (out = softmax_forward's output) -> dinp[R,N] +=
// scale · out ∘ (dout - Σ_j out dout) per row; masked entries have out = 0 and get nothing.
// E: the element type of inp, out, dout, dinp (f32, bf16, f16): fp32 inside, each output rounded once.
#include <Kokkos_Core.hpp>

#include <cfloat>
#include <type_traits>

#include "ptk/core/compat.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/fast_exp.hpp"
#include "ptk/kernels/detail/compensated.hpp"
#include "ptk/kernels/detail/row_walk.hpp"

namespace ptk::kernels {

// Rows are mapped by Tune::rows (tuning.hpp, row_walk.hpp), with norm_lanes (16) slots on the host. Three
// sweeps per row: the max, exp (fast_exp_nonpositive: the arguments are <= 0 up to a rounding)
// stored in out (or, for outputs too large for the cache, in a scratch row: see `streaming`) with
// a blocked compensated sum (exp_chunk: the loop over slots is the vector loop), and the scale by
// 1/sum into out. They are software-pipelined over a team thread's rows
// (a team takes pipeline_rows rows): the exp sweep of one row, whose input is in L1/L2,
// also takes the max of the thread's next row, which comes from memory (prefetched), so the loads
// from memory overlap the exps; the scale sweep finds its row in L1/L2. The max skips NaN, so a
// NaN input turns its row's sum and every output of that row into NaN, and masked columns are
// written as 0 * (1/sum) for the same reason: NaN stays in its row, as in PyTorch. out may alias
// inp (each element is read before it is written, by the same lane).
// A 16-bit out (E: bf16, f16) would round the exps it kept and round again after the scale: the host keeps them
// in the scratch row (scratch_exps) and reads its input a block at a time widened to float (exp_chunk); a GPU, or a
// row too long for scratch, keeps none, and the scale sweep forms each exp again (one more exp an element). Either
// way each output is rounded once.
template <class Space, class Tune = Tuning<Space>, class E = float>
struct SoftmaxForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = WithLanes<typename Tune::rows, Tune::rows::norm_lanes>;
  static constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V;
  static constexpr bool exps_in_out = std::is_same_v<E, float>;  // out can hold the exps
  MatrixOf<Space, E> out;
  ConstMatrixOf<Space, E> inp;
  float scale;
  bool causal;
  int rows_per_team;
  // Outputs of Rows::stream_store_bytes and more: the exps go to a row of team scratch (level
  // 1, a row per team thread) instead of out, and the scale sweep writes out with non-temporal
  // stores, so out is written once and never read (no read-for-ownership of its lines).
  bool streaming;
  bool scratch_exps;  // a 16-bit out's exps go to the scratch row (the host's, where it fits)
  // Whether the exps go to the scratch row: f32's when it streams (its code as before the 16-bit types), a 16-bit
  // out's as scratch_exps says.
  KOKKOS_INLINE_FUNCTION bool exps_to_scratch() const {
    if constexpr (exps_in_out) return streaming;
    else return scratch_exps;
  }
  static constexpr int exps_scratch_level = 1;
  using ScratchMatrix = Kokkos::View<float**, Kokkos::LayoutRight, typename Space::scratch_memory_space,
                                     Kokkos::MemoryUnmanaged>;
  static std::size_t exps_scratch_bytes(int team_size, int cols) { return ScratchMatrix::shmem_size(team_size, cols); }

  struct ExpSum {
    Compensated sum;  // of the row's exps
    float next_max = -FLT_MAX;  // of the next row
    KOKKOS_INLINE_FUNCTION void merge(const ExpSum& o) {
      sum.merge(o.sum);
      next_max = o.next_max > next_max ? o.next_max : next_max;
    }
  };

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int cols = static_cast<int>(inp.extent(1));
    // A local copy: team_scratch takes the level by reference, and nvcc keeps no device copy of a
    // static member (odr-used, it is "undefined in device code").
    const int level = exps_scratch_level;
    const ScratchMatrix exps = exps_to_scratch() ? ScratchMatrix(team.team_scratch(level), team.team_size(), cols) : ScratchMatrix();
    walk_pipelined_rows(
        team, static_cast<int>(inp.extent(0)), rows_per_team,
        [&](int row) {
          float row_max = -FLT_MAX;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(team, V),
              [&](int v, float& total) {
                const float m = lane_max(v, &inp(row, 0), unmasked(row));
                total = m > total ? m : total;
              },
              Kokkos::Max<float>(row_max));
          return row_max;
        },
        [&](int row, int next, float row_max) {
          E* y = &out(row, 0);
          float* e = nullptr;  // where the exps are kept, if anywhere
          if constexpr (exps_in_out) e = streaming ? &exps(team.team_rank(), 0) : y;
          else if (scratch_exps) e = &exps(team.team_rank(), 0);
          ExpSum es;
          Kokkos::parallel_reduce(
              Kokkos::ThreadVectorRange(team, V),
              [&](int v, ExpSum& total) {
                if (exps_in_out || e) {
                  total.merge(scale < 0.0f ? exp_sum<true, true>(v, e, row, row_max, next)
                                           : exp_sum<false, true>(v, e, row, row_max, next));
                } else if constexpr (!exps_in_out) {
                  total.merge(scale < 0.0f ? exp_sum<true, false>(v, e, row, row_max, next)
                                           : exp_sum<false, false>(v, e, row, row_max, next));
                }
              },
              Merge<ExpSum>(es));
          // The sum is 0 only when every unmasked input is -inf (or nothing is unmasked): the row is all 0.
          const float total = es.sum.value();
          const float inv_sum = total == 0.0f ? 0.0f : 1.0f / total;
          const int u = unmasked(row);
          const E* x = &inp(row, 0);
          const float sc = scale;
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, V), [&](int v) {
            if (exps_in_out || e) {
              lane_map<Traits>(0, u, v, y, [&](int j) { return e[j] * inv_sum; }, streaming);
            } else {
              lane_map<Traits>(0, u, v, y, [&](int j) { return fast_exp_nonpositive(sc * widen(x[j]) - row_max) * inv_sum; });
            }
            lane_sweep<Traits>(u, cols, v, [&](int, int j) { y[j] = round_to<E>(0.0f * inv_sum); });
          });
          return es.next_max;
        });
    streaming_fence<Traits>(streaming);
  }

  KOKKOS_INLINE_FUNCTION int unmasked(int row) const {
    const int cols = static_cast<int>(inp.extent(1));
    return causal ? row % cols + 1 : cols;
  }

  // The max of scale * x[j] over the columns j < n of vector lane v. It starts at the lowest finite
  // float, not -inf, so an all -inf row gives exp(-inf - lowest) = 0 everywhere instead of
  // exp(-inf + inf) = NaN.
  KOKKOS_INLINE_FUNCTION float lane_max(int v, const E* x, int n) const {
    float m[L];
    for (int l = 0; l < L; ++l) m[l] = -FLT_MAX;
    const float sc = scale;
    lane_sweep<Traits>(0, n, v, [&](int l, int j) {
      const float s = sc * widen(x[j]);
      m[l] = s > m[l] ? s : m[l];
    });
    return tree_max(m);
  }

  // K blocks [b, b + K W) of exp_sum's sweep: slot l sums its K exps plainly (in column order) and
  // adds that to its Kahan sum (s[l], c[l]), as lane_sum's chunks do, and takes the running max
  // m[l] of the next row's inputs (of their negations when NegativeScale). The loop over slots is the vector loop (one slot a SIMD lane,
  // PTK_SIMD_LOOP), so the K-block walk runs in registers: the earlier form, which formed each
  // block's exps in local arrays, kept them on the stack (docs/benchmarks.md, "Tuning choices").
  // On the host a 16-bit row's K blocks are widened to float first (widen_block), and the loop reads those; a GPU
  // thread reads its own values (staging them would take K·W floats of stack a thread). Keep: the exps are stored
  // in y.
  template <bool NegativeScale, int K, bool Keep>
  KOKKOS_FORCEINLINE_FUNCTION void exp_chunk(int v, int b, const E* x, const E* xn, float* y, float row_max,
                                             float (&s)[L], float (&c)[L], float (&m)[L]) const {
    prefetch_block<Traits, K * W>(xn, y, b, streaming || !Keep);
    if constexpr (std::is_same_v<E, float> || !Traits::host) {
      exp_block<NegativeScale, K, Keep>(v, b, x, xn, y, row_max, s, c, m);
    } else {
      float xf[K * W], xnf[K * W];
      widen_block(x + b, xf);
      widen_block(xn + b, xnf);
      exp_block<NegativeScale, K, Keep>(v, 0, xf, xnf, Keep ? y + b : nullptr, row_max, s, c, m);
    }
  }

  // exp_chunk's loop over the K blocks at x, xn (X: E or float) from column b, storing the exps at y when Keep.
  // Indexed from the row's start, as before the 16-bit types: pointers offset by b cost the GPU's f32 kernel 8
  // registers (55 -> 63, occupancy 56% -> 50%, cuobjdump).
  template <bool NegativeScale, int K, bool Keep, class X>
  KOKKOS_FORCEINLINE_FUNCTION void exp_block(int v, int b, const X* x, const X* xn, float* y, float row_max,
                                             float (&s)[L], float (&c)[L], float (&m)[L]) const {
    const float sc = scale;
    float p[L];
    PTK_SIMD_LOOP
    for (int l = 0; l < L; ++l) {
      float sum = 0.0f, extreme = m[l];
      for (int k = 0; k < K; ++k) {
        const int j = b + k * W + l * V + v;
        const float e = fast_exp_nonpositive(sc * widen(x[j]) - row_max);
        if constexpr (Keep) y[j] = e;
        sum += e;
        const float t = NegativeScale ? -widen(xn[j]) : widen(xn[j]);
        extreme = t > extreme ? t : extreme;
      }
      p[l] = sum;
      m[l] = extreme;
    }
    kahan_add(s, c, p);
  }

  // Lane v's part of row `row`'s exps, exp(scale * inp - row_max), stored in y (out's row, or the
  // thread's scratch row: scratch_exps), when Keep, and their
  // compensated sum (blocked as lane_sum), with the max of row `next` (next >= 0) taken and
  // prefetched in the same sweep over the columns unmasked in both. That max is taken on the
  // inputs themselves (their min when NegativeScale) and scaled once: rounding is monotonic, so
  // scale * max x is max(scale * x) exactly, and the sweep saves a multiply a vector (a positive
  // scale; a negative one negates instead, exactly).
  template <bool NegativeScale, bool Keep>
  KOKKOS_INLINE_FUNCTION ExpSum exp_sum(int v, float* y, int row, float row_max, int next) const {
    constexpr int C = Traits::chunk_blocks;
    const E* x = &inp(row, 0);
    const E* xn = next >= 0 ? &inp(next, 0) : nullptr;
    const float sc = scale;
    const int n = unmasked(row), nn = next >= 0 ? unmasked(next) : 0;
    const int full = (n < nn ? n : nn) / W * W;
    float s[L] = {}, c[L] = {}, m[L];
    for (int l = 0; l < L; ++l) m[l] = -FLT_MAX;
    // Chunks of C blocks, then the blocks left over one at a time (a chunk each).
    for (int b = 0; b < full;) {
      if (full - b >= C * W) {
        exp_chunk<NegativeScale, C, Keep>(v, b, x, xn, y, row_max, s, c, m);
        b += C * W;
      } else {
        exp_chunk<NegativeScale, 1, Keep>(v, b, x, xn, y, row_max, s, c, m);
        b += W;
      }
    }
    // sc * max x, or sc * min x = -sc * max(-x) for a negative scale. An all -inf part scales to
    // -inf (or below -FLT_MAX) for |scale| > 1: keep lane_max's floor.
    const float top = tree_max(m);
    const float scaled = full > 0 ? sc * (NegativeScale ? -top : top) : -FLT_MAX;
    ExpSum r{merge_slots(s, c), scaled > -FLT_MAX ? scaled : -FLT_MAX};
    r.sum.merge(lane_sum<Traits, Keep>(
        full, n, v, [&](int j) { return fast_exp_nonpositive(sc * widen(x[j]) - row_max); }, y));
    if (full < nn) {
      const float tail = lane_max(v, xn + full, nn - full);
      r.next_max = tail > r.next_max ? tail : r.next_max;
    }
    return r;
  }
};

template <class Space, class Tune = Tuning<Space>, class E = float>
void softmax_forward(const MatrixOf<Space, E>& out, const Same<ConstMatrixOf<Space, E>>& inp, float scale, bool causal) {
  const int rows = static_cast<int>(inp.extent(0));
  const int cols = static_cast<int>(inp.extent(1));
  using Kernel = SoftmaxForward<Space, Tune, E>;
  const int rows_per_team = pipeline_rows<Space, typename Tune::rows>(rows);
  auto policy = row_policy<Space, typename Tune::rows>(rows, rows_per_team);
  const std::size_t exps_bytes = Kernel::exps_scratch_bytes(policy.team_size(), cols);
  // Rows too long for scratch (beyond Kokkos' advertised limit) keep their exps in out (f32) or nowhere (16-bit).
  const bool fits = exps_bytes <= static_cast<std::size_t>(policy.scratch_size_max(Kernel::exps_scratch_level));
  const bool streaming = stream_stores<typename Tune::rows>(out) && fits;
  const bool scratch_exps = std::is_same_v<E, float> ? streaming : Tune::rows::host && fits;
  if (scratch_exps) policy.set_scratch_size(Kernel::exps_scratch_level, Kokkos::PerTeam(exps_bytes));
  Kokkos::parallel_for("ptk::softmax_forward", policy,
                       Kernel{out, inp, scale, causal, rows_per_team, streaming, scratch_exps});
}

// Rows are mapped by Tune::rows (tuning.hpp, row_walk.hpp). Two sweeps per row: the dot product Σ out·dout
// (blocked compensated, lane_sum; the rows come from memory), then dinp (the rows still in L1/L2).
// A NaN in out or dout makes its row's dot, and so its whole row of dinp, NaN.
template <class Space, class Tune = Tuning<Space>, class E = float>
struct SoftmaxBackward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = typename Tune::rows;
  MatrixOf<Space, E> dinp;
  ConstMatrixOf<Space, E> out, dout;
  float scale;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int rows = static_cast<int>(out.extent(0));
    const int first = team.league_rank() * Traits::rows_per_team;
    const int last = first + Traits::rows_per_team < rows ? first + Traits::rows_per_team : rows;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first, last), [&](int row) { this->row(team, row); });
  }

  KOKKOS_INLINE_FUNCTION void row(const Team& team, int row) const {
    const int cols = static_cast<int>(out.extent(1));
    const E* y = &out(row, 0);
    const E* dy = &dout(row, 0);
    E* dx = &dinp(row, 0);
    const float sc = scale;

    Compensated dot;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, Compensated& total) {
          total.merge(lane_sum<Traits>(0, cols, v, [&](int j) { return widen(y[j]) * widen(dy[j]); }));
        },
        CompensatedSum(dot));
    const float d = dot.value();
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      lane_map<Traits>(0, cols, v, dx, [&](int j) { return widen(dx[j]) + sc * widen(y[j]) * (widen(dy[j]) - d); });
    });
  }
};

template <class Space, class Tune = Tuning<Space>, class E = float>
void softmax_backward(const MatrixOf<Space, E>& dinp, const Same<ConstMatrixOf<Space, E>>& out,
                      const Same<ConstMatrixOf<Space, E>>& dout, float scale) {
  const int rows = static_cast<int>(out.extent(0));
  Kokkos::parallel_for("ptk::softmax_backward", row_policy<Space, typename Tune::rows>(rows),
                       SoftmaxBackward<Space, Tune, E>{dinp, out, dout, scale});
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_SOFTMAX_ELEMENT_INSTANCE(EXT, Space, Tune, E) \
  EXT template void softmax_forward<Space, Tune, E>(const MatrixOf<Space, E>& out, const Same<ConstMatrixOf<Space, E>>& inp, float scale, bool causal); \
  EXT template void softmax_backward<Space, Tune, E>(const MatrixOf<Space, E>& dinp, const Same<ConstMatrixOf<Space, E>>& out, const Same<ConstMatrixOf<Space, E>>& dout, float scale);
#define PTK_SOFTMAX_TUNED_INSTANCES(EXT, Space, Tune)           \
  PTK_SOFTMAX_ELEMENT_INSTANCE(EXT, Space, Tune, float)       \
  PTK_SOFTMAX_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::bf16) \
  PTK_SOFTMAX_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_SOFTMAX_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
