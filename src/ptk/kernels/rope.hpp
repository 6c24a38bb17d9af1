#pragma once
// rope_forward:  out[o,t,h,i] = x_i cos θ - x_{i+D/2} sin θ,  out[o,t,h,i+D/2] = x_i sin θ + x_{i+D/2} cos θ,
//                θ = t · base^(-2i/D), i < D/2, for x[O,T,H,D] (rotary embedding, half-split pairs as GPT-NeoX/Llama).
// rope_backward: dx += the same rotation by -θ applied to dout (a rotation's inverse is its transpose).
// E: the element type of x, out, dout and dx (f32, bf16, f16), read exactly, rotated in fp32, each output rounded once.
#include <Kokkos_Core.hpp>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/memory_hints.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

// The pair (x1, x2) rotated by the angle whose cosine and sine are c and s: one expression for every kernel here, so
// that a rotation fused into another pass gives rope_forward's bits.
KOKKOS_FORCEINLINE_FUNCTION void rotate(float x1, float x2, float c, float s, float& y1, float& y2) {
  y1 = x1 * c - x2 * s;
  y2 = x1 * s + x2 * c;
}

// The view [O, T, H, D] covers both layouts: [B,H,T,D] is O = B·H, H = 1; [B,T,H,D] is O = B.
// cos_table and sin_table are [T, D/2], computed once in double by the op: fp32 θ = t·f would
// carry an error of u·θ (5e-4 rad at t = 8192) into every rotation.
template <class Space, bool kBackward, class E = float>
struct Rope {
  Tensor4Of<Space, E> out;
  ConstTensor4Of<Space, E> inp;
  ConstMatrix<Space> cos_table, sin_table;

  KOKKOS_INLINE_FUNCTION void operator()(const int o, const int t, const int h) const {
    const int half = static_cast<int>(cos_table.extent(1));
    for (int i = 0; i < half; ++i) {
      const float c = cos_table(t, i), s = kBackward ? -sin_table(t, i) : sin_table(t, i);
      float y1, y2;
      rotate(widen(inp(o, t, h, i)), widen(inp(o, t, h, i + half)), c, s, y1, y2);
      if (kBackward) {
        y1 = widen(out(o, t, h, i)) + y1;
        y2 = widen(out(o, t, h, i + half)) + y2;
      }
      out(o, t, h, i) = round_to<E>(y1);
      out(o, t, h, i + half) = round_to<E>(y2);
    }
  }
};

template <class Space, bool kBackward, class E>
void rope_launch(const char* label, const Tensor4Of<Space, E>& out, const ConstTensor4Of<Space, E>& inp,
                 const ConstMatrix<Space>& cos_table, const ConstMatrix<Space>& sin_table) {
  const auto policy = Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>>(
      {0, 0, 0}, {static_cast<long>(inp.extent(0)), static_cast<long>(inp.extent(1)), static_cast<long>(inp.extent(2))});
  Kokkos::parallel_for(label, policy, Rope<Space, kBackward, E>{out, inp, cos_table, sin_table});
}

template <class Space, class E = float>
void rope_forward(const Tensor4Of<Space, E>& out, const Same<ConstTensor4Of<Space, E>>& inp,
                  const ConstMatrix<Space>& cos_table, const ConstMatrix<Space>& sin_table) {
  rope_launch<Space, false, E>("ptk::rope_forward", out, inp, cos_table, sin_table);
}

template <class Space, class E = float>
void rope_backward(const Tensor4Of<Space, E>& dinp, const Same<ConstTensor4Of<Space, E>>& dout,
                   const ConstMatrix<Space>& cos_table, const ConstMatrix<Space>& sin_table) {
  rope_launch<Space, true, E>("ptk::rope_backward", dinp, dout, cos_table, sin_table);
}

// rope_kv_append: a cached layer's new tokens in one pass, rather than rope_forward twice and split_kv. For q rows
// and k rows [B, T, W] (heads of D at their offsets, fp32) and the caches [B, Hkv, Tmax, D] of E: every q head and k
// head rotated in place at positions t0 + t (rope_forward's bits; cos_table and sin_table: those positions' rows),
// each rotated k head and each v head then written into the caches at t0 + t, rounded to E (split_kv's bits).
// An item per (b, slot, t): slots 0 .. Hq − 1 the query heads, Hq .. Hq + Hkv − 1 a kv head's key and value.
template <class Space, class E>
struct RopeKvAppend {
  Tensor3<Space> q_rows, k_rows;
  ConstTensor3<Space> v_rows;
  Tensor4Of<Space, E> k_cache, v_cache;
  ConstMatrix<Space> cos_table, sin_table;
  int q_offset, k_offset, v_offset, q_heads, t0;

  KOKKOS_INLINE_FUNCTION void operator()(const int b, const int slot, const int t) const {
    const int half = static_cast<int>(cos_table.extent(1)), D = 2 * half;
    const bool query = slot < q_heads;
    const int h = query ? slot : slot - q_heads;
    float* x = query ? &q_rows(b, t, q_offset + h * D) : &k_rows(b, t, k_offset + h * D);
    for (int i = 0; i < half; ++i) {
      float y1, y2;
      rotate(x[i], x[i + half], cos_table(t, i), sin_table(t, i), y1, y2);
      x[i] = y1;
      x[i + half] = y2;
    }
    if (!query) {
      store_rounded_run(&k_cache(b, h, t0 + t, 0), x, D);
      store_rounded_run(&v_cache(b, h, t0 + t, 0), &v_rows(b, t, v_offset + h * D), D);
    }
  }
};

template <class Space, class E = float>
void rope_kv_append(const Tensor3<Space>& q_rows, int q_offset, int q_heads, const Tensor3<Space>& k_rows, int k_offset,
                    const ConstTensor3<Space>& v_rows, int v_offset, const Tensor4Of<Space, E>& k_cache,
                    const Tensor4Of<Space, E>& v_cache, int t0, const ConstMatrix<Space>& cos_table,
                    const ConstMatrix<Space>& sin_table) {
  const auto policy = Kokkos::MDRangePolicy<Space, Kokkos::Rank<3>>(
      {0, 0, 0}, {static_cast<long>(q_rows.extent(0)), static_cast<long>(q_heads + k_cache.extent(1)),
                  static_cast<long>(q_rows.extent(1))});
  Kokkos::parallel_for("ptk::rope_kv_append", policy,
                       RopeKvAppend<Space, E>{q_rows, k_rows, v_rows, k_cache, v_cache, cos_table, sin_table, q_offset,
                                              k_offset, v_offset, q_heads, t0});
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_ROPE_ELEMENT_INSTANCE(EXT, Space, E) \
  EXT template void rope_forward<Space, E>(const Tensor4Of<Space, E>& out, const Same<ConstTensor4Of<Space, E>>& inp, const ConstMatrix<Space>& cos_table, const ConstMatrix<Space>& sin_table); \
  EXT template void rope_backward<Space, E>(const Tensor4Of<Space, E>& dinp, const Same<ConstTensor4Of<Space, E>>& dout, const ConstMatrix<Space>& cos_table, const ConstMatrix<Space>& sin_table); \
  EXT template void rope_kv_append<Space, E>(const Tensor3<Space>& q_rows, int q_offset, int q_heads, const Tensor3<Space>& k_rows, int k_offset, const ConstTensor3<Space>& v_rows, int v_offset, const Tensor4Of<Space, E>& k_cache, const Tensor4Of<Space, E>& v_cache, int t0, const ConstMatrix<Space>& cos_table, const ConstMatrix<Space>& sin_table);
#define PTK_ROPE_SPACE_INSTANCES(EXT, Space)           \
  PTK_ROPE_ELEMENT_INSTANCE(EXT, Space, float)       \
  PTK_ROPE_ELEMENT_INSTANCE(EXT, Space, ::ptk::bf16) \
  PTK_ROPE_ELEMENT_INSTANCE(EXT, Space, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_ROPE_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
