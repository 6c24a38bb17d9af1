#pragma once
// layernorm_forward: out[R,N] = (inp - mean) * rstd * weight[N] + bias[N] over the last dim, with
// mean[R] and rstd[R] = 1/sqrt(var + eps) (biased variance) saved for the backward pass.
// layernorm_backward: dout, inp [R,N], weight[N], mean, rstd [R] -> dinp[R,N], dweight[N], dbias[N] (+=);
// x̂ = (inp - mean) rstd, g = dout weight: dinp += rstd (g - mean g - x̂ mean(g x̂)), dweight += Σ dout x̂, dbias += Σ dout.
// E: the element type of inp, out, dout, dinp (f32, bf16, f16); weight, bias, mean, rstd and their gradients fp32.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/column_sums.hpp"
#include "ptk/kernels/detail/compensated.hpp"
#include "ptk/kernels/detail/row_walk.hpp"

namespace ptk::kernels {

// Rows are mapped by Tune::rows (tuning.hpp, row_walk.hpp). Two sweeps per row; the first brings the row
// from memory, the second finds it in L1/L2 (a row of up to ~64 K floats). Mean and variance come
// from one sweep of shifted sums: with K the mean of the row's first min(n, 16) values (in double,
// rounded once), d = x - K, the sweep takes Σ d and Σ d² together, blocked and compensated
// (lane_sum2); then mean = K + Σd / n and var = Σd² / n - (Σd / n)², both in double. The shift
// keeps the cancellation small: with k = |mean - K| / σ the variance is off by about
// row_reduction(n) · (1 + k)² relative, and k ≈ 1/4 for a row whose first 16 values look like the
// rest (1000 + N(0,1) included; docs/tolerances.md). A constant row has K equal to its value, so
// d = 0 and the variance is 0 exactly. The two sweeps are software-pipelined over a team thread's
// rows as in rmsnorm_forward: the output sweep of one row takes the sums of the thread's next row
// (lane_sum2_map, prefetching it), so the loads from memory never pause for the in-cache sweep.
template <class Space, class Tune = Tuning<Space>, class E = float>
struct LayernormForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = WithLanes<typename Tune::rows, Tune::rows::norm_lanes>;
  MatrixOf<Space, E> out;
  Vector<Space> mean, rstd;
  ConstMatrixOf<Space, E> inp;
  ConstVector<Space> weight, bias;
  float eps;
  int rows_per_team;
  bool streaming;  // non-temporal stores of out (stream_stores, row_walk.hpp)

  struct Stats {
    float m, r;
  };

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    walk_pipelined_rows(
        team, static_cast<int>(inp.extent(0)), rows_per_team,
        [&](int row) { return this->stats(team, row, Stats{0.0f, 0.0f}, -1); },
        [&](int row, int next, const Stats& st) { return this->stats(team, next, st, row); });
    streaming_fence<Traits>(streaming);
  }

  // The mean and rstd of row `row` (row >= 0; saved), and, with prev >= 0, out row `prev` written
  // from its statistics sp in the same sweep (row < 0: that output alone, the pipeline's last).
  KOKKOS_INLINE_FUNCTION Stats stats(const Team& team, int row, const Stats sp, int prev) const {
    constexpr int S = 16;  // values averaged for the shift K
    const int cols = static_cast<int>(inp.extent(1));
    const float* w = weight.data();
    const float* b = bias.data();
    const E* xp = prev >= 0 ? &inp(prev, 0) : nullptr;
    E* y = prev >= 0 ? &out(prev, 0) : nullptr;
    const float mp = sp.m, rp = sp.r;
    const auto value = [&](int j) { return (widen(xp[j]) - mp) * rp * w[j] + b[j]; };
    if (row < 0) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length),
                           [&](int v) { lane_map<Traits>(0, cols, v, y, value, streaming); });
      return sp;
    }
    const E* x = &inp(row, 0);

    // K: the mean of the first min(cols, S) values, summed pairwise in double (exact unless they
    // span more than 2^25 in magnitude, so a constant row gives its value back) and rounded once.
    // A full head (cols >= S, the common case) is a fixed-trip loop, which g++ vectorizes; the
    // conditional form alone compiled to scalar code and took a quarter of a 128-wide row's time
    // (one thread, standalone: 90 -> 68 ns a row; with two threads ptk_bench did not tell them apart).
    double head[S];
    if (cols >= S) {
      for (int l = 0; l < S; ++l) head[l] = static_cast<double>(widen(x[l]));
    } else {
      for (int l = 0; l < S; ++l) head[l] = l < cols ? static_cast<double>(widen(x[l])) : 0.0;
    }
    const float k = static_cast<float>(tree_sum(head) / (cols < S ? cols : S));
    const auto term = [&](int j, float& d, float& d2) {
      d = widen(x[j]) - k;
      d2 = d * d;
    };

    CompensatedPair sums;  // Σ d and Σ d², d = x - K
    if (prev >= 0) {
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, Traits::vector_length),
          [&](int v, CompensatedPair& total) { total.merge(lane_sum2_map<Traits>(0, cols, v, term, y, value, x, streaming)); },
          CompensatedPairSum(sums));
    } else {
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, Traits::vector_length),
          [&](int v, CompensatedPair& total) { total.merge(lane_sum2<Traits>(0, cols, v, term)); },
          CompensatedPairSum(sums));
    }
    // The per-row scalars are formed in double (one division and square root a row): each is then
    // a single rounding from the compensated sums.
    const double shift_mean = sums.first.wide() / cols;
    const float m = static_cast<float>(static_cast<double>(k) + shift_mean);
    const double var = sums.second.wide() / cols - shift_mean * shift_mean;
    const float r = static_cast<float>(1.0 / compat::sqrt((var > 0 ? var : 0.0) + static_cast<double>(eps)));
    Kokkos::single(Kokkos::PerThread(team), [&]() {
      mean(row) = m;
      rstd(row) = r;
    });
    return Stats{m, r};
  }
};

template <class Space, class Tune = Tuning<Space>, class E = float>
void layernorm_forward(const MatrixOf<Space, E>& out, const Vector<Space>& mean, const Vector<Space>& rstd,
                       const Same<ConstMatrixOf<Space, E>>& inp, const ConstVector<Space>& weight,
                       const ConstVector<Space>& bias, float eps) {
  const int rows = static_cast<int>(inp.extent(0));
  const int rows_per_team = pipeline_rows<Space, typename Tune::rows>(rows);
  Kokkos::parallel_for("ptk::layernorm_forward", row_policy<Space, typename Tune::rows>(rows, rows_per_team),
                       LayernormForward<Space, Tune, E>{out, mean, rstd, inp, weight, bias, eps, rows_per_team,
                                               stream_stores<typename Tune::rows>(out)});
}

// Rows are mapped as in the forward pass, but blocked for the column sums (ColumnPartials in
// column_sums.hpp): a team owns a block of rows, each of its threads a partial row of dweight and
// dbias. Two sweeps per row: the two row sums (blocked compensated, lane_sum2; the row comes from
// memory), then dinp and the row's terms of dweight and dbias (the row still in L1/L2).
template <class Space, class Tune = Tuning<Space>, class E = float>
struct LayernormBackward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = typename Tune::rows;
  MatrixOf<Space, E> dinp;
  Kokkos::View<double**, Kokkos::LayoutRight, Space> partial;  // [partials, 2 N]: dweight, then dbias
  Matrix<Space> chunk;  // [partials, 2 N]: the same, for the rows of the current chunk, in fp32
  ConstMatrixOf<Space, E> dout, inp;
  ConstVector<Space> weight, mean, rstd;
  int rows_per_block;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int rows = static_cast<int>(inp.extent(0)), cols = static_cast<int>(inp.extent(1));
    const int first = team.league_rank() * rows_per_block;
    const int last = first + rows_per_block < rows ? first + rows_per_block : rows;
    const int threads = team.team_size();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, threads), [&](int t) {
      const int p = team.league_rank() * threads + t;
      walk_partial_rows<Tune>(team, first, last, t, threads, 2 * cols, &partial(p, 0), &chunk(p, 0),
                                [&](int row, float* sums) { this->row(team, row, sums, sums + cols); });
    });
  }

  KOKKOS_INLINE_FUNCTION void row(const Team& team, int row, float* sw, float* sb) const {
    constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V;
    const int cols = static_cast<int>(inp.extent(1));
    const E* x = &inp(row, 0);
    const E* dy = &dout(row, 0);
    E* dx = &dinp(row, 0);
    const float* w = weight.data();
    const float m = mean(row), r = rstd(row);

    CompensatedPair sums;  // Σ g and Σ g x̂, g = dy w, x̂ = (x - m) r
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, CompensatedPair& total) {
          total.merge(lane_sum2<Traits>(0, cols, v, [&](int j, float& g, float& gx) {
            g = widen(dy[j]) * w[j];
            gx = g * ((widen(x[j]) - m) * r);
          }));
        },
        CompensatedPairSum(sums));
    // dx += r g - r mean(g) - (x - m) r² mean(g x̂): the two row constants formed in double, rounded once.
    const double rd = r;
    const float a = static_cast<float>(rd * (sums.first.wide() / cols));
    const float b = static_cast<float>(rd * rd * (sums.second.wide() / cols));

    // One sweep writes dx and adds the row's terms dy x̂ and dy to the thread's chunk rows sw, sb.
    // A block's values are formed in local arrays before any is stored, so no runtime check of dx,
    // sw and sb against x and dy is needed (see lane_map).
    const auto step = [&](int j, float& d, float& tw, float& tb) {
      const float xm = widen(x[j]) - m, dyj = widen(dy[j]);
      d = widen(dx[j]) + ((r * (dyj * w[j]) - a) - xm * b);
      tw = sw[j] + dyj * (xm * r);
      tb = sb[j] + dyj;
    };
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      const int full = cols / W * W;
      for (int blk = 0; blk < full; blk += W) {
        float d[L], tw[L], tb[L];
        for (int l = 0; l < L; ++l) step(blk + l * V + v, d[l], tw[l], tb[l]);
        for (int l = 0; l < L; ++l) {
          const int j = blk + l * V + v;
          dx[j] = round_to<E>(d[l]);
          sw[j] = tw[l];
          sb[j] = tb[l];
        }
      }
      for (int l = 0; l < L; ++l) {
        const int j = full + l * V + v;
        if (j < cols) {
          float d, tw, tb;
          step(j, d, tw, tb);
          dx[j] = round_to<E>(d);
          sw[j] = tw;
          sb[j] = tb;
        }
      }
    });
  }
};

template <class Space, class Tune = Tuning<Space>, class E = float>
void layernorm_backward(const MatrixOf<Space, E>& dinp, const Vector<Space>& dweight, const Vector<Space>& dbias,
                        const Same<ConstMatrixOf<Space, E>>& dout, const Same<ConstMatrixOf<Space, E>>& inp,
                        const ConstVector<Space>& weight, const ConstVector<Space>& mean, const ConstVector<Space>& rstd) {
  using Traits = typename Tune::rows;
  const int rows = static_cast<int>(inp.extent(0)), cols = static_cast<int>(inp.extent(1));
  const auto cut = column_partials<Tune>(rows, cols);
  const auto partial = work_view<Kokkos::View<double**, Kokkos::LayoutRight, Space>>("ptk::layernorm_backward_partials", cut.partials, 2 * cols);
  const auto chunk = work_view<Matrix<Space>>("ptk::layernorm_backward_chunks", cut.partials, 2 * cols);
  Kokkos::parallel_for("ptk::layernorm_backward",
                       Kokkos::TeamPolicy<Space>(cut.blocks, Traits::team_size, Traits::vector_length),
                       LayernormBackward<Space, Tune, E>{dinp, partial, chunk, dout, inp, weight, mean, rstd, cut.rows_per_block});
  add_column_sums<Space, Tune>("ptk::layernorm_backward_dweight", dweight, partial, 0);
  add_column_sums<Space, Tune>("ptk::layernorm_backward_dbias", dbias, partial, cols);
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_LAYERNORM_ELEMENT_INSTANCE(EXT, Space, Tune, E) \
  EXT template void layernorm_forward<Space, Tune, E>(const MatrixOf<Space, E>& out, const Vector<Space>& mean, const Vector<Space>& rstd, const Same<ConstMatrixOf<Space, E>>& inp, const ConstVector<Space>& weight, const ConstVector<Space>& bias, float eps); \
  EXT template void layernorm_backward<Space, Tune, E>(const MatrixOf<Space, E>& dinp, const Vector<Space>& dweight, const Vector<Space>& dbias, const Same<ConstMatrixOf<Space, E>>& dout, const Same<ConstMatrixOf<Space, E>>& inp, const ConstVector<Space>& weight, const ConstVector<Space>& mean, const ConstVector<Space>& rstd);
#define PTK_LAYERNORM_TUNED_INSTANCES(EXT, Space, Tune)           \
  PTK_LAYERNORM_ELEMENT_INSTANCE(EXT, Space, Tune, float)       \
  PTK_LAYERNORM_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::bf16) \
  PTK_LAYERNORM_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_LAYERNORM_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
