#pragma once
// Checks on integer index Views (token ids, class targets) shared by embedding and cross_entropy.
#include <Kokkos_Core.hpp>

#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ptk/core/error.hpp"
#include "ptk/core/tensor.hpp"

namespace ptk::ops {

// Ops take ids as a const int View in a non-deduced context: Space comes from the tensor arguments, and an
// IndexVector<Space> (non-const) converts.
template <class Space>
using Ids = typename std::enable_if<true, ConstIndexVector<Space>>::type;

// Whether an op still has to check its ids' range (a reduction read back from the device: a
// synchronization), or its caller has checked them already (the autograd layer checks its host copy).
enum class IdsChecked { no, yes };

// The shape of per-row values (losses, statistics): all dims but the last; [1] for a rank-1 input.
inline Shape leading_shape(const Shape& x) {
  Shape rows(x.begin(), x.end() - 1);
  if (rows.empty()) rows.push_back(1);
  return rows;
}

// The first position n whose index is outside [0, limit) and not `allowed` (pass limit for none), or -1.
template <class Space>
std::int64_t first_bad_index(const ConstIndexVector<Space>& ids, int limit, int allowed) {
  const int n = static_cast<int>(ids.extent(0));
  int first = INT_MAX;
  Kokkos::parallel_reduce(
      "ptk::check_ids", Kokkos::RangePolicy<Space>(0, n),
      KOKKOS_LAMBDA(const int i, int& m) {
        const int id = ids(i);
        if ((id < 0 || id >= limit) && id != allowed && i < m) m = i;
      },
      Kokkos::Min<int>(first));
  return first == INT_MAX ? -1 : first;
}

template <class Space>
int index_at(const ConstIndexVector<Space>& ids, std::int64_t n) {
  int value = 0;
  Kokkos::deep_copy(Kokkos::View<int, Kokkos::HostSpace>(&value), Kokkos::subview(ids, static_cast<std::size_t>(n)));
  return value;
}

}  // namespace ptk::ops
