#pragma once
// add_forward:  out[n] = a[n] + b[n] (the residual connection);  accumulate: out[n] += alpha · inp[n] (its backward,
//               once per branch).  bias_forward: out[R,C] = inp[R,C] + bias[C];  bias_backward: dbias[C] += Σ_r dout[r,C].
// dot: Σ a[n] b[n] in double.
#include <Kokkos_Core.hpp>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/kernels/detail/column_sums.hpp"
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
// The host's form: 16 columns a group, so a row's read is one cache line and the 16 sums vectorize.
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

// The GPU form (Tune::columns::bias_two_level): the rows are cut as the norms' column sums are
// (column_partials, column_sums.hpp), a team per block of rows; each team thread adds its rows, in
// order and in double, into its own partial row, its vector lanes taking the columns; then
// add_column_sums adds the partial rows in order, in double, and rounds once. Every GPU thread takes
// part, where one thread a column would leave most of the GPU idle; still deterministic.
template <class Space, class Tune>
struct BiasPartials {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Kokkos::View<double**, Kokkos::LayoutRight, Space> partial;
  ConstMatrix<Space> dout;
  int rows_per_block;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    using Traits = typename Tune::rows;
    const int rows = static_cast<int>(dout.extent(0)), cols = static_cast<int>(dout.extent(1));
    const int t = team.team_rank(), threads = team.team_size();
    const int first = team.league_rank() * rows_per_block;
    const int last = rows - first < rows_per_block ? rows : first + rows_per_block;
    double* const sum = &partial(team.league_rank() * threads + t, 0);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      lane_sweep<Traits>(0, cols, v, [&](int, int j) { sum[j] = 0.0; });
      for (int r = first + t; r < last; r += threads)
        lane_sweep<Traits>(0, cols, v, [&](int, int j) { sum[j] += static_cast<double>(dout(r, j)); });
    });
  }
};

template <class Space, class Tune = Tuning<Space>>
void bias_backward(const Vector<Space>& dbias, const ConstMatrix<Space>& dout) {
  const int rows = static_cast<int>(dout.extent(0)), cols = static_cast<int>(dout.extent(1));
  if (rows == 0 || cols == 0) return;
  if constexpr (Tune::columns::bias_two_level) {
    using Traits = typename Tune::rows;
    const auto cut = column_partials<Tune>(rows, cols);
    const auto partial =
        work_view<Kokkos::View<double**, Kokkos::LayoutRight, Space>>("ptk::bias_backward_partials", cut.partials, cols);
    Kokkos::parallel_for("ptk::bias_backward_partials",
                         Kokkos::TeamPolicy<Space>(cut.blocks, Traits::team_size, Traits::vector_length),
                         BiasPartials<Space, Tune>{partial, dout, cut.rows_per_block});
    add_column_sums<Space, Tune>("ptk::bias_backward", dbias, partial, 0);
  } else {
    constexpr int group = BiasBackward<Space, Tune>::kBiasColumns;
    const int groups = (cols + group - 1) / group;
    Kokkos::parallel_for("ptk::bias_backward", Kokkos::RangePolicy<Space>(0, groups), BiasBackward<Space, Tune>{dbias, dout});
  }
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_ADD_TUNED_INSTANCES(EXT, Space, Tune) \
  EXT template void bias_backward<Space, Tune>(const Vector<Space>& dbias, const ConstMatrix<Space>& dout);
#define PTK_ADD_SPACE_INSTANCES(EXT, Space) \
  EXT template void add_forward<Space>(const Vector<Space>& out, const ConstVector<Space>& a, const ConstVector<Space>& b); \
  EXT template void accumulate<Space>(const Vector<Space>& out, const ConstVector<Space>& inp, float alpha); \
  EXT template double dot<Space>(const ConstVector<Space>& a, const ConstVector<Space>& b); \
  EXT template void bias_forward<Space>(const Matrix<Space>& out, const ConstMatrix<Space>& inp, const ConstVector<Space>& bias);
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_ADD_TUNED_INSTANCES, extern)
PTK_FOR_EACH_SPACE(PTK_ADD_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
