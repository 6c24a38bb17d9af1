#pragma once
// split_heads: heads[b,h,t,d] = rows[b,t, offset + (h/G)·D + d]   for rows [B,T,W], heads [B,H,T,D], G = group (H % G == 0),
//              offset + (H/G)·D <= W (G > 1: each of H/G row heads feeds G consecutive heads, grouped-query attention);
// merge_heads: rows[b,t, offset + j·D + d] (+)= Σ_{g<G} heads[b, j·G + g, t, d]  (its backward; with G = 1 the inverse).
#include <Kokkos_Core.hpp>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

// One work item per (b, head, t) moves a contiguous run of D floats (split: head of heads; merge: head of rows,
// summing its G heads in order): no two items touch the same element, the sums are deterministic. Only a merge
// accumulates (kAccumulate: the backward adds into a gradient); a split always overwrites.
template <class Space, bool kToHeads, bool kAccumulate>
struct HeadsCopy {
  Tensor3<Space> rows;
  Tensor4<Space> heads;
  int offset, group;

  KOKKOS_INLINE_FUNCTION void operator()(const int b, const int h, const int t) const {
    const int D = static_cast<int>(heads.extent(3));
    if (kToHeads) {
      const int base = offset + (h / group) * D;
      for (int d = 0; d < D; ++d) heads(b, h, t, d) = rows(b, t, base + d);
    } else {
      const int base = offset + h * D, first = h * group;
      for (int d = 0; d < D; ++d) {
        float sum = heads(b, first, t, d);
        for (int g = 1; g < group; ++g) sum += heads(b, first + g, t, d);
        if (kAccumulate) rows(b, t, base + d) += sum;
        else rows(b, t, base + d) = sum;
      }
    }
  }
};

template <class Space, bool kToHeads, bool kAccumulate>
void heads_copy(const char* label, const Tensor3<Space>& rows, const Tensor4<Space>& heads, int offset, int group) {
  const long items = static_cast<long>(heads.extent(1)) / (kToHeads ? 1 : group);
  const auto policy = Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>>(
      {0, 0, 0}, {static_cast<long>(heads.extent(0)), items, static_cast<long>(heads.extent(2))});
  Kokkos::parallel_for(label, policy, HeadsCopy<Space, kToHeads, kAccumulate>{rows, heads, offset, group});
}

template <class Space>
void split_heads(const Tensor4<Space>& heads, const Tensor3<Space>& rows, int offset, int group = 1) {
  heads_copy<Space, true, false>("ptk::split_heads", rows, heads, offset, group);
}

template <class Space>
void merge_heads(const Tensor3<Space>& rows, const Tensor4<Space>& heads, int offset, bool accumulate, int group = 1) {
  if (accumulate) heads_copy<Space, false, true>("ptk::merge_heads", rows, heads, offset, group);
  else heads_copy<Space, false, false>("ptk::merge_heads", rows, heads, offset, group);
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_HEADS_SPACE_INSTANCES(EXT, Space) \
  EXT template void split_heads<Space>(const Tensor4<Space>& heads, const Tensor3<Space>& rows, int offset, int group); \
  EXT template void merge_heads<Space>(const Tensor3<Space>& rows, const Tensor4<Space>& heads, int offset, bool accumulate, int group);
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_HEADS_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
