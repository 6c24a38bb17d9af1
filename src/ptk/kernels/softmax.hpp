#pragma once
// softmax_forward: out[R,N] = softmax(scale * inp) over the last dim; causal treats row r as query
// t = r % N of a square [T,T] block and masks columns j > t. Fully masked / all -inf rows give 0.
// softmax_backward: out, dout [R,N] (out = softmax_forward's output) -> dinp[R,N] +=
// scale · out ∘ (dout - Σ_j out dout) per row; masked entries have out = 0 and get nothing.
#include <Kokkos_Core.hpp>

#include <cfloat>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/fast_exp.hpp"
#include "ptk/kernels/row_traits.hpp"

namespace ptk::kernels {

// Rows are mapped by RowTraits (row_traits.hpp). Three sweeps per row: the max (the row comes
// from memory), exp (fast_exp_nonpositive: the arguments are <= 0 up to a rounding) stored in out with a blocked compensated sum, scale by 1/sum (both in
// L1/L2). The max skips NaN, so a NaN input turns its row's sum and every output of that row
// into NaN, and masked columns are written as 0 * (1/sum) for the same reason: NaN stays in its
// row, as in PyTorch. out may alias inp (each element is read before it is written, by the same
// lane).
template <class Space>
struct SoftmaxForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = RowTraits<Space>;
  static constexpr int L = Traits::lanes;
  Matrix<Space> out;
  ConstMatrix<Space> inp;
  float scale;
  bool causal;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int rows = static_cast<int>(inp.extent(0));
    const int first = team.league_rank() * Traits::rows_per_team;
    const int last = first + Traits::rows_per_team < rows ? first + Traits::rows_per_team : rows;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first, last), [&](int row) { this->row(team, row); });
  }

  KOKKOS_INLINE_FUNCTION void row(const Team& team, int row) const {
    const int cols = static_cast<int>(inp.extent(1));
    const int unmasked = causal ? row % cols + 1 : cols;
    const float* x = &inp(row, 0);
    float* y = &out(row, 0);
    const float sc = scale;

    // The max starts at the lowest finite float, not -inf, so an all -inf row gives
    // exp(-inf - lowest) = 0 everywhere instead of exp(-inf + inf) = NaN.
    float row_max = -FLT_MAX;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, float& total) {
          float m[L];
          for (int l = 0; l < L; ++l) m[l] = -FLT_MAX;
          lane_sweep<Traits>(0, unmasked, v, [&](int l, int j) {
            const float s = sc * x[j];
            m[l] = s > m[l] ? s : m[l];
          });
          const float lane_max = tree_max(m);
          total = lane_max > total ? lane_max : total;
        },
        Kokkos::Max<float>(row_max));

    Compensated sum;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, Compensated& total) {
          total.merge(lane_sum<Traits, true>(
              0, unmasked, v, [&](int j) { return fast_exp_nonpositive(sc * x[j] - row_max); }, y));
        },
        CompensatedSum<Space>(sum));

    // The sum is 0 only when every unmasked input is -inf (or nothing is unmasked): the row is all 0.
    const float total = sum.value();
    const float inv_sum = total == 0.0f ? 0.0f : 1.0f / total;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      lane_sweep<Traits>(0, unmasked, v, [&](int, int j) { y[j] *= inv_sum; });
      lane_sweep<Traits>(unmasked, cols, v, [&](int, int j) { y[j] = 0.0f * inv_sum; });
    });
  }
};

template <class Space>
void softmax_forward(const Matrix<Space>& out, const ConstMatrix<Space>& inp, float scale, bool causal) {
  const int rows = static_cast<int>(inp.extent(0));
  Kokkos::parallel_for("ptk::softmax_forward", RowTraits<Space>::policy(rows),
                       SoftmaxForward<Space>{out, inp, scale, causal});
}

// Rows are mapped by RowTraits (row_traits.hpp). Two sweeps per row: the dot product Σ out·dout
// (blocked compensated, lane_sum; the rows come from memory), then dinp (the rows still in L1/L2).
// A NaN in out or dout makes its row's dot, and so its whole row of dinp, NaN.
template <class Space>
struct SoftmaxBackward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = RowTraits<Space>;
  Matrix<Space> dinp;
  ConstMatrix<Space> out, dout;
  float scale;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int rows = static_cast<int>(out.extent(0));
    const int first = team.league_rank() * Traits::rows_per_team;
    const int last = first + Traits::rows_per_team < rows ? first + Traits::rows_per_team : rows;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first, last), [&](int row) { this->row(team, row); });
  }

  KOKKOS_INLINE_FUNCTION void row(const Team& team, int row) const {
    const int cols = static_cast<int>(out.extent(1));
    const float* y = &out(row, 0);
    const float* dy = &dout(row, 0);
    float* dx = &dinp(row, 0);
    const float sc = scale;

    Compensated dot;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, Compensated& total) { total.merge(lane_sum<Traits>(0, cols, v, [&](int j) { return y[j] * dy[j]; })); },
        CompensatedSum<Space>(dot));
    const float d = dot.value();
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      lane_map<Traits>(0, cols, v, dx, [&](int j) { return dx[j] + sc * y[j] * (dy[j] - d); });
    });
  }
};

template <class Space>
void softmax_backward(const Matrix<Space>& dinp, const ConstMatrix<Space>& out, const ConstMatrix<Space>& dout,
                      float scale) {
  const int rows = static_cast<int>(out.extent(0));
  Kokkos::parallel_for("ptk::softmax_backward", RowTraits<Space>::policy(rows),
                       SoftmaxBackward<Space>{dinp, out, dout, scale});
}

}  // namespace ptk::kernels
