#pragma once
// silu_forward: out[n] = x * sigmoid(x) = x / (1 + exp(-x)).
#include <Kokkos_Core.hpp>

#include <cfloat>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"

namespace ptk::kernels {

template <class Space>
void silu_forward(const Vector<Space>& out, const ConstVector<Space>& inp) {
  Kokkos::parallel_for(
      "ptk::silu_forward", Kokkos::RangePolicy<Space>(0, inp.extent(0)), KOKKOS_LAMBDA(const std::size_t i) {
        const float x = inp(i);
        const float e = compat::exp(-x);
        // e overflows only for x < -88, where silu is -0 (x / inf would be NaN at x = -inf).
        out(i) = e > FLT_MAX ? -0.0f : x / (1.0f + e);
      });
}

}  // namespace ptk::kernels
