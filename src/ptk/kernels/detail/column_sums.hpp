#pragma once
// Deterministic column sums of the backward passes (dgamma, dbeta, dweight): per-thread partial
// rows, then a pass that adds them in order. The geometry is Tune::columns (tuning.hpp).
#include <Kokkos_Core.hpp>

#include "ptk/kernels/detail/row_walk.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

// How a backward pass sums per-row terms over the rows into per-column gradients without atomics,
// deterministically: the rows are cut into `blocks` contiguous blocks of `rows_per_block` rows, one
// team each. Thread t of block b owns partial row p = b * team_size + t: it visits rows
// first + t, first + t + team_size, ... in order, adds each row's terms into an fp32 chunk row
// chunk(p, :) and, every `chunk_rows` rows and at the end, adds the chunk into the double row
// partial(p, :) (so a term passes through at most chunk_rows - 1 fp32 additions, and the many
// per-element conversions to double are paid once per chunk). A second kernel (add_column_sums)
// adds the partial rows column by column in partial order. The cut depends on the shape alone, so
// results are bitwise identical run to run, for any thread count.
struct ColumnPartials {
  int blocks, rows_per_block, team_size, partials;
};

template <class Tune>
ColumnPartials column_partials(int rows, int cols) {
  using C = typename Tune::columns;
  constexpr int team_size = Tune::rows::team_size;
  int want = (rows + C::min_rows_per_partial - 1) / C::min_rows_per_partial;
  if (want > C::max_partials) want = C::max_partials;
  if (want > C::max_partial_elements / cols) want = C::max_partial_elements / cols;
  if (want < 1) want = 1;
  int blocks = (want + team_size - 1) / team_size;
  const int rows_per_block = (rows + blocks - 1) / blocks;
  blocks = (rows + rows_per_block - 1) / rows_per_block;  // no empty block
  return {blocks, rows_per_block, team_size, blocks * team_size};
}

// The walk of one team thread over its rows (see ColumnPartials): zeroes its `width` accumulated
// columns (`partial` in double, `chunk` in fp32), calls row(r, chunk) for each of its rows, which
// adds that row's terms into chunk[0, width), and flushes chunk into partial every chunk_rows rows.
template <class Tune, class Team, class Row>
KOKKOS_INLINE_FUNCTION void walk_partial_rows(const Team& team, int first, int last, int t, int threads, int width,
                                              double* partial, float* chunk, const Row& row) {
  using Traits = typename Tune::rows;
  Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
    lane_sweep<Traits>(0, width, v, [&](int, int j) {
      partial[j] = 0.0;
      chunk[j] = 0.0f;
    });
  });
  const auto flush = [&]() {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      lane_sweep<Traits>(0, width, v, [&](int, int j) {
        partial[j] += static_cast<double>(chunk[j]);
        chunk[j] = 0.0f;
      });
    });
  };
  int in_chunk = 0;
  for (int r = first + t; r < last; r += threads) {
    row(r, chunk);
    if (++in_chunk == Tune::columns::chunk_rows) {
      flush();
      in_chunk = 0;
    }
  }
  if (in_chunk > 0) flush();
}

// out[j] += sum over p of partial(p, offset + j), for j in [0, out.extent(0)): the sum in double in
// increasing p, added to out[j] in double and rounded once. 32 columns an iteration on the host
// (vectorized), one a thread on a GPU (coalesced).
template <class Space, class Tune>
void add_column_sums(const char* label, const Kokkos::View<float*, Kokkos::LayoutRight, Space>& out,
                     const Kokkos::View<const double**, Kokkos::LayoutRight, Space>& partial, int offset) {
  constexpr int B = Tune::columns::final_block;
  const int cols = static_cast<int>(out.extent(0));
  const int partials = static_cast<int>(partial.extent(0));
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Space>(0, (cols + B - 1) / B), KOKKOS_LAMBDA(const int block) {
        const int begin = block * B;
        if (begin + B <= cols) {
          double s[B] = {};
          for (int p = 0; p < partials; ++p) {
            const double* row = &partial(p, offset + begin);
            for (int l = 0; l < B; ++l) s[l] += row[l];
          }
          for (int l = 0; l < B; ++l) out(begin + l) = static_cast<float>(static_cast<double>(out(begin + l)) + s[l]);
        } else {
          for (int j = begin; j < cols; ++j) {
            double s = 0;
            for (int p = 0; p < partials; ++p) s += partial(p, offset + j);
            out(j) = static_cast<float>(static_cast<double>(out(j)) + s);
          }
        }
      });
}

}  // namespace ptk::kernels
