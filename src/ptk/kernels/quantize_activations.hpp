#pragma once
// quantize_activations: x[R,K] -> y[R,K], K a multiple of 32: per block of 32 along a row, d = max|x| / 127 (float),
// q = round(x / d) (halves away from zero, within ±127), y = q · d (one rounding); a block holding NaN or ±inf is NaN.
// What a product with q8_0 or q4_0 weights multiplies W by, on every path (llama.cpp rounds its activations to q8
// blocks for such weights whatever the batch): the decode kernel takes d and q as they are (matmul_decode_quantized.hpp);
// the GEMM of a prefill takes y. block_scale and block_integer are the one definition of d and q for both.
#include <Kokkos_Core.hpp>

#include "ptk/core/quant.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

// A block's scale, and whether its values can be divided by it. poison is Σ (v − v): 0 if every value is finite,
// else NaN, which a kernel adds to the scale so that the block's products are NaN.
struct BlockScale {
  float d, poison;
  KOKKOS_INLINE_FUNCTION bool usable() const { return poison == 0.0f && d > 0.0f; }
};

KOKKOS_INLINE_FUNCTION BlockScale block_scale(const float* x) {
  float amax = 0.0f, poison = 0.0f;
  for (int k = 0; k < quant_block; ++k) {
    const float v = x[k], a = v < 0.0f ? -v : v;
    poison += v - v;
    amax = a > amax ? a : amax;
  }
  return BlockScale{amax / 127.0f, poison};
}

// v's integer in a block of scale s: |v / d| <= 127 but for a denormal d, where 1 / d is inexact (clamped); 0 where
// the block is all zeros or not finite.
KOKKOS_INLINE_FUNCTION int block_integer(float v, const BlockScale& s) {
  float t = s.usable() ? v / s.d : 0.0f;
  t = t > 127.0f ? 127.0f : t < -127.0f ? -127.0f : t;
  return ptk::detail::round_half_away(t);
}

template <class Space>
void quantize_activations(const Matrix<Space>& y, const ConstMatrix<Space>& x) {
  const int blocks = static_cast<int>(x.extent(1)) / quant_block;
  Kokkos::parallel_for(
      "ptk::quantize_activations", Kokkos::RangePolicy<Space>(0, static_cast<int>(x.extent(0)) * blocks),
      KOKKOS_LAMBDA(const int i) {
        const int r = i / blocks, k0 = (i % blocks) * quant_block;
        const BlockScale s = block_scale(&x(r, k0));
        for (int k = k0; k < k0 + quant_block; ++k)
          y(r, k) = static_cast<float>(block_integer(x(r, k), s)) * s.d + s.poison;
      });
}

}  // namespace ptk::kernels

#define PTK_QUANTIZE_ACTIVATIONS_SPACE_INSTANCES(EXT, Space) \
  EXT template void quantize_activations<Space>(const Matrix<Space>& y, const ConstMatrix<Space>& x);
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_QUANTIZE_ACTIVATIONS_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
