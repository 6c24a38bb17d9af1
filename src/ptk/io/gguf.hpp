#pragma once
// GGUF, version 3: llama.cpp's model file. Little-endian throughout:
//   "GGUF", u32 version, u64 tensor count, u64 metadata count,
//   metadata: (string key, u32 type, value)...   string = u64 length + bytes; array = u32 type, u64 count, values
//   tensor infos: (string name, u32 dims, u64 ne[dims] (ne[0] the fastest-varying), u32 ggml type, u64 offset)...
//   padding to general.alignment (32 by default), then the data section; each tensor's offset is from its start
//   and a multiple of the alignment.
// ptk reads and writes the tensor types it has: F32, F16, BF16, Q8_0, Q4_0 (GGUF's blocks are ptk's, byte for byte).
// The reader checks everything a hostile file can lie about before it allocates by it: counts against the bytes
// left, string and array lengths, dimensions and their product, offsets inside the data section, tensors that
// overlap, duplicate keys and names, the alignment. Refusals are GgufError (an IoError): one line naming the file
// and the place.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptk/core/dtype_name.hpp"
#include "ptk/io/atomic_file.hpp"

namespace ptk::io {

class GgufError : public IoError {
 public:
  using IoError::IoError;
};

enum class GgufType : std::uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };

// A metadata value: a scalar or an array of scalars (GGUF allows arrays of arrays; no model ptk reads has one, and
// a file with one is refused). One vector holds the values, by kind.
struct GgufValue {
  GgufType type = GgufType::u32;  // the scalar's type, or the type of an array's elements
  bool array = false;
  std::vector<std::int64_t> ints;    // the integer types and bool (a u64 past 2^63 - 1 keeps its bits)
  std::vector<double> floats;        // f32, f64
  std::vector<std::string> strings;  // string

  static GgufValue of_string(std::string s);
  static GgufValue of_u32(std::uint32_t v);
  static GgufValue of_f32(float v);
  static GgufValue of_bool(bool v);
  static GgufValue of_strings(std::vector<std::string> v);
  static GgufValue of_f32s(const std::vector<float>& v);
  static GgufValue of_i32s(const std::vector<std::int32_t>& v);
  std::size_t count() const;
};

using GgufMetadata = std::vector<std::pair<std::string, GgufValue>>;

struct GgufTensorInfo {
  std::string name;
  std::vector<std::int64_t> shape;  // outermost first, as PyTorch and ptk write shapes: GGUF's ne reversed
  DType dtype = DType::f32;
  std::uint64_t offset = 0;         // in the file (the data section's start added)
  std::uint64_t bytes = 0;
};

struct Gguf {
  std::uint32_t version = 3;
  std::uint64_t alignment = 32;
  GgufMetadata metadata;               // in file order
  std::vector<GgufTensorInfo> tensors;  // in file order
  const GgufValue* find(const std::string& key) const;
  const GgufTensorInfo* tensor(const std::string& name) const;
};

// The bytes a tensor of `shape` and `dtype` takes (q8_0 / q4_0: the last dimension in whole blocks of 32).
std::uint64_t gguf_tensor_bytes(const std::vector<std::int64_t>& shape, DType dtype);

// The header of a GGUF file whose whole contents are `bytes` (a mapped file); every tensor is checked to lie in it.
Gguf parse_gguf(std::string_view bytes, const std::string& name);

struct GgufTensorData {
  std::string name;
  std::vector<std::int64_t> shape;  // outermost first
  DType dtype = DType::f32;
  std::string_view bytes;           // gguf_tensor_bytes(shape, dtype) of them
};

// What the header says of a tensor (its bytes follow in the data section).
struct GgufTensorSpec {
  std::string name;
  std::vector<std::int64_t> shape;  // outermost first
  DType dtype = DType::f32;
};

// A GGUF v3 file's header, padded to the alignment: the tensors' data then follow in order, each gguf_tensor_bytes
// long and padded with zeros to the alignment (a writer that streams them: ptk convert of a 7B model).
std::string serialize_gguf_header(const GgufMetadata& metadata, const std::vector<GgufTensorSpec>& tensors,
                                  std::uint64_t alignment = 32);

// A GGUF v3 file's bytes: the metadata (general.alignment added when `alignment` is not 32), then the tensors, each
// aligned. Throws GgufError for a tensor whose bytes do not match its shape, or duplicate names.
std::string serialize_gguf(const GgufMetadata& metadata, const std::vector<GgufTensorData>& tensors,
                           std::uint64_t alignment = 32);

}  // namespace ptk::io
