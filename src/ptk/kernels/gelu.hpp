#pragma once
// gelu_forward: out[n] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the tanh form of GPT-2,
// evaluated as x / (1 + exp(-2u)) (the same function) so that large negative x does not cancel.
#include <Kokkos_Core.hpp>

#include <cfloat>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"

namespace ptk::kernels {

template <class Space>
void gelu_forward(const Vector<Space>& out, const ConstVector<Space>& inp) {
  Kokkos::parallel_for(
      "ptk::gelu_forward", Kokkos::RangePolicy<Space>(0, inp.extent(0)), KOKKOS_LAMBDA(const std::size_t i) {
        constexpr float sqrt_2_over_pi = 0.7978845608028654f;
        const float x = inp(i);
        const float u = sqrt_2_over_pi * (x + 0.044715f * x * x * x);
        const float e = compat::exp(-2.0f * u);
        // e overflows only for very negative x, where gelu is -0 (x / inf would be NaN at x = -inf).
        out(i) = e > FLT_MAX ? -0.0f : x / (1.0f + e);
      });
}

}  // namespace ptk::kernels
