#pragma once
// layernorm_forward: out[R,N] = (inp - mean) * rstd * weight[N] + bias[N] over the last dim, with
// mean[R] and rstd[R] = 1/sqrt(var + eps) (biased variance) saved for the backward pass.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/row_traits.hpp"

namespace ptk::kernels {

// Rows are mapped by RowTraits (row_traits.hpp). Three sweeps per row; the first brings the row
// from memory, the other two find it in L1/L2 (a row of up to ~64 K floats). Mean: compensated
// sum. Variance: the corrected two-pass form (sum d^2 - (sum d)^2 / n) / n with d = x - mean,
// compensated, so a row of large nearly equal values (1000 + N(0,1)) keeps full accuracy and a
// constant row has variance 0 exactly.
template <class Space>
struct LayernormForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = RowTraits<Space>;
  static constexpr int L = Traits::lanes;
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
        [&](int v, Compensated& total) {
          float s[L] = {}, c[L] = {};
          lane_sweep<Traits>(0, cols, v, [&](int l, int j) {
            const float t_in = x[j] - c[l];
            const float t = s[l] + t_in;
            c[l] = (t - s[l]) - t_in;
            s[l] = t;
          });
          total.merge(merge_slots(s, c));
        },
        CompensatedSum<Space>(sum));
    const float m = sum.value() / static_cast<float>(cols);

    Compensated squares;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, Compensated& total) {
          float s[L] = {}, c[L] = {}, d1[L] = {};
          lane_sweep<Traits>(0, cols, v, [&](int l, int j) {
            const float d = x[j] - m;
            d1[l] += d;
            const float t_in = d * d - c[l];
            const float t = s[l] + t_in;
            c[l] = (t - s[l]) - t_in;
            s[l] = t;
          });
          Compensated part = merge_slots(s, c);
          for (int l = 0; l < L; ++l) part.aux += d1[l];
          total.merge(part);
        },
        CompensatedSum<Space>(squares));
    // squares.aux = sum d is n times the mean's own rounding error: subtracting its square / n
    // removes that error's contribution to the sum of squares.
    float var = (squares.value() - squares.aux * squares.aux / static_cast<float>(cols)) / static_cast<float>(cols);
    var = var > 0 ? var : 0.0f;
    const float r = 1.0f / compat::sqrt(var + eps);

    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      lane_sweep<Traits>(0, cols, v, [&](int, int j) { y[j] = (x[j] - m) * r * w[j] + b[j]; });
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
