// Reader and writer for NumPy .npy files of little-endian float32, float16, or uint16 holding bfloat16 bits (NumPy has
// no bfloat16), and of int32/int64 ids. In memory a float array is always float: 16-bit values are widened exactly
// on read and rounded to nearest even on write (core/half.hpp), NaN and inf kept.
//
// Format reference: numpy/lib/format.py. Read: versions 1.0, 2.0 and 3.0, C order, any shape (including 0-d and
// zero-size); dtype '<f4' or '<f2' (read_npy), one chosen dtype ('<f4', '<f2' or '<u2' as bf16: read_npy with an
// expected NpyDtype), '<i4' or '<i8' (read_npy_ids). Anything else (big-endian, '|u2', other kinds) is an NpyError.
// Written files are version 1.0 (2.0 only if the header would not fit) and are byte-identical to what np.save
// writes for the same float32, float16 or uint16 array.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ptk/core/error.hpp"

namespace ptk::io {

// Thrown for any unreadable, malformed or unsupported file and for I/O
// failures. what() is a single line of the form "<file>: <problem>".
class NpyError : public IoError {
 public:
  using IoError::IoError;
};

// A float array's element type on disk. bf16 is stored as '<u2' (its 16 bits), so a uint16 file is bf16 only
// where the reader is told so.
enum class NpyDtype { f32, f16, bf16 };

struct NpyArray {
  std::vector<std::int64_t> shape;  // empty for a 0-d (scalar) array
  std::vector<float> data;          // C (row-major) order, widened from `stored`
  NpyDtype stored = NpyDtype::f32;  // what the file held
};

// Token ids / class targets: '<i4' or '<i8' on disk, widened to int64.
struct NpyIndexArray {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> data;
};

// Reads the .npy file at `path`: '<f4' or '<f2' ('<u2' is refused: only the caller knows it holds bf16).
NpyArray read_npy(const std::string& path);
// As read_npy, but only `expected` is accepted ('<f4', '<f2', or '<u2' for bf16); any other dtype is an NpyError
// that names both.
NpyArray read_npy(const std::string& path, NpyDtype expected);

// Parses the complete contents of a .npy file held in memory, as read_npy does.
// `name_for_errors` is used as the file name in error messages.
NpyArray parse_npy(const std::string& bytes, const std::string& name_for_errors);
NpyArray parse_npy(const std::string& bytes, const std::string& name_for_errors, NpyDtype expected);

// As read_npy / parse_npy for integer ids: dtype '<i4' or '<i8' (anything else is an NpyError).
NpyIndexArray read_npy_ids(const std::string& path);
NpyIndexArray parse_npy_ids(const std::string& bytes, const std::string& name_for_errors);

// Writes `data` (C order, product of `shape` elements; may be null if that
// product is 0) as a .npy file of `dtype`: '<f4', or '<f2' / '<u2' holding bf16 bits, each value rounded to
// nearest even (NaN stays NaN, beyond the range is ±inf). Throws NpyError on an invalid shape or
// an I/O failure (which may leave a partial file behind; read_npy rejects it).
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape,
               const float* data, NpyDtype dtype = NpyDtype::f32);

// "[2, 3, 4]"; "[]" for a scalar.
std::string format_shape(const std::vector<std::int64_t>& shape);

}  // namespace ptk::io
