#pragma once
// rmsnorm_forward: out[R,N] = inp * rstd * weight[N] over the last dim, with
// rstd[R] = 1/sqrt(mean(inp^2) + eps) saved for the backward pass.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/row_traits.hpp"

namespace ptk::kernels {

// Rows are mapped by RowTraits (row_traits.hpp). Two sweeps per row: a blocked compensated sum of
// squares (the row comes from memory), then the output (the row is still in L1/L2).
template <class Space>
struct RmsnormForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = RowTraits<Space>;
  Matrix<Space> out;
  Vector<Space> rstd;
  ConstMatrix<Space> inp;
  ConstVector<Space> weight;
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

    Compensated squares;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, Compensated& total) { total.merge(lane_sum<Traits>(0, cols, v, [&](int j) { return x[j] * x[j]; })); },
        CompensatedSum<Space>(squares));
    // rstd is formed in double (one division and square root a row): a single rounding.
    const float r = static_cast<float>(1.0 / compat::sqrt(squares.wide() / cols + static_cast<double>(eps)));

    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      lane_sweep<Traits>(0, cols, v, [&](int, int j) { y[j] = x[j] * r * w[j]; });
    });
    Kokkos::single(Kokkos::PerThread(team), [&]() { rstd(row) = r; });
  }
};

template <class Space>
void rmsnorm_forward(const Matrix<Space>& out, const Vector<Space>& rstd, const ConstMatrix<Space>& inp,
                     const ConstVector<Space>& weight, float eps) {
  const int rows = static_cast<int>(inp.extent(0));
  Kokkos::parallel_for("ptk::rmsnorm_forward", RowTraits<Space>::policy(rows),
                       RmsnormForward<Space>{out, rstd, inp, weight, eps});
}

}  // namespace ptk::kernels
