#pragma once
// rmsnorm_forward: out[R,N] = inp * rstd * weight[N] over the last dim, with
// rstd[R] = 1/sqrt(mean(inp^2) + eps) saved for the backward pass.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"

namespace ptk::kernels {

template <class Space>
struct RmsnormForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Matrix<Space> out;
  Vector<Space> rstd;
  ConstMatrix<Space> inp;
  ConstVector<Space> weight;
  float eps;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int row = team.league_rank();
    const int cols = static_cast<int>(inp.extent(1));

    float squares = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, cols), [&](int j, float& s) { s += inp(row, j) * inp(row, j); }, squares);
    const float r = 1.0f / compat::sqrt(squares / cols + eps);

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](int j) { out(row, j) = inp(row, j) * r * weight(j); });
    Kokkos::single(Kokkos::PerTeam(team), [&]() { rstd(row) = r; });
  }
};

template <class Space>
void rmsnorm_forward(const Matrix<Space>& out, const Vector<Space>& rstd, const ConstMatrix<Space>& inp,
                     const ConstVector<Space>& weight, float eps) {
  const int rows = static_cast<int>(inp.extent(0));
  Kokkos::parallel_for("ptk::rmsnorm_forward", Kokkos::TeamPolicy<Space>(rows, Kokkos::AUTO),
                       RmsnormForward<Space>{out, rstd, inp, weight, eps});
}

}  // namespace ptk::kernels
