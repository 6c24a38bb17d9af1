#pragma once
// The element types a tensor stores (the contract names of ../shared/DESIGN.md): f32, bf16, f16 for any tensor;
// q8_0, q4_0 for weights, in blocks of 32 along the last dimension. Arithmetic is fp32 whatever the storage.
// Element<E> says how E stores values; DType names them at run time (CLI, files, benchmarks).
#include <cstdint>
#include <string>
#include <type_traits>

#include "ptk/core/dtype_name.hpp"
#include "ptk/core/half.hpp"
#include "ptk/core/quant.hpp"

namespace ptk {

template <class E>
struct Element;
template <>
struct Element<float> {
  static constexpr DType dtype = DType::f32;
  static constexpr int block = 1;  // values per stored item
};
template <>
struct Element<bf16> {
  static constexpr DType dtype = DType::bf16;
  static constexpr int block = 1;
};
template <>
struct Element<f16> {
  static constexpr DType dtype = DType::f16;
  static constexpr int block = 1;
};
template <>
struct Element<q8_0> {
  static constexpr DType dtype = DType::q8_0;
  static constexpr int block = quant_block;
};
template <>
struct Element<q4_0> {
  static constexpr DType dtype = DType::q4_0;
  static constexpr int block = quant_block;
};
// q8_0 and q4_0 in row tiles (quant.hpp): an item is the blocks of 16 rows, so such a tensor's second-last dimension
// is a multiple of 16 and its views count tiles of rows (Tensor::rows: [rows / 16, values / 32]).
template <>
struct Element<q8_0x16> {
  static constexpr DType dtype = DType::q8_0;
  static constexpr int block = quant_block;
  static constexpr int rows = tile_rows;
};
template <>
struct Element<q4_0x16> {
  static constexpr DType dtype = DType::q4_0;
  static constexpr int block = quant_block;
  static constexpr int rows = tile_rows;
};

// Rows an item spans: 1 but for row tiles.
template <class E, class = void>
struct ItemRows {
  static constexpr int value = 1;
};
template <class E>
struct ItemRows<E, std::void_t<decltype(Element<E>::rows)>> {
  static constexpr int value = Element<E>::rows;
};
template <class E>
inline constexpr int item_rows_v = ItemRows<E>::value;
template <class E>
inline constexpr bool is_row_tile_v = item_rows_v<E> > 1;

template <class E>
inline constexpr bool is_quantized_v = Element<E>::block > 1;

// x rounded to a one-value type (f32, bf16, f16) to nearest even: what a kernel writes into a 16-bit output.
template <class E>
KOKKOS_INLINE_FUNCTION E round_to(float x) {
  static_assert(Element<E>::block == 1, "a block type is written a block at a time (quantize_block)");
  if constexpr (std::is_same_v<E, float>) return x;
  else if constexpr (std::is_same_v<E, bf16>) return to_bf16(x);
  else return to_f16(x);
}

// A one-value item as float, exactly (round_to's inverse on the values the type holds): how a kernel written over E
// reads an element.
// f16 on a host with F16C takes the masked form of the decode (half.hpp), which g++ vectorizes in the row ops'
// loops; the scalar instruction would keep them scalar (the same value either way).
template <class E>
KOKKOS_INLINE_FUNCTION float widen(E x) {
  static_assert(Element<E>::block == 1, "a block type is read through load() (kernels/detail/load.hpp)");
  if constexpr (std::is_same_v<E, float>) {
    return x;
  } else if constexpr (std::is_same_v<E, f16>) {
#if defined(PTK_F16C)
    return detail::f16_to_float_masked(x);
#else
    return to_float(x);
#endif
  } else {
    return to_float(x);
  }
}

// An item whose values are all NaN: what a debug build fills an unwritten output with.
template <class E>
KOKKOS_INLINE_FUNCTION E nan_item() {
  if constexpr (std::is_same_v<E, float>) {
    return __builtin_nanf("");
  } else if constexpr (std::is_same_v<E, bf16>) {
    return bf16{0x7fc0};
  } else if constexpr (std::is_same_v<E, f16>) {
    return f16{0x7e00};
  } else if constexpr (is_row_tile_v<E>) {
    E t{};
    for (auto& d : t.d) d = f16{0x7e00};
    return t;
  } else {
    E b{};
    b.d = f16{0x7e00};
    return b;
  }
}

// Bytes of n values of a dtype (n a multiple of the block for q8_0 and q4_0).
inline std::int64_t dtype_bytes(DType t, std::int64_t n) {
  switch (t) {
    case DType::f32: return 4 * n;
    case DType::bf16:
    case DType::f16: return 2 * n;
    case DType::q8_0: return n / quant_block * static_cast<std::int64_t>(sizeof(q8_0));
    case DType::q4_0: return n / quant_block * static_cast<std::int64_t>(sizeof(q4_0));
  }
  return 0;
}

}  // namespace ptk
