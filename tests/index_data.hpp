#pragma once
// Integer index data for the parity tests (token ids, class targets): random ids and device Views of them.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ptk/core/tensor.hpp"

namespace ptk::test {

// n ids uniform in [0, limit), deterministic per seed string.
inline std::vector<int> random_ids(std::int64_t n, int limit, const std::string& seed) {
  std::mt19937 gen(static_cast<std::uint32_t>(std::hash<std::string>{}(seed)));
  std::uniform_int_distribution<int> dist(0, limit - 1);
  std::vector<int> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

template <class Space>
IndexVector<Space> index_view(const std::vector<int>& host) {
  IndexVector<Space> v("ptk::test_ids", host.size());
  Kokkos::deep_copy(v, Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                           host.data(), host.size()));
  return v;
}

}  // namespace ptk::test
