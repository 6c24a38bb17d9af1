// Reader and writer for NumPy .npy files holding little-endian float32 data.
//
// Format reference: numpy/lib/format.py. Supported on read: versions 1.0, 2.0
// and 3.0, dtype '<f4' (ids: '<i4' or '<i8', see read_npy_ids), C order, any shape (including 0-d and zero-size).
// Written files are version 1.0 (2.0 only if the header would not fit) and
// are byte-identical to what np.save writes for the same float32 array.
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

struct NpyArray {
  std::vector<std::int64_t> shape;  // empty for a 0-d (scalar) array
  std::vector<float> data;          // C (row-major) order
};

// Token ids / class targets: '<i4' or '<i8' on disk, widened to int64.
struct NpyIndexArray {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> data;
};

// Reads the .npy file at `path`.
NpyArray read_npy(const std::string& path);

// Parses the complete contents of a .npy file held in memory.
// `name_for_errors` is used as the file name in error messages.
NpyArray parse_npy(const std::string& bytes, const std::string& name_for_errors);

// As read_npy / parse_npy for integer ids: dtype '<i4' or '<i8' (anything else is an NpyError).
NpyIndexArray read_npy_ids(const std::string& path);
NpyIndexArray parse_npy_ids(const std::string& bytes, const std::string& name_for_errors);

// Writes `data` (C order, product of `shape` elements; may be null if that
// product is 0) as a float32 .npy file. Throws NpyError on an invalid shape or
// an I/O failure (which may leave a partial file behind; read_npy rejects it).
void write_npy(const std::string& path, const std::vector<std::int64_t>& shape,
               const float* data);

// "[2, 3, 4]"; "[]" for a scalar.
std::string format_shape(const std::vector<std::int64_t>& shape);

}  // namespace ptk::io
