#pragma once
// split_heads: heads[b,h,t,d] = rows[b,t, offset + h·D + d]   for rows [B,T,W], heads [B,H,T,D], offset + H·D <= W;
// merge_heads: rows[b,t, offset + h·D + d] (+)= heads[b,h,t,d]  (the inverse, and the backward of split_heads).
#include <Kokkos_Core.hpp>

#include "ptk/core/tensor.hpp"

namespace ptk::kernels {

// One work item per (b, h, t) moves a contiguous run of D floats; no two items touch the same element.
template <class Space, bool kToHeads, bool kAccumulate>
struct HeadsCopy {
  Tensor3<Space> rows;
  Tensor4<Space> heads;
  int offset;

  KOKKOS_INLINE_FUNCTION void operator()(const int b, const int h, const int t) const {
    const int D = static_cast<int>(heads.extent(3));
    const int base = offset + h * D;
    for (int d = 0; d < D; ++d) {
      if (kToHeads) {
        if (kAccumulate) heads(b, h, t, d) += rows(b, t, base + d);
        else heads(b, h, t, d) = rows(b, t, base + d);
      } else {
        if (kAccumulate) rows(b, t, base + d) += heads(b, h, t, d);
        else rows(b, t, base + d) = heads(b, h, t, d);
      }
    }
  }
};

template <class Space, bool kToHeads, bool kAccumulate>
void heads_copy(const char* label, const Tensor3<Space>& rows, const Tensor4<Space>& heads, int offset) {
  const auto policy = Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>>(
      {0, 0, 0}, {static_cast<long>(heads.extent(0)), static_cast<long>(heads.extent(1)), static_cast<long>(heads.extent(2))});
  Kokkos::parallel_for(label, policy, HeadsCopy<Space, kToHeads, kAccumulate>{rows, heads, offset});
}

template <class Space>
void split_heads(const Tensor4<Space>& heads, const Tensor3<Space>& rows, int offset) {
  heads_copy<Space, true, false>("ptk::split_heads", rows, heads, offset);
}

template <class Space>
void merge_heads(const Tensor3<Space>& rows, const Tensor4<Space>& heads, int offset, bool accumulate) {
  if (accumulate) heads_copy<Space, false, true>("ptk::merge_heads", rows, heads, offset);
  else heads_copy<Space, false, false>("ptk::merge_heads", rows, heads, offset);
}

}  // namespace ptk::kernels
