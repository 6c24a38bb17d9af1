// The data of a .npy file: which dtypes a caller accepts, the checks of the data's length against the header's
// shape, and the conversion of 16-bit values to and from float. The header itself: npy_header.cpp.
#include "ptk/io/npy.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <new>

#include "ptk/core/half.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/io/npy_header.hpp"

namespace ptk::io {
namespace {

using npy_detail::fail;
using npy_detail::quote;

// Data is copied to and from the file as raw little-endian bytes.
#if defined(__BYTE_ORDER__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ptk::io .npy support assumes a little-endian host");
#endif
static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559, "float must be IEEE-754 binary32");

constexpr const char* kReadsFloat = "ptk reads little-endian float32 ('<f4') or float16 ('<f2')";
constexpr const char* kOnlyIds = "ptk reads little-endian int32 ('<i4') or int64 ('<i8') ids";

struct DtypeInfo {
  const char* descr;  // on disk
  const char* what;   // for messages
  std::size_t size;   // bytes an element
  std::string named() const { return quote(descr) + " (" + what + ")"; }
};

DtypeInfo info(NpyDtype t, const std::string& name) {
  switch (t) {
    case NpyDtype::f32: return {"<f4", "float32", 4};
    case NpyDtype::f16: return {"<f2", "float16", 2};
    case NpyDtype::bf16: return {"<u2", "bfloat16 bits as uint16", 2};
  }
  fail(name, "unknown NpyDtype " + std::to_string(static_cast<int>(t)));
}

// The end of a refusal: what the reader would have taken.
std::string accepted(const NpyDtype* expected, const std::string& name) {
  return expected ? "expected little-endian " + info(*expected, name).named() : kReadsFloat;
}

// The dtype a float file holds. '<u2' has no meaning of its own (NumPy has no bfloat16), so it is read as bf16 bits
// only where the caller expects bf16; with no expectation, '<f4' and '<f2' are read.
NpyDtype float_dtype(const std::string& descr, const NpyDtype* expected, const std::string& name) {
  for (const NpyDtype t : {NpyDtype::f32, NpyDtype::f16, NpyDtype::bf16}) {
    if (descr != info(t, name).descr) continue;
    if (expected == nullptr && t != NpyDtype::bf16) return t;
    if (expected == nullptr) {
      fail(name, "dtype " + quote(descr) + " is not supported: " + kReadsFloat +
                     ", and uint16 only as bf16 bits where bf16 is expected");
    }
    if (t == *expected) return t;
    fail(name, "dtype " + info(t, name).named() + " is not the expected " + info(*expected, name).named());
  }
  fail(name, "dtype " + quote(descr) + " is not supported: " + accepted(expected, name));
}

// Where the data of a checked header starts and how many elements it holds; the data's length must be exactly what
// the shape says (checked before anything is allocated for it, so a lying shape costs nothing).
struct Layout {
  std::vector<std::int64_t> shape;
  std::size_t offset = 0;
  std::int64_t count = 0;
};

Layout data_layout(npy_detail::Header h, const std::string& bytes, const std::string& name, std::size_t item_size) {
  if (h.fortran_order) fail(name, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  const std::int64_t count = npy_detail::element_count(h.shape, name, static_cast<std::int64_t>(item_size));
  const std::uint64_t expected = static_cast<std::uint64_t>(count) * item_size;
  const std::uint64_t found = bytes.size() - h.data_offset;
  if (found != expected) {
    fail(name, std::string(found < expected ? "truncated data" : "unexpected trailing data") + ": expected " +
                   std::to_string(expected) + " bytes for shape " + format_shape(h.shape) + ", found " +
                   std::to_string(found));
  }
  return Layout{std::move(h.shape), h.data_offset, count};
}

// 16-bit values widened to float: exact (half.hpp's to_float), NaN and inf kept.
template <class Half>
void widen(const char* p, std::vector<float>& out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    out[i] = to_float(Half{bits});
  }
}

NpyArray parse_float(const std::string& bytes, const std::string& name, const NpyDtype* expected) {
  npy_detail::Header h = npy_detail::read_header(bytes, name, accepted(expected, name));
  const NpyDtype stored = float_dtype(h.descr, expected, name);
  Layout l = data_layout(std::move(h), bytes, name, info(stored, name).size);
  NpyArray out;
  out.shape = std::move(l.shape);
  out.stored = stored;
  out.data.resize(static_cast<std::size_t>(l.count));
  const char* p = bytes.data() + l.offset;
  if (stored == NpyDtype::f16) widen<f16>(p, out.data);
  else if (stored == NpyDtype::bf16) widen<bf16>(p, out.data);
  else if (l.count > 0) std::memcpy(out.data.data(), p, out.data.size() * sizeof(float));
  return out;
}

}  // namespace

NpyArray parse_npy(const std::string& bytes, const std::string& name) { return parse_float(bytes, name, nullptr); }

NpyArray parse_npy(const std::string& bytes, const std::string& name, NpyDtype expected) {
  return parse_float(bytes, name, &expected);
}

NpyIndexArray parse_npy_ids(const std::string& bytes, const std::string& name) {
  npy_detail::Header h = npy_detail::read_header(bytes, name, kOnlyIds);
  std::size_t item_size = 0;
  if (h.descr == "<i4") item_size = 4;
  else if (h.descr == "<i8") item_size = 8;
  else fail(name, "dtype " + quote(h.descr) + " is not supported for ids: " + kOnlyIds);
  Layout l = data_layout(std::move(h), bytes, name, item_size);
  NpyIndexArray out;
  out.shape = std::move(l.shape);
  out.data.resize(static_cast<std::size_t>(l.count));
  const char* p = bytes.data() + l.offset;
  for (std::size_t i = 0; i < out.data.size(); ++i) {
    if (item_size == 4) {
      std::int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      out.data[i] = v;
    } else {
      std::memcpy(&out.data[i], p + 8 * i, 8);
    }
  }
  return out;
}

namespace {
template <class Parse>
auto read_file(const std::string& path, Parse parse) {
  std::string bytes;
  try {
    bytes = read_regular_file(path);  // a device, fifo or directory is refused, not read
  } catch (const FileError& e) {
    throw NpyError(e.what());
  }
  try {
    return parse(bytes, path);
  } catch (const std::bad_alloc&) {
    fail(path, "out of memory reading the file (" + std::to_string(bytes.size()) + " bytes read)");
  }
}

// `count` floats written as `dtype`: float32 as they are, 16-bit types rounded to nearest even (half.hpp) a block at a
// time, so a large array needs no second copy in memory.
bool write_data(std::FILE* f, const float* data, std::size_t count, NpyDtype dtype) {
  if (dtype == NpyDtype::f32) return count == 0 || std::fwrite(data, sizeof(float), count, f) == count;
  std::uint16_t block[4096];
  for (std::size_t start = 0; start < count; start += std::size(block)) {
    const std::size_t n = std::min(std::size(block), count - start);
    for (std::size_t i = 0; i < n; ++i) {
      block[i] = dtype == NpyDtype::f16 ? to_f16(data[start + i]).bits : to_bf16(data[start + i]).bits;
    }
    if (std::fwrite(block, sizeof block[0], n, f) != n) return false;
  }
  return true;
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  return read_file(path, [](const std::string& b, const std::string& n) { return parse_npy(b, n); });
}
NpyArray read_npy(const std::string& path, NpyDtype expected) {
  return read_file(path, [expected](const std::string& b, const std::string& n) { return parse_npy(b, n, expected); });
}
NpyIndexArray read_npy_ids(const std::string& path) { return read_file(path, parse_npy_ids); }

void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const float* data, NpyDtype dtype) {
  const DtypeInfo type = info(dtype, path);
  for (const std::int64_t d : shape) {
    if (d < 0) fail(path, "cannot write shape " + format_shape(shape) + ": negative dimension");
  }
  const std::size_t count =
      static_cast<std::size_t>(npy_detail::element_count(shape, path, static_cast<std::int64_t>(type.size)));
  if (count > 0 && data == nullptr) fail(path, "cannot write shape " + format_shape(shape) + ": data is null");
  const std::string header = npy_detail::make_header(type.descr, shape, path);

  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(path, std::string("cannot open file for writing: ") + std::strerror(errno));
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size() && write_data(f, data, count, dtype);
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) fail(path, std::string("cannot write file: ") + std::strerror(err));
}

}  // namespace ptk::io
