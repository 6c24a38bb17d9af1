#pragma once
// rmsnorm_forward: out[R,N] = inp * rstd * weight[N] over the last dim, with
// rstd[R] = 1/sqrt(mean(inp^2) + eps) saved for the backward pass.
// rmsnorm_backward: dout, inp [R,N], weight[N], rstd[R] -> dinp[R,N], dweight[N], both +=; g = dout weight:
// dinp += rstd g - inp rstd^3 mean_j(g inp), dweight += Σ_r dout inp rstd.
// E: the element type of inp, out, dout, dinp (f32, bf16, f16); weight, rstd and dweight fp32.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/column_sums.hpp"
#include "ptk/kernels/detail/compensated.hpp"
#include "ptk/kernels/detail/row_walk.hpp"

namespace ptk::kernels {

// Rows are mapped by Tune::rows (tuning.hpp, row_walk.hpp). Two sweeps per row: a blocked compensated sum of
// squares (the row comes from memory), then the output (the row is still in L1/L2). The sweeps are
// software-pipelined over a team thread's rows (a team takes pipeline_rows rows): the output sweep of one row also takes the sum of
// squares of the thread's next row (lane_sum_map, prefetching it), so the loads from memory never pause for the
// in-cache sweep. The sums are bitwise those of the plain sweeps.
template <class Space, class Tune = Tuning<Space>, class E = float>
struct RmsnormForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = WithLanes<typename Tune::rows, Tune::rows::norm_lanes>;
  MatrixOf<Space, E> out;
  Vector<Space> rstd;
  ConstMatrixOf<Space, E> inp;
  ConstVector<Space> weight;
  float eps;
  int rows_per_team;
  bool streaming;  // non-temporal stores of out (stream_stores, row_walk.hpp)

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    walk_pipelined_rows(
        team, static_cast<int>(inp.extent(0)), rows_per_team,
        [&](int row) { return this->stats(team, row, nullptr, 0.0f, -1); },
        [&](int row, int next, float r) { return this->stats(team, next, &out(row, 0), r, row); });
    streaming_fence<Traits>(streaming);
  }

  // The rstd of row `row` (row >= 0; saved), and, with y, y = out row `prev` written with rstd rp,
  // in the same sweep (row < 0: that output alone, the pipeline's last).
  KOKKOS_INLINE_FUNCTION float stats(const Team& team, int row, E* y, float rp, int prev) const {
    const int cols = static_cast<int>(inp.extent(1));
    const float* w = weight.data();
    if (row < 0) {  // the last row of the pipeline: output only
      const E* xp = &inp(prev, 0);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
        lane_map<Traits>(0, cols, v, y, [&](int j) { return widen(xp[j]) * rp * w[j]; }, streaming);
      });
      return 0.0f;
    }
    const E* x = &inp(row, 0);
    const auto square = [&](int j) {
      const float xj = widen(x[j]);
      return xj * xj;
    };
    Compensated squares;
    if (y) {
      const E* xp = &inp(prev, 0);
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, Traits::vector_length),
          [&](int v, Compensated& total) {
            total.merge(lane_sum_map<Traits>(
                0, cols, v, square, y, [&](int j) { return widen(xp[j]) * rp * w[j]; }, x, streaming));
          },
          CompensatedSum(squares));
    } else {
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, Traits::vector_length),
          [&](int v, Compensated& total) { total.merge(lane_sum<Traits>(0, cols, v, square)); },
          CompensatedSum(squares));
    }
    // rstd is formed in double (one division and square root a row): a single rounding.
    const float r = static_cast<float>(1.0 / compat::sqrt(squares.wide() / cols + static_cast<double>(eps)));
    Kokkos::single(Kokkos::PerThread(team), [&]() { rstd(row) = r; });
    return r;
  }
};

template <class Space, class Tune = Tuning<Space>, class E = float>
void rmsnorm_forward(const MatrixOf<Space, E>& out, const Vector<Space>& rstd, const Same<ConstMatrixOf<Space, E>>& inp,
                     const ConstVector<Space>& weight, float eps) {
  const int rows = static_cast<int>(inp.extent(0));
  const int rows_per_team = pipeline_rows<Space, typename Tune::rows>(rows);
  Kokkos::parallel_for("ptk::rmsnorm_forward", row_policy<Space, typename Tune::rows>(rows, rows_per_team),
                       RmsnormForward<Space, Tune, E>{out, rstd, inp, weight, eps, rows_per_team,
                                             stream_stores<typename Tune::rows>(out)});
}

// Rows are mapped as in layernorm_backward (a team owns a block of rows, each thread a partial row
// of dweight; ColumnPartials in column_sums.hpp). Two sweeps per row: the row sum Σ g inp (blocked
// compensated; the row comes from memory), then dinp and the row's terms of dweight.
template <class Space, class Tune = Tuning<Space>, class E = float>
struct RmsnormBackward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = typename Tune::rows;
  MatrixOf<Space, E> dinp;
  Kokkos::View<double**, Kokkos::LayoutRight, Space> partial;  // [partials, N]
  Matrix<Space> chunk;  // [partials, N]: the current chunk of rows, in fp32
  ConstMatrixOf<Space, E> dout, inp;
  ConstVector<Space> weight, rstd;
  int rows_per_block;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int rows = static_cast<int>(inp.extent(0)), cols = static_cast<int>(inp.extent(1));
    const int first = team.league_rank() * rows_per_block;
    const int last = first + rows_per_block < rows ? first + rows_per_block : rows;
    const int threads = team.team_size();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, threads), [&](int t) {
      const int p = team.league_rank() * threads + t;
      walk_partial_rows<Tune>(team, first, last, t, threads, cols, &partial(p, 0), &chunk(p, 0),
                                [&](int row, float* sums) { this->row(team, row, sums); });
    });
  }

  KOKKOS_INLINE_FUNCTION void row(const Team& team, int row, float* sw) const {
    constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V;
    const int cols = static_cast<int>(inp.extent(1));
    const E* x = &inp(row, 0);
    const E* dy = &dout(row, 0);
    E* dx = &dinp(row, 0);
    const float* w = weight.data();
    const float r = rstd(row);

    Compensated sum_gx;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, Compensated& total) {
          total.merge(lane_sum<Traits>(0, cols, v, [&](int j) { return widen(dy[j]) * w[j] * widen(x[j]); }));
        },
        CompensatedSum(sum_gx));
    // rstd^3 mean(g x) in double, rounded once.
    const double rd = r;
    const float c = static_cast<float>(rd * rd * rd * (sum_gx.wide() / cols));

    // One sweep writes dx and adds the row's terms dy x r to the thread's chunk row sw. A block's
    // values are formed in local arrays before any is stored, so no runtime check of dx and sw
    // against x and dy is needed (see lane_map).
    const auto step = [&](int j, float& d, float& tw) {
      const float xj = widen(x[j]), dyj = widen(dy[j]);
      d = widen(dx[j]) + (r * (dyj * w[j]) - xj * c);
      tw = sw[j] + dyj * (xj * r);
    };
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      const int full = cols / W * W;
      for (int blk = 0; blk < full; blk += W) {
        float d[L], tw[L];
        for (int l = 0; l < L; ++l) step(blk + l * V + v, d[l], tw[l]);
        for (int l = 0; l < L; ++l) {
          const int j = blk + l * V + v;
          dx[j] = round_to<E>(d[l]);
          sw[j] = tw[l];
        }
      }
      for (int l = 0; l < L; ++l) {
        const int j = full + l * V + v;
        if (j < cols) {
          float d, tw;
          step(j, d, tw);
          dx[j] = round_to<E>(d);
          sw[j] = tw;
        }
      }
    });
  }
};

template <class Space, class Tune = Tuning<Space>, class E = float>
void rmsnorm_backward(const MatrixOf<Space, E>& dinp, const Vector<Space>& dweight, const Same<ConstMatrixOf<Space, E>>& dout,
                      const Same<ConstMatrixOf<Space, E>>& inp, const ConstVector<Space>& weight, const ConstVector<Space>& rstd) {
  using Traits = typename Tune::rows;
  const int rows = static_cast<int>(inp.extent(0)), cols = static_cast<int>(inp.extent(1));
  const auto cut = column_partials<Tune>(rows, cols);
  const auto partial = work_view<Kokkos::View<double**, Kokkos::LayoutRight, Space>>("ptk::rmsnorm_backward_partials", cut.partials, cols);
  const auto chunk = work_view<Matrix<Space>>("ptk::rmsnorm_backward_chunks", cut.partials, cols);
  Kokkos::parallel_for("ptk::rmsnorm_backward",
                       Kokkos::TeamPolicy<Space>(cut.blocks, Traits::team_size, Traits::vector_length),
                       RmsnormBackward<Space, Tune, E>{dinp, partial, chunk, dout, inp, weight, rstd, cut.rows_per_block});
  add_column_sums<Space, Tune>("ptk::rmsnorm_backward_dweight", dweight, partial, 0);
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_RMSNORM_ELEMENT_INSTANCE(EXT, Space, Tune, E) \
  EXT template void rmsnorm_forward<Space, Tune, E>(const MatrixOf<Space, E>& out, const Vector<Space>& rstd, const Same<ConstMatrixOf<Space, E>>& inp, const ConstVector<Space>& weight, float eps); \
  EXT template void rmsnorm_backward<Space, Tune, E>(const MatrixOf<Space, E>& dinp, const Vector<Space>& dweight, const Same<ConstMatrixOf<Space, E>>& dout, const Same<ConstMatrixOf<Space, E>>& inp, const ConstVector<Space>& weight, const ConstVector<Space>& rstd);
#define PTK_RMSNORM_TUNED_INSTANCES(EXT, Space, Tune)           \
  PTK_RMSNORM_ELEMENT_INSTANCE(EXT, Space, Tune, float)       \
  PTK_RMSNORM_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::bf16) \
  PTK_RMSNORM_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_RMSNORM_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
