#pragma once
// embedding_forward:  out[N,C] = table[ids[n], :] for token ids[N] in [0, V) and table[V,C].
// embedding_backward: dtable[v,:] += Σ_{n : ids[n] = v} dout[n,:], each sum taken in increasing n.
#include <Kokkos_Core.hpp>
#include <Kokkos_Sort.hpp>

#include <cstdint>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

template <class Space>
void embedding_forward(const Matrix<Space>& out, const ConstIndexVector<Space>& ids, const ConstMatrix<Space>& table) {
  const int channels = static_cast<int>(table.extent(1));
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Kokkos::parallel_for(
      "ptk::embedding_forward", Kokkos::TeamPolicy<Space>(static_cast<int>(ids.extent(0)), Kokkos::AUTO),
      KOKKOS_LAMBDA(const Team& team) {
        const int n = team.league_rank();
        const int v = ids(n);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, channels), [&](int c) { out(n, c) = table(v, c); });
      });
}

// Deterministic on every backend, with no floating-point atomics: the positions are taken in the
// order `order` of (id, n) (the positions sorted by id, ties in increasing n), so each table row
// gathers its positions in increasing n, and one team owns one row (its threads own channels).
// Results are bitwise identical run to run and across thread counts.
template <class Space>
void embedding_backward(const Matrix<Space>& dtable, const ConstMatrix<Space>& dout, const ConstIndexVector<Space>& ids,
                        const ConstIndexVector<Space>& order) {
  const int positions = static_cast<int>(ids.extent(0));
  const int vocab = static_cast<int>(dtable.extent(0)), channels = static_cast<int>(dtable.extent(1));
  // first[v] = index in order of the first position whose id is >= v (a lower bound), v in [0, V].
  const auto first = work_view<IndexVector<Space>>("ptk::embedding_first", dtable.extent(0) + 1);
  Kokkos::parallel_for(
      "ptk::embedding_backward_buckets", Kokkos::RangePolicy<Space>(0, vocab + 1), KOKKOS_LAMBDA(const int v) {
        int lo = 0, hi = positions;
        while (lo < hi) {
          const int mid = lo + (hi - lo) / 2;
          if (ids(order(mid)) < v) lo = mid + 1;
          else hi = mid;
        }
        first(v) = lo;
      });

  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Kokkos::parallel_for(
      "ptk::embedding_backward", Kokkos::TeamPolicy<Space>(vocab, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& team) {
        const int v = team.league_rank();
        // Each thread owns its channels for the whole walk, so the walk needs no barrier.
        for (int e = first(v); e < first(v + 1); ++e) {
          const int n = order(e);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, channels), [&](int c) { dtable(v, c) += dout(n, c); });
        }
      });
}

// The same with the order sorted on the device (Kokkos::sort of the unique keys id·N + n), for ids
// whose order the caller does not have (the autograd layer sorts its ids on the host, where they are
// made: Kokkos::sort fences, and on CUDA goes through Thrust, which allocates per call).
template <class Space>
void embedding_backward(const Matrix<Space>& dtable, const ConstMatrix<Space>& dout, const ConstIndexVector<Space>& ids) {
  const int positions = static_cast<int>(ids.extent(0));
  const auto keys = work_view<Kokkos::View<std::int64_t*, Kokkos::LayoutRight, Space>>("ptk::embedding_keys", ids.extent(0));
  Kokkos::parallel_for(
      "ptk::embedding_backward_keys", Kokkos::RangePolicy<Space>(0, positions),
      KOKKOS_LAMBDA(const int n) { keys(n) = static_cast<std::int64_t>(ids(n)) * positions + n; });
  Kokkos::sort(keys);
  const auto order = work_view<IndexVector<Space>>("ptk::embedding_order", ids.extent(0));
  Kokkos::parallel_for(
      "ptk::embedding_backward_order", Kokkos::RangePolicy<Space>(0, positions),
      KOKKOS_LAMBDA(const int e) { order(e) = static_cast<int>(keys(e) % positions); });
  embedding_backward<Space>(dtable, dout, ids, order);
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_EMBEDDING_SPACE_INSTANCES(EXT, Space) \
  EXT template void embedding_forward<Space>(const Matrix<Space>& out, const ConstIndexVector<Space>& ids, const ConstMatrix<Space>& table); \
  EXT template void embedding_backward<Space>(const Matrix<Space>& dtable, const ConstMatrix<Space>& dout, const ConstIndexVector<Space>& ids, const ConstIndexVector<Space>& order); \
  EXT template void embedding_backward<Space>(const Matrix<Space>& dtable, const ConstMatrix<Space>& dout, const ConstIndexVector<Space>& ids);
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_EMBEDDING_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
