#pragma once
// embedding_forward:  out[N,C] = table[ids[n], :] for token ids[N] in [0, V) and table[V,C].
// embedding_backward: dtable[v,:] += Σ_{n : ids[n] = v} dout[n,:], each sum taken in increasing n.
// E: the element type of table, out, dtable and dout (f32, bf16, f16): the forward copies items exactly; the
// backward sums a row's terms in fp32 from its old value and rounds once.
#include <Kokkos_Core.hpp>
#include <Kokkos_Sort.hpp>

#include <cstdint>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

template <class Space, class E = float>
void embedding_forward(const MatrixOf<Space, E>& out, const ConstIndexVector<Space>& ids,
                       const Same<ConstMatrixOf<Space, E>>& table) {
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
// gathers its positions in increasing n, and one team owns one row (its threads own blocks of channels:
// Rows::elementwise_block, 32 on the host, vectorized; 1 on a GPU, coalesced), summed in fp32 registers from the old
// value and stored once. Results are bitwise identical run to run and across thread counts.
template <class Space, class E = float>
void embedding_backward(const MatrixOf<Space, E>& dtable, const Same<ConstMatrixOf<Space, E>>& dout,
                        const ConstIndexVector<Space>& ids, const ConstIndexVector<Space>& order) {
  constexpr int B = Tuning<Space>::rows::elementwise_block;
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
        const int begin = first(v), end = first(v + 1);
        if (begin == end) return;  // an id no position has: its row is neither read nor written
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (channels + B - 1) / B), [&](int b) {
          const int c0 = b * B, width = channels - c0 < B ? channels - c0 : B;
          float acc[B];
          for (int l = 0; l < B; ++l) acc[l] = l < width ? widen(dtable(v, c0 + l)) : 0.0f;
          for (int e = begin; e < end; ++e) {
            const E* row = &dout(order(e), c0);
            if (width == B)
              for (int l = 0; l < B; ++l) acc[l] += widen(row[l]);
            else
              for (int l = 0; l < width; ++l) acc[l] += widen(row[l]);
          }
          for (int l = 0; l < width; ++l) dtable(v, c0 + l) = round_to<E>(acc[l]);
        });
      });
}

// The same with the order sorted on the device (Kokkos::sort of the unique keys id·N + n), for ids
// whose order the caller does not have (the autograd layer sorts its ids on the host, where they are
// made: Kokkos::sort fences, and on CUDA goes through Thrust, which allocates per call).
template <class Space, class E = float>
void embedding_backward(const MatrixOf<Space, E>& dtable, const Same<ConstMatrixOf<Space, E>>& dout,
                        const ConstIndexVector<Space>& ids) {
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
  embedding_backward<Space, E>(dtable, dout, ids, order);
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_EMBEDDING_ELEMENT_INSTANCE(EXT, Space, E) \
  EXT template void embedding_forward<Space, E>(const MatrixOf<Space, E>& out, const ConstIndexVector<Space>& ids, const Same<ConstMatrixOf<Space, E>>& table); \
  EXT template void embedding_backward<Space, E>(const MatrixOf<Space, E>& dtable, const Same<ConstMatrixOf<Space, E>>& dout, const ConstIndexVector<Space>& ids, const ConstIndexVector<Space>& order); \
  EXT template void embedding_backward<Space, E>(const MatrixOf<Space, E>& dtable, const Same<ConstMatrixOf<Space, E>>& dout, const ConstIndexVector<Space>& ids);
#define PTK_EMBEDDING_SPACE_INSTANCES(EXT, Space)     \
  PTK_EMBEDDING_ELEMENT_INSTANCE(EXT, Space, float)       \
  PTK_EMBEDDING_ELEMENT_INSTANCE(EXT, Space, ::ptk::bf16) \
  PTK_EMBEDDING_ELEMENT_INSTANCE(EXT, Space, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_EMBEDDING_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
