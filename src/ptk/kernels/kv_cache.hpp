#pragma once
// kv_cache_append: k_cache[b, h, pos + t, d] = k_rows[b, t, k_offset + h·D + d] and the same for v, for t < Tn: the
//   new tokens' keys and values (a projection's outputs, heads side by side) into caches [B, H, Tmax, D].
#include <Kokkos_Core.hpp>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

// One launch for both caches: a decode step's work here is tiny, its launch is not.
template <class Space>
void kv_cache_append(const Tensor4<Space>& k_cache, const Tensor4<Space>& v_cache, const ConstTensor3<Space>& k_rows,
                     int k_offset, const ConstTensor3<Space>& v_rows, int v_offset, int pos) {
  const int H = static_cast<int>(k_cache.extent(1)), D = static_cast<int>(k_cache.extent(3));
  const long B = static_cast<long>(k_rows.extent(0)), Tn = static_cast<long>(k_rows.extent(1));
  Kokkos::parallel_for("ptk::kv_cache_append",
                       Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>>({0, 0, 0}, {B, Tn, 2L * H * D}),
                       KOKKOS_LAMBDA(const int b, const int t, const int c) {
                         if (c < H * D) k_cache(b, c / D, pos + t, c % D) = k_rows(b, t, k_offset + c);
                         else v_cache(b, (c - H * D) / D, pos + t, c % D) = v_rows(b, t, v_offset + c - H * D);
                       });
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_KV_CACHE_SPACE_INSTANCES(EXT, Space) \
  EXT template void kv_cache_append<Space>(const Tensor4<Space>& k_cache, const Tensor4<Space>& v_cache, const ConstTensor3<Space>& k_rows, int k_offset, const ConstTensor3<Space>& v_rows, int v_offset, int pos);
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_KV_CACHE_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
