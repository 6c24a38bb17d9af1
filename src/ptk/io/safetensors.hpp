// Reader and writer for safetensors files: ptk's checkpoints (float32), and Hugging Face's weights (F32, BF16, F16;
// read in place from a mapped file).
//
// Layout: an 8-byte little-endian header length n, n bytes of JSON header (padded with spaces to a multiple
// of 8), then the raw little-endian data. The header maps each tensor name to
// {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} (byte offsets into the data section) and
// may hold "__metadata__", a map of strings to strings. ptk writes the CRC-32 of the data section there,
// under kChecksumKey, as 8 lowercase hex digits, and a second CRC-32 over the header itself (every tensor's
// name, shape and offsets and every metadata entry: a flipped `step` is caught too) under
// kHeaderChecksumKey; each is checked on read when it is present (files from other writers have none).
// Tensors are written sorted by name, back to back, with no gaps.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <string_view>

#include "ptk/core/dtype_name.hpp"
#include "ptk/core/error.hpp"

namespace ptk::io {

// what() is one line: "<file>: <problem>".
class SafetensorsError : public IoError {
 public:
  enum class Kind {
    unreadable,  // cannot open or read the file (or write it)
    truncated,   // the file ends before the header or the data it declares
    corrupted,   // the data does not match its CRC-32
    foreign,     // not a safetensors file, a dtype other than F32, or a required tensor missing
    invalid,     // a safetensors file that breaks the format: bad JSON, bad offsets or shapes, trailing data
    unpaired,    // files that must belong together (a model and its training state) do not
  };
  SafetensorsError(Kind kind, const std::string& message) : IoError(message), kind_(kind) {}
  // The problem's class, not the error family (Error::error_kind(), always io here).
  Kind kind() const { return kind_; }
  // "<file>: <problem> [<kind>]": the tool's line names the class too; what() stays without it.
  std::string line() const override;

 private:
  Kind kind_;
};

const char* to_string(SafetensorsError::Kind kind);

struct SafetensorsTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;  // C order, product of shape elements
};

struct Safetensors {
  std::map<std::string, SafetensorsTensor> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"; on read it includes kChecksumKey if present
};

constexpr const char* kChecksumKey = "crc32";
constexpr const char* kHeaderChecksumKey = "header_crc32";

// CRC-32 (zlib's, as gzip and PNG) of bytes, as 8 lowercase hex digits.
std::string crc32_hex(const void* data, std::size_t size);

// The complete file contents; sets metadata[kChecksumKey] and [kHeaderChecksumKey] (overriding any given).
std::string serialize_safetensors(const Safetensors& st, const std::string& name_for_errors = "safetensors");

// Writes the file atomically (io/atomic_file.hpp: unique temporary, fsync, rename, fsync of the directory):
// path holds the old file or the new one, never a part. Returns the file's header CRC-32 (kHeaderChecksumKey),
// which fingerprints the whole file: another file can name it to be paired with exactly this one.
std::string write_safetensors(const std::string& path, const Safetensors& st);

// What a header says of a tensor whose bytes follow it: F32, BF16 or F16, little-endian, C order.
struct SafetensorsSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
};

// The header of a file whose tensors' bytes follow it in `tensors`' order without gaps (a writer that streams them:
// ptk convert to a Hugging Face directory, a 7B model one tensor at a time): the 8-byte length, then the JSON
// padded with spaces to a multiple of 8. No CRCs (the data is not known yet). Throws SafetensorsError (invalid) for
// another dtype, a duplicate or reserved name.
std::string serialize_safetensors_header(const std::vector<SafetensorsSpec>& tensors,
                                         const std::map<std::string, std::string>& metadata);

// One tensor of a safetensors file where it lies in the parsed bytes (a mapped file's): F32, BF16 or F16.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::string_view bytes;  // little-endian elements, C order
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;
  const SafetensorsEntry* find(const std::string& name) const;  // nullptr when absent
};

// The header of a file whose whole contents are `bytes` (a mapped file: nothing is copied), checked as the F32
// reader checks it: every tensor's offsets, its shape against its dtype's size, the data section tiled without gaps
// or overlaps, and the CRCs ptk writes when present (the data's only with check_data_crc). A dtype other than F32,
// BF16 or F16 (I64, F8_E4M3, ...) is Kind::foreign, naming the tensor and the dtype.
SafetensorsHeader parse_safetensors_header(std::string_view bytes, const std::string& name_for_errors,
                                           bool check_data_crc = true);

// Parses complete file contents, F32 tensors only (a ptk checkpoint). Every name in `required` must be present (else Kind::foreign).
Safetensors parse_safetensors(const std::string& bytes, const std::string& name_for_errors,
                              const std::vector<std::string>& required = {});
Safetensors read_safetensors(const std::string& path, const std::vector<std::string>& required = {});

}  // namespace ptk::io
