#pragma once
// split_heads: heads[b, h, t0 + t, d] = rows[b, t, offset + h·D + d]   for rows [B,T,W], heads [B,H,T',D], t < T,
//              offset + H·D <= W, t0 + T <= T' (t0 > 0: new tokens' keys into a KV cache at their positions);
//              heads of a one-value type E (f32, bf16, f16: a 16-bit KV cache) take the rows' values rounded to E;
// merge_heads: rows[b, t, offset + h·D + d] (+)= heads[b, h, t, d]      (its inverse with t0 = 0; the backward adds);
// split_kv:    split_heads of a layer's keys and of its values in one launch (a KV cache's append).
#include <Kokkos_Core.hpp>

#include "ptk/core/dtype.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

// One work item per (b, head, t) moves a contiguous run of D floats: no two items touch the same element. Only a
// merge accumulates (kAccumulate: the backward adds into a gradient); a split always overwrites.
template <class Space, bool kToHeads, bool kAccumulate, class E = float>
struct HeadsCopy {
  Tensor3<Space> rows;
  Tensor4Of<Space, E> heads;
  int offset, t0;

  KOKKOS_INLINE_FUNCTION void operator()(const int b, const int h, const int t) const {
    const int D = static_cast<int>(heads.extent(3)), base = offset + h * D;
    for (int d = 0; d < D; ++d) {
      if constexpr (kToHeads) heads(b, h, t0 + t, d) = round_to<E>(rows(b, t, base + d));
      else if constexpr (kAccumulate) rows(b, t, base + d) += heads(b, h, t, d);
      else rows(b, t, base + d) = heads(b, h, t, d);
    }
  }
};

template <class Space, bool kToHeads, bool kAccumulate, class E = float>
void heads_copy(const char* label, const Tensor3<Space>& rows, const Tensor4Of<Space, E>& heads, int offset, int t0) {
  const auto policy = Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>>(
      {0, 0, 0}, {static_cast<long>(heads.extent(0)), static_cast<long>(heads.extent(1)), static_cast<long>(rows.extent(1))});
  Kokkos::parallel_for(label, policy, HeadsCopy<Space, kToHeads, kAccumulate, E>{rows, heads, offset, t0});
}

template <class Space, class E = float>
void split_heads(const Tensor4Of<Space, E>& heads, const Tensor3<Space>& rows, int offset, int t0 = 0) {
  heads_copy<Space, true, false, E>("ptk::split_heads", rows, heads, offset, t0);
}

// An item per (b, head, t) moves the key's run and the value's.
template <class Space, class E>
struct KvSplit {
  Tensor3<Space> k_rows, v_rows;
  Tensor4Of<Space, E> k_heads, v_heads;
  int k_offset, v_offset, t0;

  KOKKOS_INLINE_FUNCTION void operator()(const int b, const int h, const int t) const {
    const int D = static_cast<int>(k_heads.extent(3));
    for (int d = 0; d < D; ++d) k_heads(b, h, t0 + t, d) = round_to<E>(k_rows(b, t, k_offset + h * D + d));
    for (int d = 0; d < D; ++d) v_heads(b, h, t0 + t, d) = round_to<E>(v_rows(b, t, v_offset + h * D + d));
  }
};

// k_heads and v_heads of one shape (a cache's pair); the rows [B, T, ·] with the heads at their offsets.
template <class Space, class E = float>
void split_kv(const Tensor4Of<Space, E>& k_heads, const Tensor4Of<Space, E>& v_heads, const Tensor3<Space>& k_rows,
              int k_offset, const Tensor3<Space>& v_rows, int v_offset, int t0) {
  const auto policy = Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>>(
      {0, 0, 0}, {static_cast<long>(k_heads.extent(0)), static_cast<long>(k_heads.extent(1)), static_cast<long>(k_rows.extent(1))});
  Kokkos::parallel_for("ptk::split_kv", policy, KvSplit<Space, E>{k_rows, v_rows, k_heads, v_heads, k_offset, v_offset, t0});
}

template <class Space>
void merge_heads(const Tensor3<Space>& rows, const Tensor4<Space>& heads, int offset, bool accumulate) {
  if (accumulate) heads_copy<Space, false, true>("ptk::merge_heads", rows, heads, offset, 0);
  else heads_copy<Space, false, false>("ptk::merge_heads", rows, heads, offset, 0);
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_SPLIT_KV_INSTANCE(EXT, Space, E) \
  EXT template void split_kv<Space, E>(const Tensor4Of<Space, E>& k_heads, const Tensor4Of<Space, E>& v_heads, const Tensor3<Space>& k_rows, int k_offset, const Tensor3<Space>& v_rows, int v_offset, int t0);
#define PTK_HEADS_SPACE_INSTANCES(EXT, Space) \
  EXT template void split_heads<Space, float>(const Tensor4<Space>& heads, const Tensor3<Space>& rows, int offset, int t0); \
  EXT template void split_heads<Space, ::ptk::bf16>(const Tensor4Of<Space, ::ptk::bf16>& heads, const Tensor3<Space>& rows, int offset, int t0); \
  EXT template void split_heads<Space, ::ptk::f16>(const Tensor4Of<Space, ::ptk::f16>& heads, const Tensor3<Space>& rows, int offset, int t0); \
  EXT template void merge_heads<Space>(const Tensor3<Space>& rows, const Tensor4<Space>& heads, int offset, bool accumulate); \
  PTK_SPLIT_KV_INSTANCE(EXT, Space, float) \
  PTK_SPLIT_KV_INSTANCE(EXT, Space, ::ptk::bf16) \
  PTK_SPLIT_KV_INSTANCE(EXT, Space, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_HEADS_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
