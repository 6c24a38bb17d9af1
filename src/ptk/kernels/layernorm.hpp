#pragma once
// layernorm_forward: out[R,N] = (inp - mean) * rstd * weight[N] + bias[N] over the last dim, with
// mean[R] and rstd[R] = 1/sqrt(var + eps) (biased variance) saved for the backward pass.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/row_traits.hpp"

namespace ptk::kernels {

// Rows are mapped by RowTraits (row_traits.hpp). Three sweeps per row; the first brings the row
// from memory, the other two find it in L1/L2 (a row of up to ~64 K floats). Mean: blocked
// compensated sum (lane_sum). Variance: two-pass, sum (x - mean)^2 / n, blocked compensated, so a
// row of large nearly equal values (1000 + N(0,1)) keeps full accuracy and a constant row has
// variance 0 exactly.
template <class Space>
struct LayernormForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = RowTraits<Space>;
  Matrix<Space> out;
  Vector<Space> mean, rstd;
  ConstMatrix<Space> inp;
  ConstVector<Space> weight, bias;
  float eps;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int rows = static_cast<int>(inp.extent(0));
    const int first = team.league_rank() * Traits::rows_per_team;
    const int last = first + Traits::rows_per_team < rows ? first + Traits::rows_per_team : rows;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first, last), [&](int row) { this->row(team, row); });
  }

  KOKKOS_INLINE_FUNCTION void row(const Team& team, int row) const {
    const int cols = static_cast<int>(inp.extent(1));
    const float* x = &inp(row, 0);
    float* y = &out(row, 0);
    const float* w = weight.data();
    const float* b = bias.data();

    Compensated sum;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, Compensated& total) { total.merge(lane_sum<Traits>(0, cols, v, [&](int j) { return x[j]; })); },
        CompensatedSum<Space>(sum));
    // The per-row scalars are formed in double (one division and square root a row): each is then
    // a single rounding from the compensated sums.
    const float m = static_cast<float>(sum.wide() / cols);

    // The textbook correction -(sum d)^2 / n is left out: with the compensated mean, sum d is
    // about n u |mean|, and its square / n is (u |mean| / spread)^2 relative, far below u.
    Compensated squares;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, Compensated& total) {
          total.merge(lane_sum<Traits>(0, cols, v, [&](int j) {
            const float d = x[j] - m;
            return d * d;
          }));
        },
        CompensatedSum<Space>(squares));
    const double var = squares.wide() / cols;
    const float r = static_cast<float>(1.0 / compat::sqrt((var > 0 ? var : 0.0) + static_cast<double>(eps)));

    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      lane_map<Traits>(0, cols, v, y, [&](int j) { return (x[j] - m) * r * w[j] + b[j]; });
    });
    Kokkos::single(Kokkos::PerThread(team), [&]() {
      mean(row) = m;
      rstd(row) = r;
    });
  }
};

template <class Space>
void layernorm_forward(const Matrix<Space>& out, const Vector<Space>& mean, const Vector<Space>& rstd,
                       const ConstMatrix<Space>& inp, const ConstVector<Space>& weight, const ConstVector<Space>& bias,
                       float eps) {
  const int rows = static_cast<int>(inp.extent(0));
  Kokkos::parallel_for("ptk::layernorm_forward", RowTraits<Space>::policy(rows),
                       LayernormForward<Space>{out, mean, rstd, inp, weight, bias, eps});
}

}  // namespace ptk::kernels
