#pragma once
// Block-quantized weights, byte for byte GGUF's (so that a GGUF tensor can be used as it lies in the file):
//   q8_0: 34 bytes per 32 values, an f16 scale d, then 32 int8 q;             value i = d · q[i]
//   q4_0: 18 bytes per 32 values, an f16 scale d, then 16 bytes of 4-bit q;   value i = d · (q[i] − 8),
//         q[i] in the low nibble of byte i for i < 16, in the high nibble of byte i − 16 for i >= 16.
// d · q is exact in float (11 + 8 significant bits), so a kernel that dequantizes on the fly computes the
// float kernel's result on the dequantized matrix, to the bit where it adds in the same order.
// The quantizers are ggml's reference rounding (q8_0: d = amax / 127, q = round(x / d); q4_0: d = m / −8
// for m the value of largest magnitude, q = min(15, trunc(x / d + 8.5))), so that ptk and llama.cpp
// write the same bytes for the same floats. Both round with the float d and store d rounded to f16:
// |x − value| <= |d| / 2 + |q| · |d − d_f16| (quant_test checks that bound, block by block), except that q4_0
// has 8 steps below zero and 7 above: a value of the other sign than m and x/d in (7.5, 8] takes 15, up to |d| off.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

#include "ptk/core/half.hpp"

namespace ptk {

constexpr int quant_block = 32;  // values per q8_0 / q4_0 block

struct q8_0 {
  f16 d;
  std::int8_t qs[quant_block];
};
struct q4_0 {
  f16 d;
  std::uint8_t qs[quant_block / 2];
};
static_assert(sizeof(q8_0) == 34 && alignof(q8_0) == 2, "q8_0 must be GGUF's 34-byte block");
static_assert(sizeof(q4_0) == 18 && alignof(q4_0) == 2, "q4_0 must be GGUF's 18-byte block");

// q8_0 and q4_0 weights in row tiles, as the host's kernels read them (kernels/matmul_decode_tiles.hpp; llama.cpp
// repacks its q4_0 for the CPU the same way): the blocks of one 32-value column of 16 consecutive rows, their scales
// together, then the quants in bands of 64 bytes, band t holding bytes 4t .. 4t + 3 of every row's block (row r's at
// 4r). q8_0x16: 8 bands, band t values 4t .. 4t + 3. q4_0x16: 4 bands, values 4t .. 4t + 3 in the low nibbles and
// 16 + 4t .. 19 + 4t in the high ones. A SIMD lane is a row: one 64-byte load gives 4 values of 16 rows. The same
// bytes a block as GGUF's, and the same values (tile_block, set_tile_block).
constexpr int tile_rows = 16;
template <int Bands, class Q, class Block>
struct RowTile {
  using block_type = Block;
  static constexpr int bands = Bands;  // 4-byte groups of each row's quants
  f16 d[tile_rows];
  Q qs[Bands][tile_rows][4];
};
struct q8_0x16 : RowTile<quant_block / 4, std::int8_t, q8_0> {};
struct q4_0x16 : RowTile<quant_block / 8, std::uint8_t, q4_0> {};
static_assert(sizeof(q8_0x16) == tile_rows * sizeof(q8_0), "a q8_0 tile holds 16 blocks' bytes");
static_assert(sizeof(q4_0x16) == tile_rows * sizeof(q4_0), "a q4_0 tile holds 16 blocks' bytes");
template <class Block>
using tile_of_t = std::conditional_t<std::is_same_v<Block, q8_0>, q8_0x16, q4_0x16>;

// Row r's block of a tile, and the tile's row r set from a block.
template <int Bands, class Q, class Block>
KOKKOS_INLINE_FUNCTION Block tile_block(const RowTile<Bands, Q, Block>& t, int r) {
  Block b;
  b.d = t.d[r];
  for (int band = 0; band < Bands; ++band)
    for (int i = 0; i < 4; ++i) b.qs[4 * band + i] = t.qs[band][r][i];
  return b;
}
template <int Bands, class Q, class Block>
KOKKOS_INLINE_FUNCTION void set_tile_block(RowTile<Bands, Q, Block>& t, int r, const Block& b) {
  t.d[r] = b.d;
  for (int band = 0; band < Bands; ++band)
    for (int i = 0; i < 4; ++i) t.qs[band][r][i] = b.qs[4 * band + i];
}

// Value i (0 <= i < 32) of a block.
KOKKOS_INLINE_FUNCTION float value(const q8_0& b, int i) { return to_float(b.d) * static_cast<float>(b.qs[i]); }
KOKKOS_INLINE_FUNCTION int nibble(const q4_0& b, int i) {
  return i < quant_block / 2 ? (b.qs[i] & 0x0f) : (b.qs[i - quant_block / 2] >> 4);
}
KOKKOS_INLINE_FUNCTION float value(const q4_0& b, int i) { return to_float(b.d) * static_cast<float>(nibble(b, i) - 8); }

namespace detail {
KOKKOS_INLINE_FUNCTION float magnitude(float x) { return x < 0.0f ? -x : x; }
// C's roundf (halves away from zero) for |v| < 2^23, in plain arithmetic (Kokkos 3.4 has no round): the cut
// fraction v − trunc(v) is exact there.
KOKKOS_INLINE_FUNCTION int round_half_away(float v) {
  const int t = static_cast<int>(v);
  const float f = v - static_cast<float>(t);
  return f >= 0.5f ? t + 1 : f <= -0.5f ? t - 1 : t;
}
}  // namespace detail

// One block from 32 finite floats (the callers check finiteness and the scale's range: quantize.hpp).
KOKKOS_INLINE_FUNCTION q8_0 quantize_q8_0(const float* x) {
  float amax = 0.0f;
  for (int i = 0; i < quant_block; ++i)
    if (detail::magnitude(x[i]) > amax) amax = detail::magnitude(x[i]);
  const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  q8_0 b;
  b.d = to_f16(d);
  for (int i = 0; i < quant_block; ++i) b.qs[i] = static_cast<std::int8_t>(detail::round_half_away(x[i] * id));
  return b;
}

KOKKOS_INLINE_FUNCTION q4_0 quantize_q4_0(const float* x) {
  float amax = 0.0f, m = 0.0f;  // m: the value of largest magnitude, sign kept (the first such)
  for (int i = 0; i < quant_block; ++i)
    if (detail::magnitude(x[i]) > amax) {
      amax = detail::magnitude(x[i]);
      m = x[i];
    }
  const float d = m / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  q4_0 b;
  b.d = to_f16(d);
  for (int i = 0; i < quant_block / 2; ++i) {
    // x / d + 8.5 lies in [0.5, 16.5]: truncation rounds x / d to nearest (ties up), 16 becomes 15.
    const int lo = static_cast<int>(x[i] * id + 8.5f), hi = static_cast<int>(x[i + quant_block / 2] * id + 8.5f);
    b.qs[i] = static_cast<std::uint8_t>((lo < 15 ? lo : 15) | ((hi < 15 ? hi : 15) << 4));
  }
  return b;
}

template <class Block>
KOKKOS_INLINE_FUNCTION Block quantize_block(const float* x) {
  if constexpr (std::is_same_v<Block, q8_0>) return quantize_q8_0(x);
  else return quantize_q4_0(x);
}

// The largest |x| a block may hold: beyond it the f16 scale d would round to infinity (d = amax / 127 for
// q8_0, amax / 8 for q4_0, and f16's largest finite value is 65504; the half-ulp to 65520 rounds down).
template <class Block>
constexpr float quant_max_abs();
template <>
constexpr float quant_max_abs<q8_0>() { return 65504.0f * 127.0f; }
template <>
constexpr float quant_max_abs<q4_0>() { return 65504.0f * 8.0f; }

}  // namespace ptk
