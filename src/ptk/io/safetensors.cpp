#include "ptk/io/safetensors.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "ptk/core/quote.hpp"
#include "ptk/io/atomic_file.hpp"

namespace ptk::io {
namespace {

#if defined(__BYTE_ORDER__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ptk::io safetensors support assumes a little-endian host");
#endif
static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559, "float must be IEEE-754 binary32");

using Kind = SafetensorsError::Kind;
using Json = nlohmann::json;

// A header longer than this is not a checkpoint ptk wrote or could use (the format's own limit is 100 MB).
constexpr std::uint64_t kMaxHeader = 100u << 20;

[[noreturn]] void fail(Kind kind, const std::string& name, const std::string& problem) {
  throw SafetensorsError(kind, name + ": " + problem);
}

// One line, at most 60 characters, for text taken from the file.
std::string quote(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 60)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return "'" + out + (text.size() > 60 ? "'..." : "'");
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Element count, or -1 if it (or its size in bytes) overflows.
std::int64_t count_of(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / 4 / d) return -1;
    n *= d;
  }
  return n;
}

// The CRC-32 of the header's canonical JSON (nlohmann's dump, keys sorted) without kHeaderChecksumKey: it
// covers every tensor's name, dtype, shape and offsets and every metadata entry, the data CRC included.
std::string header_crc(Json header) {
  header["__metadata__"].erase(kHeaderChecksumKey);
  const std::string text = header.dump();
  return crc32_hex(text.data(), text.size());
}

std::uint64_t read_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

}  // namespace

const char* to_string(SafetensorsError::Kind kind) {
  switch (kind) {
    case Kind::unreadable: return "unreadable";
    case Kind::truncated: return "truncated";
    case Kind::corrupted: return "corrupted";
    case Kind::foreign: return "foreign";
    case Kind::invalid: return "invalid";
    case Kind::unpaired: return "unpaired";
  }
  return "unknown";
}

std::string SafetensorsError::line() const { return std::string(what()) + " [" + to_string(kind_) + "]"; }

std::string crc32_hex(const void* data, std::size_t size) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (size > 0) {  // zlib takes uInt lengths
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = ::crc32(crc, p, chunk);
    p += chunk;
    size -= chunk;
  }
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08lx", static_cast<unsigned long>(crc & 0xffffffffUL));
  return buf;
}

std::string serialize_safetensors(const Safetensors& st, const std::string& name) {
  std::string data;
  Json header = Json::object();
  for (const auto& [key, t] : st.tensors) {
    if (key.empty() || key == "__metadata__") fail(Kind::invalid, name, "cannot write a tensor named " + quote(key));
    const auto n = count_of(t.shape);
    if (n < 0 || static_cast<std::uint64_t>(n) != t.data.size())
      fail(Kind::invalid, name, "tensor " + quote(key) + " has shape " + shape_text(t.shape) + " but " +
                                    std::to_string(t.data.size()) + " values");
    const auto begin = data.size();
    data.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
    header[key] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  Json meta = Json::object();
  for (const auto& [k, v] : st.metadata) meta[k] = v;
  meta[kChecksumKey] = crc32_hex(data.data(), data.size());
  header["__metadata__"] = meta;
  header["__metadata__"][kHeaderChecksumKey] = header_crc(header);
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((std::uint64_t{text.size()} >> (8 * i)) & 0xff);
  return out + text + data;
}

std::string serialize_safetensors_header(const std::vector<SafetensorsSpec>& tensors,
                                         const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    const std::string where = "tensor " + quote(t.name);
    if (t.name.empty() || t.name == "__metadata__" || header.contains(t.name))
      fail(Kind::invalid, "safetensors", "cannot write " + where + " (empty, reserved or twice)");
    const char* dtype = t.dtype == DType::f32 ? "F32" : t.dtype == DType::bf16 ? "BF16" : t.dtype == DType::f16 ? "F16" : nullptr;
    if (!dtype) fail(Kind::invalid, "safetensors", where + ": safetensors holds F32, BF16 or F16 here, not " + dtype_name(t.dtype));
    const auto n = count_of(t.shape);
    if (n < 0) fail(Kind::invalid, "safetensors", where + " has shape " + shape_text(t.shape));
    const std::uint64_t bytes = static_cast<std::uint64_t>(n) * (t.dtype == DType::f32 ? 4 : 2);
    header[t.name] = {{"dtype", dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((std::uint64_t{text.size()} >> (8 * i)) & 0xff);
  return out + text;
}

std::string write_safetensors(const std::string& path, const Safetensors& st) {
  const std::string bytes = serialize_safetensors(st, path);
  try {
    write_file_atomically(path, bytes);
  } catch (const FileError& e) {
    throw SafetensorsError(Kind::unreadable, e.what());
  }
  const auto n = read_u64(bytes.data());
  return Json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n))["__metadata__"][kHeaderChecksumKey];
}

const SafetensorsEntry* SafetensorsHeader::find(const std::string& name) const {
  const auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                                   [](const SafetensorsEntry& e, const std::string& n) { return e.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

namespace {

// dtype's DType and element size; false for a dtype ptk does not read.
bool element_of(const std::string& dtype, DType& out, std::uint64_t& size) {
  if (dtype == "F32") out = DType::f32, size = 4;
  else if (dtype == "BF16") out = DType::bf16, size = 2;
  else if (dtype == "F16") out = DType::f16, size = 2;
  else return false;
  return true;
}

std::vector<std::int64_t> shape_of(const Json& entry, const std::string& name, const std::string& where) {
  if (!entry["shape"].is_array()) fail(Kind::invalid, name, where + "shape is not an array");
  std::vector<std::int64_t> shape;
  for (const auto& d : entry["shape"]) {
    if (!d.is_number_unsigned()) fail(Kind::invalid, name, where + "shape has a dimension that is not a non-negative integer");
    const auto v = d.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) fail(Kind::invalid, name, where + "shape dimension overflows");
    shape.push_back(static_cast<std::int64_t>(v));
  }
  return shape;
}

// One tensor's entry, checked against the data section (`data`, the bytes after the header).
SafetensorsEntry entry_of(const std::string& key, const Json& entry, std::string_view data, const std::string& name) {
  const auto where = "tensor " + quote(key) + ": ";
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets") || entry.size() != 3)
    fail(Kind::invalid, name, where + "expected exactly dtype, shape and data_offsets");
  if (!entry["dtype"].is_string()) fail(Kind::invalid, name, where + "dtype is not a string");
  const auto dtype = entry["dtype"].get<std::string>();
  SafetensorsEntry t;
  t.name = key;
  std::uint64_t size = 0;
  if (!element_of(dtype, t.dtype, size))
    fail(Kind::foreign, name, where + "dtype " + quote(dtype) + " is not supported (ptk reads F32, BF16 and F16)");
  t.shape = shape_of(entry, name, where);
  const auto& offs = entry["data_offsets"];
  if (!offs.is_array() || offs.size() != 2 || !offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
    fail(Kind::invalid, name, where + "data_offsets must be two non-negative integers");
  const auto begin = offs[0].get<std::uint64_t>(), end = offs[1].get<std::uint64_t>();
  const auto count = count_of(t.shape);
  if (count < 0) fail(Kind::invalid, name, where + "shape " + shape_text(t.shape) + " is too large");
  if (end < begin || end - begin != static_cast<std::uint64_t>(count) * size)
    fail(Kind::invalid, name, where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                                  ") do not hold the " + std::to_string(count) + " " + dtype + " values of shape " + shape_text(t.shape));
  if (end > data.size())
    fail(Kind::truncated, name, where + "data ends at byte " + std::to_string(end) + " of the data section, which has " +
                                    std::to_string(data.size()));
  t.bytes = data.substr(begin, end - begin);
  return t;
}

// The tensors must tile the data section: sorted by offset, each starts where the previous ended.
void check_tiling(const std::vector<SafetensorsEntry>& tensors, std::string_view data, const std::string& name) {
  std::vector<std::pair<std::uint64_t, const SafetensorsEntry*>> ranges;
  for (const auto& t : tensors) ranges.emplace_back(static_cast<std::uint64_t>(t.bytes.data() - data.data()), &t);
  std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second->bytes.size() < b.second->bytes.size();
  });
  std::uint64_t at = 0;
  for (const auto& [begin, t] : ranges) {
    const std::uint64_t end = begin + t->bytes.size();
    if (begin < at)
      fail(Kind::invalid, name, "tensor " + quote(t->name) + " overlaps another tensor's data (offsets [" +
                                    std::to_string(begin) + ", " + std::to_string(end) + "))");
    if (begin > at) fail(Kind::invalid, name, "the data section has a gap at bytes [" + std::to_string(at) + ", " + std::to_string(begin) + ")");
    at = end;
  }
  if (at != data.size())
    fail(Kind::invalid, name, "the data section has " + std::to_string(data.size() - at) + " bytes after the last tensor");
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view bytes, const std::string& name, bool check_data_crc) {
  if (bytes.size() < 8) fail(Kind::truncated, name, "file has " + std::to_string(bytes.size()) + " bytes, shorter than the 8-byte header length");
  const std::uint64_t n = read_u64(bytes.data());
  if (n > kMaxHeader) fail(Kind::foreign, name, "not a safetensors file (header length " + std::to_string(n) + " is implausible)");
  if (n == 0 || bytes.size() == 8 || bytes[8] != '{')
    fail(n == 0 || bytes.size() > 8 ? Kind::foreign : Kind::truncated, name, "not a safetensors file (no JSON header after the length)");
  if (n > bytes.size() - 8)
    fail(Kind::truncated, name, "header length is " + std::to_string(n) + " bytes but only " + std::to_string(bytes.size() - 8) + " follow");
  Json header;
  try {
    header = Json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const Json::exception& e) {  // parse_error, and out_of_range for a number no double holds (1e999)
    const std::string what = one_line(e.what());
    fail(Kind::invalid, name, "header is not valid JSON (" + what + ")");
  }
  if (!header.is_object()) fail(Kind::invalid, name, "header is not a JSON object");
  const std::string_view data = bytes.substr(8 + n);
  SafetensorsHeader out;
  for (const auto& [key, entry] : header.items()) {
    if (key != "__metadata__") {
      out.tensors.push_back(entry_of(key, entry, data, name));
      continue;
    }
    if (!entry.is_object()) fail(Kind::invalid, name, "__metadata__ is not a JSON object");
    for (const auto& [mk, mv] : entry.items()) {
      if (!mv.is_string()) fail(Kind::invalid, name, "__metadata__ value for " + quote(mk) + " is not a string");
      out.metadata[mk] = mv.get<std::string>();
    }
  }
  check_tiling(out.tensors, data, name);  // (items() iterates the keys sorted: out.tensors is sorted by name)
  const auto hcrc = out.metadata.find(kHeaderChecksumKey);
  if (hcrc != out.metadata.end()) {
    const auto actual = header_crc(header);
    if (hcrc->second != actual)
      fail(Kind::corrupted, name, "header checksum mismatch: the header's CRC-32 is " + actual + " but it says " +
                                      quote(hcrc->second));
  }
  const auto crc = out.metadata.find(kChecksumKey);
  if (check_data_crc && crc != out.metadata.end()) {
    const auto actual = crc32_hex(data.data(), data.size());
    if (crc->second != actual)
      fail(Kind::corrupted, name, "checksum mismatch: the data's CRC-32 is " + actual + " but the header says " + quote(crc->second));
  }
  return out;
}

Safetensors parse_safetensors(const std::string& bytes, const std::string& name, const std::vector<std::string>& required) {
  const SafetensorsHeader header = parse_safetensors_header(bytes, name);
  Safetensors out;
  out.metadata = header.metadata;
  for (const auto& e : header.tensors) {
    if (e.dtype != DType::f32)
      fail(Kind::foreign, name, "tensor " + quote(e.name) + ": dtype " + (e.dtype == DType::bf16 ? "'BF16'" : "'F16'") +
                                    " is not supported here (a ptk checkpoint holds F32 only)");
    SafetensorsTensor t;
    t.shape = e.shape;
    t.data.resize(e.bytes.size() / sizeof(float));
    if (!e.bytes.empty()) std::memcpy(t.data.data(), e.bytes.data(), e.bytes.size());
    out.tensors.emplace(e.name, std::move(t));
  }
  for (const auto& r : required)
    if (!out.tensors.count(r)) fail(Kind::foreign, name, "missing tensor " + quote(r));
  return out;
}

Safetensors read_safetensors(const std::string& path, const std::vector<std::string>& required) {
  std::string bytes;
  try {
    bytes = read_regular_file(path);  // a device, fifo or directory is refused, not read
  } catch (const FileError& e) {
    throw SafetensorsError(Kind::unreadable, e.what());
  }
  return parse_safetensors(bytes, path, required);
}

}  // namespace ptk::io
