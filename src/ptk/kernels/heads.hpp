#pragma once
// Heads: attention's operands as [B, H, T, D] views over the tensors that hold them (heads_of: a contiguous tensor,
//   or the H heads of D columns from column `offset` of rows [B, T, W], read and written in place), and the loops
//   over them that the attention kernels share (head_row, for_row_runs).
// split_kv: a layer's new keys and values into a KV cache [B, Hkv, Tmax, D] at positions t0 … t0 + T − 1,
//   k_heads[b, h, t0 + t, d] = k_rows[b, t, k_offset + h·D + d] (and v alike), rounded to the cache's type E (f32,
//   bf16, f16) to nearest even.
#include <Kokkos_Core.hpp>

#include "ptk/core/dtype.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/load.hpp"
#include "ptk/kernels/detail/memory_hints.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

// [B, H, T, D] heads of element type E with any strides but a contiguous last dimension: a contiguous tensor
// (heads_of(t)), the heads of rows [B, T, W] in place (heads_of(rows, ...)), or a KV cache's first positions (a
// subview). The attention kernels read and write their operands through these, so no split or merge copies them.
template <class Space, class E = float>
using HeadsOf = Kokkos::View<E****, Kokkos::LayoutStride, Space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class Space, class E = float>
using ConstHeadsOf = HeadsOf<Space, const E>;
template <class Space>
using Heads = HeadsOf<Space, float>;
template <class Space>
using ConstHeads = ConstHeadsOf<Space, float>;

// The H heads of D columns from column `offset` of rows [B, T, W], as [B, H, T, D] over the rows' storage.
template <class Space, class E>
HeadsOf<Space, E> heads_of(E* rows, int B, int T, int W, int offset, int H, int D) {
  using std::size_t;
  return HeadsOf<Space, E>(rows + offset, Kokkos::LayoutStride(size_t(B), size_t(T) * W, size_t(H), size_t(D),
                                                               size_t(T), size_t(W), size_t(D), 1));
}

// A contiguous [B, H, T, D] tensor as heads.
template <class Space, class E>
HeadsOf<Space, E> heads_of(const Kokkos::View<E****, Kokkos::LayoutRight, Space>& t) {
  const std::size_t B = t.extent(0), H = t.extent(1), T = t.extent(2), D = t.extent(3);
  return HeadsOf<Space, E>(t.data(), Kokkos::LayoutStride(B, H * T * D, H, T * D, T, D, D, 1));
}

// Row t of flat head `head` = b·H + h (the attention kernels' numbering): D contiguous elements.
template <class View>
KOKKOS_INLINE_FUNCTION typename View::pointer_type head_row(const View& x, int head, int t) {
  const int H = static_cast<int>(x.extent(1));
  return &x(head / H, head % H, t, 0);
}

// f(i, d0, d1) over elements [d0, d1) of row i, for every element of `rows` rows of D (a tile's writes into heads):
// on the host a row a thread (f's loop over d vectorizes, and finds its row once), on a GPU an element a thread
// (neighbouring threads, neighbouring addresses).
template <class Tune, class Team, class F>
KOKKOS_INLINE_FUNCTION void for_row_runs(const Team& team, int rows, int D, const F& f) {
  if constexpr (Tune::host) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](int i) { f(i, 0, D); });
  } else {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows * D), [&](int e) { f(e / D, e % D, e % D + 1); });
  }
}

// dst[d · ldd + j] = scale · (row t0 + j of `head`)[d] for j < count, d < D, zeros for j in [count, cols) and d in
// [D, Dp): a tile of a head's rows staged transposed into scratch (the attention kernels' kᵀ and qᵀ), scaled as
// widen(x) · scale, widened (f32, bf16, f16 in; f32 out). On the host whole 16 x 16 blocks go through
// load_transposed_16 (vector loads, shuffles in registers, whole-line stores: a value at a time, each store to
// another line, took a third of the dK/dV kernel's time), a GPU an element a time, a row a thread.
template <class Tune, class Team, class View>
KOKKOS_INLINE_FUNCTION void stage_transposed(const Team& team, const View& x, int head, int t0, int count, int cols,
                                             int D, int Dp, float scale, float* dst, int ldd) {
  const auto value = [&](int j, int d) {
    return j < count && d < D ? widen(head_row(x, head, t0 + j)[d]) * scale : 0.0f;
  };
  if constexpr (Tune::host) {
    static_assert(Tune::attention::team_size == 1, "the host stages a tile on the team's one thread");
    const int full_j = count / 16 * 16, full_d = D / 16 * 16;
    const std::size_t ld = x.stride(2);
    for (int j0 = 0; j0 < full_j; j0 += 16)
      for (int d0 = 0; d0 < full_d; d0 += 16) {
        float* lo = dst + static_cast<std::size_t>(d0) * ldd + j0;
        load_transposed_16(head_row(x, head, t0 + j0) + d0, ld, lo, lo + 8, ldd);
      }
    for (int d = 0; d < Dp; ++d) {
      float* row = dst + static_cast<std::size_t>(d) * ldd;
      const int j_from = d < full_d ? full_j : 0;
      if (scale != 1.0f)
        for (int j = 0; j < j_from; ++j) row[j] *= scale;
      for (int j = j_from; j < cols; ++j) row[j] = value(j, d);
    }
    (void)team;
  } else {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](int j) {
      for (int d = 0; d < Dp; ++d) dst[static_cast<std::size_t>(d) * ldd + j] = value(j, d);
    });
  }
}

// An item per (b, head, t) moves the key's run and the value's.
template <class Space, class E>
struct KvSplit {
  Tensor3<Space> k_rows, v_rows;
  Tensor4Of<Space, E> k_heads, v_heads;
  int k_offset, v_offset, t0;

  KOKKOS_INLINE_FUNCTION void operator()(const int b, const int h, const int t) const {
    const int D = static_cast<int>(k_heads.extent(3));
    store_rounded_run(&k_heads(b, h, t0 + t, 0), &k_rows(b, t, k_offset + h * D), D);
    store_rounded_run(&v_heads(b, h, t0 + t, 0), &v_rows(b, t, v_offset + h * D), D);
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

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_SPLIT_KV_INSTANCE(EXT, Space, E) \
  EXT template void split_kv<Space, E>(const Tensor4Of<Space, E>& k_heads, const Tensor4Of<Space, E>& v_heads, const Tensor3<Space>& k_rows, int k_offset, const Tensor3<Space>& v_rows, int v_offset, int t0);
#define PTK_HEADS_SPACE_INSTANCES(EXT, Space) \
  PTK_SPLIT_KV_INSTANCE(EXT, Space, float) \
  PTK_SPLIT_KV_INSTANCE(EXT, Space, ::ptk::bf16) \
  PTK_SPLIT_KV_INSTANCE(EXT, Space, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_HEADS_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
