#pragma once
// silu_forward: out[n] = x * sigmoid(x) = x / (1 + exp(-x)).
#include <Kokkos_Core.hpp>

#include <cfloat>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/fast_exp.hpp"
#include "ptk/kernels/row_traits.hpp"

namespace ptk::kernels {

KOKKOS_INLINE_FUNCTION float silu_value(float v) {
  // Past -88.72, e^-x overflows and silu is below 3e-37 in magnitude: -0 (x = -inf included,
  // where x / (1 + e) would be -inf). NaN fails the comparison and stays NaN through the division.
  // The select is on the numerator, before the division, so the division runs unmasked.
  const float a = -v;
  const float num = a > 88.7228394f ? -0.0f : v;
  return num / (1.0f + fast_exp_clamped(a));
}

// One iteration handles RowTraits<Space>::elementwise_block consecutive elements (32 on the host,
// a fixed-trip-count loop the compiler vectorizes; 1 on a GPU, for coalesced loads).
template <class Space>
void silu_forward(const Vector<Space>& out, const ConstVector<Space>& inp) {
  constexpr int B = RowTraits<Space>::elementwise_block;
  const std::size_t n = inp.extent(0);
  const float* x = inp.data();
  float* y = out.data();
  Kokkos::parallel_for(
      "ptk::silu_forward", Kokkos::RangePolicy<Space>(0, (n + B - 1) / B), KOKKOS_LAMBDA(const std::size_t block) {
        const std::size_t begin = block * B;
        if (begin + B <= n) {
          for (int l = 0; l < B; ++l) y[begin + l] = silu_value(x[begin + l]);
        } else {
          for (std::size_t i = begin; i < n; ++i) y[i] = silu_value(x[i]);
        }
      });
}

}  // namespace ptk::kernels
