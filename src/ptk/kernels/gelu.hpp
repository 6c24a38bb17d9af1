#pragma once
// gelu_forward: out[n] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the tanh form of GPT-2,
// evaluated as x / (1 + exp(-2u)) (the same function) so that large negative x does not cancel.
#include <Kokkos_Core.hpp>

#include <cfloat>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/fast_exp.hpp"
#include "ptk/kernels/row_traits.hpp"

namespace ptk::kernels {

KOKKOS_INLINE_FUNCTION float gelu_value(float v) {
  constexpr float sqrt_2_over_pi = 0.7978845608028654f;
  const float a = -2.0f * sqrt_2_over_pi * (v + 0.044715f * v * v * v);
  // e^a overflows only for very negative x, where gelu is -0 (x = -inf included, where the
  // quotient would be -inf). NaN fails the comparison and stays NaN through the division. The
  // select is on the numerator, before the division, so the division runs unmasked.
  const float num = a > 88.7228394f ? -0.0f : v;
  return num / (1.0f + fast_exp_clamped(a));
}

// One iteration handles RowTraits<Space>::elementwise_block consecutive elements (32 on the host,
// a fixed-trip-count loop the compiler vectorizes; 1 on a GPU, for coalesced loads).
template <class Space>
void gelu_forward(const Vector<Space>& out, const ConstVector<Space>& inp) {
  constexpr int B = RowTraits<Space>::elementwise_block;
  const std::size_t n = inp.extent(0);
  const float* x = inp.data();
  float* y = out.data();
  Kokkos::parallel_for(
      "ptk::gelu_forward", Kokkos::RangePolicy<Space>(0, (n + B - 1) / B), KOKKOS_LAMBDA(const std::size_t block) {
        const std::size_t begin = block * B;
        if (begin + B <= n) {
          for (int l = 0; l < B; ++l) y[begin + l] = gelu_value(x[begin + l]);
        } else {
          for (std::size_t i = begin; i < n; ++i) y[i] = gelu_value(x[i]);
        }
      });
}

}  // namespace ptk::kernels
