#pragma once
// gelu_forward: out[n] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the tanh form of GPT-2,
// evaluated as x / (1 + exp(-2u)) (the same function) so that large negative x does not cancel.
// gelu_backward: inp, dout [n] -> dinp[n] += dout · gelu'(x) (accumulate; else dinp = dout · gelu'(x), not read),
// gelu'(x) = s + x · 2u' · s (1 - s),
// s = σ(2u), u = sqrt(2/pi) (x + 0.044715 x^3), u' = sqrt(2/pi) (1 + 3 · 0.044715 x^2).
// E: the element type of every array (f32, bf16, f16): read exactly, computed in fp32, each output rounded once.
#include <Kokkos_Core.hpp>

#include <cfloat>

#include "ptk/core/compat.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/fast_exp.hpp"
#include "ptk/kernels/detail/row_walk.hpp"

namespace ptk::kernels {

KOKKOS_INLINE_FUNCTION float gelu_value(float v) {
  constexpr float sqrt_2_over_pi = 0.7978845608028654f;
  const float a = -2.0f * sqrt_2_over_pi * compat::mul_add(0.044715f * v * v, v, v);
  // e^a overflows only for very negative x, where gelu is -0 (x = -inf included, where the
  // quotient would be -inf). NaN fails the comparison and stays NaN through the division. The
  // select is on the numerator, before the division, so the division runs unmasked.
  const float num = a > 88.7228394f ? -0.0f : v;
  return num / (1.0f + fast_exp_clamped(a));
}

template <class Space, class Tune = Tuning<Space>, class E = float>
void gelu_forward(const VectorOf<Space, E>& out, const Same<ConstVectorOf<Space, E>>& inp) {
  const E* x = inp.data();
  elementwise<Space, typename Tune::rows>("ptk::gelu_forward", inp.extent(0), out.data(),
                     KOKKOS_LAMBDA(const std::size_t i) { return gelu_value(widen(x[i])); });
}

// gelu'(v). With a = -2u (the forward's exp argument), E = e^-|a| <= 1 and D = 1 / (1 + E):
// s = σ(-a) is D for a <= 0 and E·D for a > 0, and s (1 - s) = E·D² either way, so nothing
// cancels and exp never overflows. Where |a| > 86.9, E is flushed to 0 (fast_exp_nonpositive) and
// the second term, below ~1e-35, is dropped as v · 0: that keeps v · 2u' (which overflows for huge
// v) out of the product, and gives NaN for v = ±inf as the float64 oracle (and PyTorch) do.
KOKKOS_INLINE_FUNCTION float gelu_grad(float v) {
  constexpr float two_c = 2.0f * 0.7978845608028654f;
  const float v2 = v * v;
  const float a = -two_c * compat::mul_add(0.044715f * v2, v, v);
  const float da = two_c * compat::mul_add(3.0f * 0.044715f, v2, 1.0f);  // -da/dv
  const float abs_a = a < 0.0f ? -a : a;
  const float e = fast_exp_nonpositive(-abs_a);
  const float d = 1.0f / (1.0f + e);
  const float s = a <= 0.0f ? d : e * d;
  const float t = abs_a > -fast_exp_nonpositive_floor ? v * 0.0f : v * da * (e * d * d);
  return s + t;
}

template <class Space, class Tune = Tuning<Space>, class E = float>
void gelu_backward(const VectorOf<Space, E>& dinp, const Same<ConstVectorOf<Space, E>>& inp,
                   const Same<ConstVectorOf<Space, E>>& dout, bool accumulate = true) {
  const E* x = inp.data();
  const E* dy = dout.data();
  E* dx = dinp.data();
  // Two loops, not a select on `accumulate` inside one: g++ left that loop scalar (10x slower).
  if (accumulate) {
    elementwise<Space, typename Tune::rows>(
        "ptk::gelu_backward", inp.extent(0), dx,
        KOKKOS_LAMBDA(const std::size_t i) {
          return compat::mul_add(widen(dy[i]), gelu_grad(widen(x[i])), widen(dx[i]));
        });
  } else {
    elementwise<Space, typename Tune::rows>(
        "ptk::gelu_backward", inp.extent(0), dx,
        KOKKOS_LAMBDA(const std::size_t i) { return compat::mul_add(widen(dy[i]), gelu_grad(widen(x[i])), 0.0f); });
  }
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_GELU_ELEMENT_INSTANCE(EXT, Space, Tune, E) \
  EXT template void gelu_forward<Space, Tune, E>(const VectorOf<Space, E>& out, const Same<ConstVectorOf<Space, E>>& inp); \
  EXT template void gelu_backward<Space, Tune, E>(const VectorOf<Space, E>& dinp, const Same<ConstVectorOf<Space, E>>& inp, const Same<ConstVectorOf<Space, E>>& dout, bool accumulate);
#define PTK_GELU_TUNED_INSTANCES(EXT, Space, Tune)           \
  PTK_GELU_ELEMENT_INSTANCE(EXT, Space, Tune, float)       \
  PTK_GELU_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::bf16) \
  PTK_GELU_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_GELU_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
