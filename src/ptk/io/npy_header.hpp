// Internal to the .npy reader and writer (npy.cpp, npy_header.cpp); include npy.hpp instead.
// The header of a .npy file: magic, version, length field and the Python dict literal that names the dtype, the
// order and the shape. What the data after it holds is npy.cpp's business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptk::io::npy_detail {

// Throws NpyError("<name>: <problem>").
[[noreturn]] void fail(const std::string& name, const std::string& problem);

// Text taken from a file, made safe for a one-line message: quoted, non-printable bytes escaped, cut at 40 characters.
std::string quote(std::string_view text);

// Element count of a shape with non-negative dims; an NpyError if the count, or its size at `item_size` bytes an
// element, overflows int64 (checked even when a zero dim makes the array empty, as NumPy does).
std::int64_t element_count(const std::vector<std::int64_t>& shape, const std::string& name, std::int64_t item_size);

struct Header {
  std::string descr;  // as written, e.g. "<f4"; not yet checked against what the caller reads
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  std::size_t data_offset = 0;  // magic + version + length field + dict
};

// The header at the start of `bytes` (versions 1.0, 2.0 and 3.0). `accepted` ends the message that refuses a
// structured dtype, e.g. "ptk reads little-endian float32 ('<f4') or float16 ('<f2')".
Header read_header(const std::string& bytes, const std::string& name, const std::string& accepted);

// Magic, version, header length and padded dict for a C-order array of dtype `descr`, byte for byte what np.save
// writes: version 1.0 unless the dict needs a 32-bit length.
std::string make_header(const std::string& descr, const std::vector<std::int64_t>& shape, const std::string& name);

}  // namespace ptk::io::npy_detail
