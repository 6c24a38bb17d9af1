#pragma once
// softmax_forward: out[R,N] = softmax(scale * inp) over the last dim; causal treats row r as query
// t = r % N of a square [T,T] block and masks columns j > t. Fully masked / all -inf rows give 0.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"

namespace ptk::kernels {

// One team per row, three sweeps: max, exp and sum (exp stored in out), scale by 1/sum. The max
// skips NaN, so a NaN input turns its row's sum and every output of that row into NaN, and masked
// columns are written as 0 * (1/sum) for the same reason: NaN stays in its row, as in PyTorch.
// out may alias inp (each element is read before it is written, by the same thread).
template <class Space>
struct SoftmaxForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Matrix<Space> out;
  ConstMatrix<Space> inp;
  float scale;
  bool causal;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int row = team.league_rank();
    const int cols = static_cast<int>(inp.extent(1));
    const int unmasked = causal ? row % cols + 1 : cols;

    float row_max = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, unmasked),
        [&](int j, float& m) {
          const float v = scale * inp(row, j);
          if (v > m) m = v;
        },
        Kokkos::Max<float>(row_max));

    float sum = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, unmasked),
        [&](int j, float& s) {
          const float e = compat::exp(scale * inp(row, j) - row_max);
          out(row, j) = e;
          s += e;
        },
        sum);

    // sum == 0 only when every unmasked input is -inf (or nothing is unmasked): the row is all 0.
    const float inv_sum = sum == 0.0f ? 0.0f : 1.0f / sum;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](int j) {
      out(row, j) = j < unmasked ? out(row, j) * inv_sum : 0.0f * inv_sum;
    });
  }
};

template <class Space>
void softmax_forward(const Matrix<Space>& out, const ConstMatrix<Space>& inp, float scale, bool causal) {
  const int rows = static_cast<int>(inp.extent(0));
  Kokkos::parallel_for("ptk::softmax_forward", Kokkos::TeamPolicy<Space>(rows, Kokkos::AUTO),
                       SoftmaxForward<Space>{out, inp, scale, causal});
}

}  // namespace ptk::kernels
