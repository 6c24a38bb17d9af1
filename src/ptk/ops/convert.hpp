#pragma once
// convert<E>(x): an f32 tensor stored as E (dtype.hpp), on x's device; to_f32(x): its values back as float (exact).
// Refused in one line, before anything is allocated: a q8_0 or q4_0 tensor whose last dimension is not whole
// blocks of 32, NaN or infinities in it (a block's scale would be NaN and poison its 31 neighbours), values beyond
// its scale's range (quant_max_abs), and finite values that bf16 or f16 would round to infinity. NaN and
// infinities themselves survive a conversion to bf16 or f16, as IEEE says.
#include "ptk/core/dtype.hpp"
#include "ptk/kernels/convert.hpp"
#include "ptk/kernels/matmul_decode_tiles.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

// The largest finite |x| that E stores without rounding to infinity: just under half an ulp past its largest value.
template <class E>
constexpr float max_finite_input() {
  if constexpr (std::is_same_v<E, f16>) return 0x1.ffdffep+15f;  // below 65520 = 65504 + half an ulp (the tie to inf)
  else if constexpr (std::is_same_v<E, bf16>) return 0x1.fefffep+127f;  // below 2^128 - 2^119, bf16's tie to inf
  else return quant_max_abs<E>();
}

// cast<E>(x): x rounded to bf16 or f16 with no range check and no read-back (a mixed-precision step's operands,
// ag::Autocast): a finite value past E's range becomes an infinity, as IEEE rounding says, and the step's gradient
// norm sees it (f16 loss scaling skips that step).
// persistent: the result outlives a step (a parameter's copy), so it takes no buffer from the reuse cache.
template <class E, class Space>
Tensor<Space, E> cast(const Tensor<Space>& x, bool persistent = false) {
  static_assert(std::is_same_v<E, bf16> || std::is_same_v<E, f16>, "cast rounds to bf16 or f16");
  auto y = persistent ? Tensor<Space, E>::persistent(x.shape(), "ptk::cast") : Tensor<Space, E>::uninitialized(x.shape(), "ptk::cast");
  kernels::convert<Space, E>(y.flat(), x.flat());
  return y;
}

template <class E, class Space>
Tensor<Space, E> convert(const Tensor<Space>& x, const char* name = "x") {
  static_assert(!std::is_same_v<E, float>, "convert to float is to_f32");
  const char* type = dtype_name(Element<E>::dtype);
  check_tensor("convert", name, x, 1, 8);
  if constexpr (is_quantized_v<E>)
    require(x.dim(-1) % quant_block == 0, "convert: ", name, " has shape ", x.shape(), "; ", type,
            " stores the last dimension in blocks of ", quant_block);
  const auto range = kernels::value_range<Space>(x.flat());
  if constexpr (is_quantized_v<E>)
    require(range.nonfinite == 0, "convert: ", name, " holds ", range.nonfinite, " NaN or infinite values; ", type,
            " cannot store them");
  require(range.max_abs <= max_finite_input<E>(), "convert: ", name, " holds |x| = ", range.max_abs,
          ", beyond what ", type, " stores (at most ", max_finite_input<E>(), ")");
  if constexpr (!is_quantized_v<E>) {
    return cast<E>(x);  // checked: the cast of values in range
  } else {
    auto y = Tensor<Space, E>::uninitialized(x.shape(), "ptk::convert");
    kernels::convert<Space, E>(y.flat(), x.flat());
    return y;
  }
}

// The row tiles of a q8_0 or q4_0 matrix [N, K] (quant.hpp q8_0x16, q4_0x16; N a multiple of 16), and back: the same
// bytes, regrouped.
template <class Space, class Block>
Tensor<Space, tile_of_t<Block>> tile(const Tensor<Space, Block>& x) {
  static_assert(std::is_same_v<Block, q8_0> || std::is_same_v<Block, q4_0>, "row tiles hold q8_0 or q4_0 blocks");
  check_tensor("tile", "x", x, 2, 2);
  require(x.dim(0) % tile_rows == 0, "tile: x has shape ", x.shape(), "; row tiles need a multiple of ", tile_rows,
          " rows");
  auto y = Tensor<Space, tile_of_t<Block>>::uninitialized(x.shape(), "ptk::tile");
  kernels::tile_blocks<Space, tile_of_t<Block>>(y.rows(), x.rows());
  return y;
}
template <class Space, class T>
Tensor<Space, typename T::block_type> untile(const Tensor<Space, T>& x) {
  auto y = Tensor<Space, typename T::block_type>::uninitialized(x.shape(), "ptk::untile");
  kernels::untile_blocks<Space, T>(y.rows(), x.rows());
  return y;
}

template <class Space, class E>
Tensor<Space> to_f32(const Tensor<Space, E>& x) {
  if constexpr (is_row_tile_v<E>) {
    return to_f32(untile(x));
  } else {
    check_tensor("to_f32", "x", x, 1, 8);
    auto y = Tensor<Space>::uninitialized(x.shape(), "ptk::to_f32");
    kernels::dequantize<Space, E>(y.flat(), x.flat());
    return y;
  }
}

}  // namespace ptk::ops
