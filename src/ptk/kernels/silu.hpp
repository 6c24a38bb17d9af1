#pragma once
// silu_forward: out[n] = x * sigmoid(x) = x / (1 + exp(-x)).
// silu_backward: inp, dout [n] -> dinp[n] += dout · silu'(x), silu'(x) = σ(x) (1 + x (1 - σ(x))).
// swiglu_forward / swiglu_backward: silu(gate) · up and its backward, one pass each (below).
// E: the element type of every array (f32, bf16, f16): read exactly, computed in fp32, each output rounded once.
#include <Kokkos_Core.hpp>

#include <cfloat>

#include "ptk/core/compat.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/fast_exp.hpp"
#include "ptk/kernels/detail/row_walk.hpp"

namespace ptk::kernels {

KOKKOS_INLINE_FUNCTION float silu_value(float v) {
  // Past -88.72, e^-x overflows and silu is below 3e-37 in magnitude: -0 (x = -inf included,
  // where x / (1 + e) would be -inf). NaN fails the comparison and stays NaN through the division.
  // The select is on the numerator, before the division, so the division runs unmasked.
  const float a = -v;
  const float num = a > 88.7228394f ? -0.0f : v;
  return num / (1.0f + fast_exp_clamped(a));
}

template <class Space, class Tune = Tuning<Space>, class E = float>
void silu_forward(const VectorOf<Space, E>& out, const Same<ConstVectorOf<Space, E>>& inp) {
  const E* x = inp.data();
  elementwise<Space, typename Tune::rows>("ptk::silu_forward", inp.extent(0), out.data(),
                     KOKKOS_LAMBDA(const std::size_t i) { return silu_value(widen(x[i])); });
}

// silu'(v) = s + v s (1 - s), s = σ(v), formed as gelu_grad does (gelu.hpp) with a = -v: E = e^-|v|,
// D = 1 / (1 + E), s = D (v >= 0) or E·D (v < 0), s (1 - s) = E·D²; past |v| = 86.9 the second
// term (below ~1e-36) is v · 0, NaN for v = ±inf as in the float64 oracle.
KOKKOS_INLINE_FUNCTION float silu_grad(float v) {
  const float abs_v = v < 0.0f ? -v : v;
  const float e = fast_exp_nonpositive(-abs_v);
  const float d = 1.0f / (1.0f + e);
  const float s = v >= 0.0f ? d : e * d;
  const float t = abs_v > -fast_exp_nonpositive_floor ? v * 0.0f : v * (e * d * d);
  return s + t;
}

template <class Space, class Tune = Tuning<Space>, class E = float>
void silu_backward(const VectorOf<Space, E>& dinp, const Same<ConstVectorOf<Space, E>>& inp,
                   const Same<ConstVectorOf<Space, E>>& dout) {
  const E* x = inp.data();
  const E* dy = dout.data();
  E* dx = dinp.data();
  elementwise<Space, typename Tune::rows>("ptk::silu_backward", inp.extent(0), dx,
                     KOKKOS_LAMBDA(const std::size_t i) { return compat::mul_add(widen(dy[i]), silu_grad(widen(x[i])), widen(dx[i])); });
}

// swiglu_forward:  out[n] = silu(gate[n]) · up[n] (the gated MLP's hidden activations: silu and mul in one pass);
// swiglu_backward: dgate[n] += (dout · up) · silu'(gate), dup[n] += dout · silu(gate) (either may be empty: not
// wanted). fp32; each value the bits of silu_forward then mul_forward (and of their backward passes).
template <class Space, class Tune = Tuning<Space>>
void swiglu_forward(const Vector<Space>& out, const ConstVector<Space>& gate, const ConstVector<Space>& up) {
  const float* g = gate.data();
  const float* u = up.data();
  elementwise<Space, typename Tune::rows>("ptk::swiglu_forward", gate.extent(0), out.data(),
                                          KOKKOS_LAMBDA(const std::size_t i) { return silu_value(g[i]) * u[i]; });
}

// Blocks of Rows::elementwise_block elements, as elementwise's, with two outputs.
template <class Space, class Tune = Tuning<Space>>
void swiglu_backward(const Vector<Space>& dgate, const Vector<Space>& dup, const ConstVector<Space>& gate,
                     const ConstVector<Space>& up, const ConstVector<Space>& dout) {
  constexpr int B = Tune::rows::elementwise_block;
  const std::size_t n = gate.extent(0);
  const float *g = gate.data(), *u = up.data(), *dy = dout.data();
  float *dg = dgate.extent(0) ? dgate.data() : nullptr, *du = dup.extent(0) ? dup.data() : nullptr;
  Kokkos::parallel_for(
      "ptk::swiglu_backward", Kokkos::RangePolicy<Space>(0, (n + B - 1) / B), KOKKOS_LAMBDA(const std::size_t block) {
        const std::size_t begin = block * B, end = begin + B < n ? begin + B : n;
        if (dg)
          for (std::size_t i = begin; i < end; ++i) dg[i] = compat::mul_add(dy[i] * u[i], silu_grad(g[i]), dg[i]);
        if (du)
          for (std::size_t i = begin; i < end; ++i) du[i] = du[i] + dy[i] * silu_value(g[i]);
      });
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_SILU_ELEMENT_INSTANCE(EXT, Space, Tune, E) \
  EXT template void silu_forward<Space, Tune, E>(const VectorOf<Space, E>& out, const Same<ConstVectorOf<Space, E>>& inp); \
  EXT template void silu_backward<Space, Tune, E>(const VectorOf<Space, E>& dinp, const Same<ConstVectorOf<Space, E>>& inp, const Same<ConstVectorOf<Space, E>>& dout);
#define PTK_SILU_TUNED_INSTANCES(EXT, Space, Tune)           \
  EXT template void swiglu_forward<Space, Tune>(const Vector<Space>& out, const ConstVector<Space>& gate, const ConstVector<Space>& up); \
  EXT template void swiglu_backward<Space, Tune>(const Vector<Space>& dgate, const Vector<Space>& dup, const ConstVector<Space>& gate, const ConstVector<Space>& up, const ConstVector<Space>& dout); \
  PTK_SILU_ELEMENT_INSTANCE(EXT, Space, Tune, float)       \
  PTK_SILU_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::bf16) \
  PTK_SILU_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_SILU_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
