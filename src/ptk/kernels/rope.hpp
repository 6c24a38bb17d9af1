#pragma once
// rope_forward:  out[o,t,h,i] = x_i cos θ - x_{i+D/2} sin θ,  out[o,t,h,i+D/2] = x_i sin θ + x_{i+D/2} cos θ,
//                θ = t · base^(-2i/D), i < D/2, for x[O,T,H,D] (rotary embedding, half-split pairs as GPT-NeoX/Llama).
// rope_backward: dx += the same rotation by -θ applied to dout (a rotation's inverse is its transpose).
// E: the element type of x, out, dout and dx (f32, bf16, f16), read exactly, rotated in fp32, each output rounded once.
#include <Kokkos_Core.hpp>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

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
      const float x1 = widen(inp(o, t, h, i)), x2 = widen(inp(o, t, h, i + half));
      float y1 = x1 * c - x2 * s, y2 = x1 * s + x2 * c;
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

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_ROPE_ELEMENT_INSTANCE(EXT, Space, E) \
  EXT template void rope_forward<Space, E>(const Tensor4Of<Space, E>& out, const Same<ConstTensor4Of<Space, E>>& inp, const ConstMatrix<Space>& cos_table, const ConstMatrix<Space>& sin_table); \
  EXT template void rope_backward<Space, E>(const Tensor4Of<Space, E>& dinp, const Same<ConstTensor4Of<Space, E>>& dout, const ConstMatrix<Space>& cos_table, const ConstMatrix<Space>& sin_table);
#define PTK_ROPE_SPACE_INSTANCES(EXT, Space)           \
  PTK_ROPE_ELEMENT_INSTANCE(EXT, Space, float)       \
  PTK_ROPE_ELEMENT_INSTANCE(EXT, Space, ::ptk::bf16) \
  PTK_ROPE_ELEMENT_INSTANCE(EXT, Space, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_ROPE_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
