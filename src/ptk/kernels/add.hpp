#pragma once
// add_forward:  out[n] = a[n] + b[n] (the residual connection);  accumulate: out[n] += alpha · inp[n] (its backward,
//               once per branch).  bias_forward: out[R,C] = inp[R,C] + bias[C];  bias_backward: dbias[C] += Σ_r dout[r,C].
// dot: Σ a[n] b[n] in double.
#include <Kokkos_Core.hpp>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

template <class Space>
void add_forward(const Vector<Space>& out, const ConstVector<Space>& a, const ConstVector<Space>& b) {
  Kokkos::parallel_for(
      "ptk::add_forward", Kokkos::RangePolicy<Space>(0, static_cast<int>(out.extent(0))),
      KOKKOS_LAMBDA(const int i) { out(i) = a(i) + b(i); });
}

template <class Space>
void accumulate(const Vector<Space>& out, const ConstVector<Space>& inp, float alpha = 1.0f) {
  Kokkos::parallel_for(
      "ptk::accumulate", Kokkos::RangePolicy<Space>(0, static_cast<int>(out.extent(0))),
      KOKKOS_LAMBDA(const int i) { out(i) += alpha * inp(i); });
}

// Kokkos reduces in a fixed order for a given backend and thread count: the same result run to run.
template <class Space>
double dot(const ConstVector<Space>& a, const ConstVector<Space>& b) {
  double total = 0.0;
  Kokkos::parallel_reduce(
      "ptk::dot", Kokkos::RangePolicy<Space>(0, static_cast<int>(a.extent(0))),
      KOKKOS_LAMBDA(const int i, double& acc) { acc += static_cast<double>(a(i)) * static_cast<double>(b(i)); }, total);
  return total;
}

template <class Space>
void bias_forward(const Matrix<Space>& out, const ConstMatrix<Space>& inp, const ConstVector<Space>& bias) {
  const int cols = static_cast<int>(out.extent(1));
  Kokkos::parallel_for(
      "ptk::bias_forward",
      Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>>({0, 0}, {static_cast<long>(out.extent(0)), static_cast<long>(cols)}),
      KOKKOS_LAMBDA(const int r, const int c) { out(r, c) = inp(r, c) + bias(c); });
}

// One work item per group of kBiasColumns adjacent columns walks every row in order and sums in double,
// adding the old gradient in double too: one rounding per element, deterministic (no atomics, a fixed order
// for any thread count) and accurate for any number of rows.
// Host: 16 columns a group, so a row's read is one cache line and the 16 sums vectorize; GPU: one
// column a thread, consecutive threads reading consecutive columns (coalesced).
template <class Space, class Tune = Tuning<Space>>
struct BiasBackward {
  static constexpr int kBiasColumns = Tune::columns::bias_columns;
  Vector<Space> dbias;
  ConstMatrix<Space> dout;

  KOKKOS_INLINE_FUNCTION void operator()(const int group) const {
    const int rows = static_cast<int>(dout.extent(0)), cols = static_cast<int>(dout.extent(1));
    const int first = group * kBiasColumns;
    double sum[kBiasColumns] = {};
    if (first + kBiasColumns <= cols) {
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < kBiasColumns; ++c) sum[c] += static_cast<double>(dout(r, first + c));
      for (int c = 0; c < kBiasColumns; ++c) dbias(first + c) = static_cast<float>(dbias(first + c) + sum[c]);
    } else {
      for (int r = 0; r < rows; ++r)
        for (int c = first; c < cols; ++c) sum[c - first] += static_cast<double>(dout(r, c));
      for (int c = first; c < cols; ++c) dbias(c) = static_cast<float>(dbias(c) + sum[c - first]);
    }
  }
};

template <class Space, class Tune = Tuning<Space>>
void bias_backward(const Vector<Space>& dbias, const ConstMatrix<Space>& dout) {
  constexpr int group = BiasBackward<Space, Tune>::kBiasColumns;
  const int groups = (static_cast<int>(dout.extent(1)) + group - 1) / group;
  Kokkos::parallel_for("ptk::bias_backward", Kokkos::RangePolicy<Space>(0, groups), BiasBackward<Space, Tune>{dbias, dout});
}

}  // namespace ptk::kernels
