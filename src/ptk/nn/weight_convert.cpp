#include "ptk/nn/weight_convert.hpp"

#include <cmath>
#include <cstring>
#include <sstream>

#include "ptk/core/dtype.hpp"
#include "ptk/core/error.hpp"
#include "ptk/core/half.hpp"
#include "ptk/core/quant.hpp"

namespace ptk::nn {

namespace {

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Row `row` of a [rows, cols] tensor stored as dtype, as floats.
void decode_row(const StoredTensor& s, std::int64_t row, std::int64_t cols, float* out) {
  const char* p = s.bytes.data() + row * static_cast<std::int64_t>(stored_bytes({cols}, s.dtype));
  switch (s.dtype) {
    case DType::f32: std::memcpy(out, p, static_cast<std::size_t>(cols) * sizeof(float)); return;
    case DType::bf16:
      for (std::int64_t i = 0; i < cols; ++i) out[i] = to_float(load<bf16>(p + 2 * i));
      return;
    case DType::f16:
      for (std::int64_t i = 0; i < cols; ++i) out[i] = to_float(load<f16>(p + 2 * i));
      return;
    case DType::q8_0:
      for (std::int64_t b = 0; b < cols / quant_block; ++b) {
        const auto block = load<q8_0>(p + b * static_cast<std::int64_t>(sizeof(q8_0)));
        for (int i = 0; i < quant_block; ++i) out[b * quant_block + i] = value(block, i);
      }
      return;
    case DType::q4_0:
      for (std::int64_t b = 0; b < cols / quant_block; ++b) {
        const auto block = load<q4_0>(p + b * static_cast<std::int64_t>(sizeof(q4_0)));
        for (int i = 0; i < quant_block; ++i) out[b * quant_block + i] = value(block, i);
      }
      return;
  }
}

[[noreturn]] void cannot_hold(const StoredTensor& s, float v, std::int64_t row, std::int64_t col, DType dtype) {
  std::ostringstream m;
  m << s.name << " holds " << v << " at [" << row << ", " << col << "], which " << dtype_name(dtype) << " cannot store";
  throw InputError(m.str());
}

template <class Block>
void quantize_row(const StoredTensor& s, const float* x, std::int64_t row, std::int64_t cols, char* out) {
  for (std::int64_t b = 0; b < cols / quant_block; ++b) {
    for (int i = 0; i < quant_block; ++i) {
      const float v = x[b * quant_block + i];
      if (!std::isfinite(v) || std::fabs(v) > quant_max_abs<Block>()) cannot_hold(s, v, row, b * quant_block + i, Element<Block>::dtype);
    }
    const Block q = quantize_block<Block>(x + b * quant_block);
    std::memcpy(out + b * static_cast<std::int64_t>(sizeof(Block)), &q, sizeof(Block));
  }
}

// floats -> a row stored as dtype.
void encode_row(const StoredTensor& s, const float* x, std::int64_t row, std::int64_t cols, DType dtype, char* out) {
  switch (dtype) {
    case DType::f32: std::memcpy(out, x, static_cast<std::size_t>(cols) * sizeof(float)); return;
    case DType::bf16:
      for (std::int64_t i = 0; i < cols; ++i) {
        const bf16 h = to_bf16(x[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case DType::f16:
      for (std::int64_t i = 0; i < cols; ++i) {
        const f16 h = to_f16(x[i]);
        if (std::isfinite(x[i]) && !std::isfinite(to_float(h))) cannot_hold(s, x[i], row, i, dtype);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case DType::q8_0: return quantize_row<q8_0>(s, x, row, cols, out);
    case DType::q4_0: return quantize_row<q4_0>(s, x, row, cols, out);
  }
}

// The stored row that holds ptk's row r: GGUF's q/k rows h·D + 2i + j hold rotate-half row h·D + j·D/2 + i.
std::int64_t source_row(const StoredTensor& s, std::int64_t r, std::int64_t rows) {
  if (s.rope_heads <= 0) return r;
  const std::int64_t D = rows / s.rope_heads, h = r / D, k = r % D, j = k / (D / 2), i = k % (D / 2);
  return h * D + 2 * i + j;
}

// The inverse: the rotate-half row that interleaved row g (= h·D + 2i + j) holds, h·D + j·D/2 + i.
std::int64_t interleaved_row(const StoredTensor& s, std::int64_t g, std::int64_t rows) {
  const std::int64_t D = rows / s.rope_heads, h = g / D, k = g % D, i = k / 2, j = k % 2;
  return h * D + j * (D / 2) + i;
}

}  // namespace

std::uint64_t stored_bytes(const std::vector<std::int64_t>& shape, DType dtype) {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  switch (dtype) {
    case DType::f32: return 4 * n;
    case DType::bf16:
    case DType::f16: return 2 * n;
    case DType::q8_0: return n / quant_block * sizeof(q8_0);
    case DType::q4_0: return n / quant_block * sizeof(q4_0);
  }
  return 0;
}

std::vector<char> convert_tensor(const StoredTensor& s, const std::vector<std::int64_t>& shape, DType dtype,
                                 int interleave_heads) {
  require(s.bytes.size() == stored_bytes(s.shape, s.dtype), "model: ", s.name, " holds ", s.bytes.size(), " bytes, not ",
          stored_bytes(s.shape, s.dtype));
  const std::vector<std::int64_t> expected = s.transposed ? std::vector<std::int64_t>(shape.rbegin(), shape.rend()) : shape;
  if (s.shape != expected)
    throw InputError(s.name + " has shape " + to_string(s.shape) + ", but the model's config needs " + to_string(expected));
  const std::int64_t cols = shape.back(), rows = element_count(shape) / std::max<std::int64_t>(cols, 1);
  if ((dtype == DType::q8_0 || dtype == DType::q4_0) && cols % quant_block != 0)
    throw InputError(s.name + ": " + dtype_name(dtype) + " stores the last dimension in blocks of " +
                     std::to_string(quant_block) + ", and its rows have " + std::to_string(cols) + " values");
  for (const int heads : {s.rope_heads, interleave_heads})
    if (heads > 0 && (rows % heads != 0 || (rows / heads) % 2 != 0))
      throw InputError(s.name + ": " + std::to_string(rows) + " rows are not " + std::to_string(heads) + " heads of even size");
  const auto row_bytes = static_cast<std::int64_t>(stored_bytes({cols}, dtype));
  std::vector<char> out(static_cast<std::size_t>(rows * row_bytes));
  std::vector<float> x(static_cast<std::size_t>(cols));
  // A transposed matrix is decoded whole first (GPT-2's Conv1D weights: at most tens of MB), then read by columns.
  std::vector<float> stored(s.transposed ? static_cast<std::size_t>(rows * cols) : 0);
  for (std::int64_t c = 0; s.transposed && c < cols; ++c) decode_row(s, c, rows, stored.data() + c * rows);
  const StoredTensor to_gguf{"", DType::f32, {}, {}, false, interleave_heads};  // (only its row order is used)
  for (std::int64_t g = 0; g < rows; ++g) {
    char* dst = out.data() + g * row_bytes;
    // Target row g holds rotate-half row r, which the source keeps at row sr.
    const std::int64_t r = interleave_heads > 0 ? interleaved_row(to_gguf, g, rows) : g, sr = source_row(s, r, rows);
    if (!s.transposed && s.dtype == dtype) {
      std::memcpy(dst, s.bytes.data() + sr * row_bytes, static_cast<std::size_t>(row_bytes));
      continue;
    }
    if (s.transposed)  // ptk's row r is the stored matrix's column r
      for (std::int64_t c = 0; c < cols; ++c) x[static_cast<std::size_t>(c)] = stored[static_cast<std::size_t>(c * rows + r)];
    else
      decode_row(s, sr, cols, x.data());
    encode_row(s, x.data(), r, cols, dtype, dst);
  }
  return out;
}

ag::Var make_parameter(const StoredTensor& s, const std::vector<std::int64_t>& shape, DType dtype, ag::Device device) {
  const bool aligned = reinterpret_cast<std::uintptr_t>(s.bytes.data()) % (dtype == DType::f32 ? 4 : 2) == 0;
  if (s.dtype == dtype && !s.transposed && s.rope_heads == 0 && aligned && s.shape == shape &&
      s.bytes.size() == stored_bytes(shape, dtype))  // as it lies: one copy, into the Var
    return ag::Var::from_stored(shape, dtype, s.bytes.data(), device);
  const std::vector<char> bytes = convert_tensor(s, shape, dtype);
  return ag::Var::from_stored(shape, dtype, bytes.data(), device);
}

}  // namespace ptk::nn
