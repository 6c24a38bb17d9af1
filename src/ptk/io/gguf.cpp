#include "ptk/io/gguf.hpp"

#include "ptk/core/quote.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace ptk::io {

namespace {

constexpr std::uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr std::uint32_t kMaxDims = 4;         // GGML_MAX_DIMS

// ggml's type ids of the tensor types ptk has, and the names of some it has not (for the refusal's message).
struct TypeId {
  std::uint32_t id;
  DType dtype;
};
constexpr TypeId kTypes[] = {{0, DType::f32}, {1, DType::f16}, {2, DType::q4_0}, {8, DType::q8_0}, {30, DType::bf16}};
const std::map<std::uint32_t, const char*> kOtherTypes = {
    {3, "Q4_1"}, {6, "Q5_0"}, {7, "Q5_1"}, {9, "Q8_1"}, {10, "Q2_K"}, {11, "Q3_K"}, {12, "Q4_K"}, {13, "Q5_K"},
    {14, "Q6_K"}, {15, "Q8_K"}, {24, "I8"}, {25, "I16"}, {26, "I32"}, {27, "I64"}, {28, "F64"}};

std::uint32_t type_id(DType d) {
  for (const auto& t : kTypes)
    if (t.dtype == d) return t.id;
  return 0;
}

// Fixed sizes of the scalar types (string: its length field only).
std::uint64_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    case GgufType::u64: case GgufType::i64: case GgufType::f64: case GgufType::string: return 8;
    case GgufType::array: return 12;
  }
  return 1;
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& name) : b_(bytes), name_(name) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw GgufError(name_ + ": " + what + " (at byte " + std::to_string(at_) + " of " + std::to_string(b_.size()) + ")");
  }
  std::uint64_t left() const { return b_.size() - at_; }
  std::uint64_t at() const { return at_; }
  void need(std::uint64_t n, const char* what) const {
    if (n > left()) fail(std::string("truncated: ") + what + " needs " + std::to_string(n) + " bytes, " + std::to_string(left()) + " left");
  }
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string str(const char* what) {
    const auto n = get<std::uint64_t>(what);
    need(n, what);
    std::string s(b_.substr(at_, n));
    at_ += n;
    return s;
  }

 private:
  std::string_view b_;
  const std::string& name_;
  std::uint64_t at_ = 0;
};

GgufType value_type(Reader& r, const std::string& key, bool element) {
  const auto t = r.get<std::uint32_t>("a value type");
  if (t > static_cast<std::uint32_t>(GgufType::f64) || (element && t == static_cast<std::uint32_t>(GgufType::array)))
    r.fail("metadata " + key + ": " + (element ? "array element type " : "value type ") + std::to_string(t) +
           (element && t == 9 ? " (arrays of arrays are not supported)" : " is not a GGUF type"));
  return static_cast<GgufType>(t);
}

void read_scalar(Reader& r, GgufType t, GgufValue& v) {
  switch (t) {
    case GgufType::u8: v.ints.push_back(r.get<std::uint8_t>("a u8")); break;
    case GgufType::i8: v.ints.push_back(r.get<std::int8_t>("an i8")); break;
    case GgufType::u16: v.ints.push_back(r.get<std::uint16_t>("a u16")); break;
    case GgufType::i16: v.ints.push_back(r.get<std::int16_t>("an i16")); break;
    case GgufType::u32: v.ints.push_back(r.get<std::uint32_t>("a u32")); break;
    case GgufType::i32: v.ints.push_back(r.get<std::int32_t>("an i32")); break;
    case GgufType::u64: v.ints.push_back(static_cast<std::int64_t>(r.get<std::uint64_t>("a u64"))); break;
    case GgufType::i64: v.ints.push_back(r.get<std::int64_t>("an i64")); break;
    case GgufType::boolean: {
      const auto b = r.get<std::uint8_t>("a bool");
      if (b > 1) r.fail("a bool is " + std::to_string(b) + ", not 0 or 1");
      v.ints.push_back(b);
      break;
    }
    case GgufType::f32: v.floats.push_back(r.get<float>("an f32")); break;
    case GgufType::f64: v.floats.push_back(r.get<double>("an f64")); break;
    case GgufType::string: v.strings.push_back(r.str("a string")); break;
    case GgufType::array: break;  // not a scalar: value_type() refused it
  }
}

GgufValue read_value(Reader& r, const std::string& key) {
  GgufValue v;
  v.type = value_type(r, key, false);
  if (v.type != GgufType::array) {
    read_scalar(r, v.type, v);
    return v;
  }
  v.array = true;
  v.type = value_type(r, key, true);
  const auto n = r.get<std::uint64_t>("an array length");
  if (n > r.left() / scalar_size(v.type))  // every element takes at least this much: a lying count ends here
    r.fail("metadata " + key + ": an array of " + std::to_string(n) + " elements cannot fit in the " +
           std::to_string(r.left()) + " bytes left");
  if (v.type == GgufType::string) v.strings.reserve(n);
  else if (v.type == GgufType::f32 || v.type == GgufType::f64) v.floats.reserve(n);
  else v.ints.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) read_scalar(r, v.type, v);
  return v;
}

std::uint64_t align_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

GgufValue GgufValue::of_string(std::string s) { GgufValue v; v.type = GgufType::string; v.strings = {std::move(s)}; return v; }
GgufValue GgufValue::of_u32(std::uint32_t x) { GgufValue v; v.type = GgufType::u32; v.ints = {x}; return v; }
GgufValue GgufValue::of_f32(float x) { GgufValue v; v.type = GgufType::f32; v.floats = {x}; return v; }
GgufValue GgufValue::of_bool(bool x) { GgufValue v; v.type = GgufType::boolean; v.ints = {x}; return v; }
GgufValue GgufValue::of_strings(std::vector<std::string> s) {
  GgufValue v; v.type = GgufType::string; v.array = true; v.strings = std::move(s); return v;
}
GgufValue GgufValue::of_f32s(const std::vector<float>& x) {
  GgufValue v; v.type = GgufType::f32; v.array = true; v.floats.assign(x.begin(), x.end()); return v;
}
GgufValue GgufValue::of_i32s(const std::vector<std::int32_t>& x) {
  GgufValue v; v.type = GgufType::i32; v.array = true; v.ints.assign(x.begin(), x.end()); return v;
}
std::size_t GgufValue::count() const { return ints.size() + floats.size() + strings.size(); }

const GgufValue* Gguf::find(const std::string& key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensorInfo* Gguf::tensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::uint64_t gguf_tensor_bytes(const std::vector<std::int64_t>& shape, DType dtype) {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  switch (dtype) {
    case DType::f32: return 4 * n;
    case DType::f16: case DType::bf16: return 2 * n;
    case DType::q8_0: return n / 32 * 34;
    case DType::q4_0: return n / 32 * 18;
  }
  return 0;
}

Gguf parse_gguf(std::string_view bytes, const std::string& name) {
  Reader r(bytes, name);
  if (bytes.size() < 4 || r.get<std::uint32_t>("the magic") != kMagic) r.fail("not a GGUF file (no \"GGUF\" magic)");
  Gguf g;
  g.version = r.get<std::uint32_t>("the version");
  if (g.version == 0x03000000 || g.version == 0x02000000) r.fail("a big-endian GGUF file (not supported)");
  if (g.version != 3 && g.version != 2) r.fail("GGUF version " + std::to_string(g.version) + " (ptk reads 2 and 3)");
  const auto n_tensors = r.get<std::uint64_t>("the tensor count");
  const auto n_kv = r.get<std::uint64_t>("the metadata count");
  if (n_kv > r.left() / 13) r.fail(std::to_string(n_kv) + " metadata entries cannot fit in the file");
  if (n_tensors > r.left() / 32) r.fail(std::to_string(n_tensors) + " tensors cannot fit in the file");
  std::set<std::string> keys;
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.str("a metadata key");
    if (!keys.insert(key).second) r.fail("metadata key " + quote(key) + " appears twice");
    GgufValue v = read_value(r, quote(key));
    if (key == "general.alignment") {
      if (v.array || v.type != GgufType::u32 || v.ints[0] == 0 || (v.ints[0] & (v.ints[0] - 1)) != 0)
        r.fail("general.alignment is not a power of two (u32)");
      g.alignment = static_cast<std::uint64_t>(v.ints[0]);
    }
    g.metadata.emplace_back(std::move(key), std::move(v));
  }
  std::set<std::string> names;
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.name = r.str("a tensor name");
    const std::string tn = "tensor " + quote(t.name);
    if (!names.insert(t.name).second) r.fail(tn + " appears twice");
    const auto dims = r.get<std::uint32_t>("a dimension count");
    if (dims == 0 || dims > kMaxDims) r.fail(tn + " has " + std::to_string(dims) + " dimensions (1 to 4)");
    std::uint64_t n = 1;
    t.shape.assign(dims, 0);
    for (std::uint32_t d = 0; d < dims; ++d) {
      const auto ne = r.get<std::uint64_t>("a dimension");
      if (ne == 0 || ne > (std::uint64_t{1} << 40) || n > (std::uint64_t{1} << 52) / ne)
        r.fail(tn + " has dimension " + std::to_string(d) + " = " + std::to_string(ne) + " (1 to 2^40, at most 2^52 elements)");
      n *= ne;
      t.shape[dims - 1 - d] = static_cast<std::int64_t>(ne);
    }
    const auto type = r.get<std::uint32_t>("a tensor type");
    const auto known = std::find_if(std::begin(kTypes), std::end(kTypes), [&](const TypeId& k) { return k.id == type; });
    if (known == std::end(kTypes)) {
      const auto other = kOtherTypes.find(type);
      r.fail(tn + " has ggml type " + std::to_string(type) +
             (other != kOtherTypes.end() ? std::string(" (") + other->second + ")" : std::string()) +
             ", not one ptk reads (F32, F16, BF16, Q8_0, Q4_0)");
    }
    t.dtype = known->dtype;
    if ((t.dtype == DType::q8_0 || t.dtype == DType::q4_0) && t.shape.back() % 32 != 0)
      r.fail(tn + " is " + dtype_name(t.dtype) + " with rows of " + std::to_string(t.shape.back()) + " values, not whole blocks of 32");
    t.bytes = gguf_tensor_bytes(t.shape, t.dtype);
    t.offset = r.get<std::uint64_t>("a tensor offset");
    if (t.offset % g.alignment != 0) r.fail(tn + " starts at " + std::to_string(t.offset) + ", not a multiple of the alignment " + std::to_string(g.alignment));
    g.tensors.push_back(std::move(t));
  }
  const std::uint64_t data = align_up(r.at(), g.alignment);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (auto& t : g.tensors) {
    if (t.offset > bytes.size() || data > bytes.size() - t.offset || t.bytes > bytes.size() - t.offset - data)
      throw GgufError(name + ": tensor " + quote(t.name) + " (" + std::to_string(t.bytes) + " bytes at data offset " +
                      std::to_string(t.offset) + ") runs past the end of the file (" + std::to_string(bytes.size()) + " bytes)");
    t.offset += data;
    ranges.emplace_back(t.offset, t.offset + t.bytes);
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      throw GgufError(name + ": two tensors overlap (bytes " + std::to_string(ranges[i].first) + " to " +
                      std::to_string(ranges[i - 1].second) + ")");
  return g;
}

namespace {

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_string(std::string& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  out += s;
}

void put_scalar(std::string& out, GgufType t, const GgufValue& v, std::size_t i) {
  switch (t) {
    case GgufType::u8: case GgufType::boolean: put(out, static_cast<std::uint8_t>(v.ints[i])); break;
    case GgufType::i8: put(out, static_cast<std::int8_t>(v.ints[i])); break;
    case GgufType::u16: put(out, static_cast<std::uint16_t>(v.ints[i])); break;
    case GgufType::i16: put(out, static_cast<std::int16_t>(v.ints[i])); break;
    case GgufType::u32: put(out, static_cast<std::uint32_t>(v.ints[i])); break;
    case GgufType::i32: put(out, static_cast<std::int32_t>(v.ints[i])); break;
    case GgufType::u64: put(out, static_cast<std::uint64_t>(v.ints[i])); break;
    case GgufType::i64: put(out, v.ints[i]); break;
    case GgufType::f32: put(out, static_cast<float>(v.floats[i])); break;
    case GgufType::f64: put(out, v.floats[i]); break;
    case GgufType::string: put_string(out, v.strings[i]); break;
    case GgufType::array: break;
  }
}

void put_value(std::string& out, const std::string& key, const GgufValue& v) {
  const bool is_float = v.type == GgufType::f32 || v.type == GgufType::f64;
  const std::size_t n = v.type == GgufType::string ? v.strings.size() : is_float ? v.floats.size() : v.ints.size();
  if (v.type == GgufType::array || (!v.array && n != 1) || v.count() != n)
    throw GgufError("gguf: metadata " + key + ": a value holds " + std::to_string(v.count()) + " items of other kinds");
  if (v.array) {
    put(out, static_cast<std::uint32_t>(GgufType::array));
    put(out, static_cast<std::uint32_t>(v.type));
    put<std::uint64_t>(out, n);
  } else {
    put(out, static_cast<std::uint32_t>(v.type));
  }
  for (std::size_t i = 0; i < n; ++i) put_scalar(out, v.type, v, i);
}

}  // namespace

std::string serialize_gguf_header(const GgufMetadata& metadata, const std::vector<GgufTensorSpec>& tensors,
                                  std::uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) throw GgufError("gguf: alignment " + std::to_string(alignment) + " is not a power of two");
  GgufMetadata kv;
  std::set<std::string> keys;
  for (const auto& [k, v] : metadata) {
    if (!keys.insert(k).second) throw GgufError("gguf: metadata key " + quote(k) + " given twice");
    if (k == "general.alignment") continue;  // written from `alignment`
    kv.emplace_back(k, v);
  }
  if (alignment != 32) kv.insert(kv.begin(), {"general.alignment", GgufValue::of_u32(static_cast<std::uint32_t>(alignment))});
  std::string out;
  put(out, kMagic);
  put<std::uint32_t>(out, 3);
  put<std::uint64_t>(out, tensors.size());
  put<std::uint64_t>(out, kv.size());
  for (const auto& [k, v] : kv) {
    put_string(out, k);
    put_value(out, k, v);
  }
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (!names.insert(t.name).second) throw GgufError("gguf: tensor " + quote(t.name) + " given twice");
    if (t.shape.empty() || t.shape.size() > kMaxDims) throw GgufError("gguf: tensor " + quote(t.name) + " has " + std::to_string(t.shape.size()) + " dimensions (1 to 4)");
    put_string(out, t.name);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put<std::uint64_t>(out, static_cast<std::uint64_t>(*d));
    put<std::uint32_t>(out, type_id(t.dtype));
    put<std::uint64_t>(out, offset);
    offset = align_up(offset + gguf_tensor_bytes(t.shape, t.dtype), alignment);
  }
  out.resize(align_up(out.size(), alignment), '\0');
  return out;
}

std::string serialize_gguf(const GgufMetadata& metadata, const std::vector<GgufTensorData>& tensors,
                           std::uint64_t alignment) {
  std::vector<GgufTensorSpec> specs;
  for (const auto& t : tensors) {
    if (t.bytes.size() != gguf_tensor_bytes(t.shape, t.dtype))
      throw GgufError("gguf: tensor " + quote(t.name) + " has " + std::to_string(t.bytes.size()) + " bytes, its shape needs " +
                      std::to_string(gguf_tensor_bytes(t.shape, t.dtype)));
    specs.push_back({t.name, t.shape, t.dtype});
  }
  std::string out = serialize_gguf_header(metadata, specs, alignment);
  for (const auto& t : tensors) {
    out.append(t.bytes.data(), t.bytes.size());
    out.resize(align_up(out.size(), alignment), '\0');
  }
  return out;
}

}  // namespace ptk::io
