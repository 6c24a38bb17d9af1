#pragma once
// layernorm_forward: out[R,N] = (inp - mean) * rstd * weight[N] + bias[N] over the last dim, with
// mean[R] and rstd[R] = 1/sqrt(var + eps) (biased variance) saved for the backward pass.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"

namespace ptk::kernels {

// One team per row; two-pass mean and variance, so a row of large equal values has variance 0
// exactly instead of the catastrophic E[x^2] - E[x]^2.
template <class Space>
struct LayernormForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Matrix<Space> out;
  Vector<Space> mean, rstd;
  ConstMatrix<Space> inp;
  ConstVector<Space> weight, bias;
  float eps;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int row = team.league_rank();
    const int cols = static_cast<int>(inp.extent(1));

    float sum = 0;
    Kokkos::parallel_reduce(Kokkos::TeamThreadRange(team, cols), [&](int j, float& s) { s += inp(row, j); }, sum);
    const float m = sum / cols;

    float squares = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, cols),
        [&](int j, float& s) {
          const float d = inp(row, j) - m;
          s += d * d;
        },
        squares);
    const float r = 1.0f / compat::sqrt(squares / cols + eps);

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols),
                         [&](int j) { out(row, j) = (inp(row, j) - m) * r * weight(j) + bias(j); });
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
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
  Kokkos::parallel_for("ptk::layernorm_forward", Kokkos::TeamPolicy<Space>(rows, Kokkos::AUTO),
                       LayernormForward<Space>{out, mean, rstd, inp, weight, bias, eps});
}

}  // namespace ptk::kernels
