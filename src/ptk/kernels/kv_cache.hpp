#pragma once
// kv_cache_append: cache[b, h, pos + t, d] = rows[b, t, offset + h·D + d] for t < Tn, rows [B, Tn, W] (a projection's
//   output: the heads' keys or values side by side from column `offset`), cache [B, H, Tmax, D].
#include <Kokkos_Core.hpp>

#include "ptk/core/tensor.hpp"

namespace ptk::kernels {

template <class Space>
void kv_cache_append(const Tensor4<Space>& cache, const ConstTensor3<Space>& rows, int offset, int pos) {
  const int H = static_cast<int>(cache.extent(1)), D = static_cast<int>(cache.extent(3));
  const long B = static_cast<long>(rows.extent(0)), Tn = static_cast<long>(rows.extent(1));
  Kokkos::parallel_for("ptk::kv_cache_append", Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>>({0, 0, 0}, {B, Tn, H * D}),
                       KOKKOS_LAMBDA(const int b, const int t, const int c) {
                         cache(b, c / D, pos + t, c % D) = rows(b, t, offset + c);
                       });
}

}  // namespace ptk::kernels
