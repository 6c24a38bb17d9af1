// GGUF v3 (io/gguf.hpp): the bytes of a small file written out by hand from the specification; round trips of every
// metadata type and every tensor type ptk has; a hostile file of each kind refused with one line, and every
// truncation of a valid file refused. llama.cpp reading ptk's files: tests/llama_cpp_test.sh.
#include "ptk/io/gguf.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "ptk/io/mapped_file.hpp"

namespace {

using namespace ptk::io;

std::string le64(std::uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }
std::string le32(std::uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string gstr(const std::string& s) { return le64(s.size()) + s; }

// One metadata entry "a" = u32 7 and one f32 tensor "t" of shape [2] = {1, 2}, as the specification lays them out.
std::string hand_written() {
  std::string b = "GGUF" + le32(3) + le64(1) + le64(1);
  b += gstr("a") + le32(4) + le32(7);
  b += gstr("t") + le32(1) + le64(2) + le32(0) + le64(0);
  b.resize(96, '\0');  // the header's 74 bytes padded to the alignment, 32
  const float v[2] = {1, 2};
  b.append(reinterpret_cast<const char*>(v), 8);
  return b;
}

TEST(Gguf, BytesAsTheSpecificationLaysThemOut) {
  const float v[2] = {1, 2};
  const std::string bytes = serialize_gguf({{"a", GgufValue::of_u32(7)}},
                                           {{"t", {2}, ptk::DType::f32, std::string_view(reinterpret_cast<const char*>(v), 8)}});
  EXPECT_EQ(bytes, hand_written() + std::string(24, '\0'));  // each tensor padded to the alignment, as ggml writes
  const Gguf g = parse_gguf(hand_written(), "hand");
  ASSERT_EQ(g.tensors.size(), 1u);
  EXPECT_EQ(g.tensors[0].offset, 96u);
  EXPECT_EQ(g.find("a")->ints, (std::vector<std::int64_t>{7}));
}

TEST(Gguf, EveryTypeRoundTrips) {
  GgufMetadata kv = {{"general.architecture", GgufValue::of_string("llama")},
                     {"f", GgufValue::of_f32(0.5f)},
                     {"b", GgufValue::of_bool(true)},
                     {"tokens", GgufValue::of_strings({"<s>", "", "\xE2\x96\x81the"})},
                     {"scores", GgufValue::of_f32s({-1.5f, 0.f, 3.25f})},
                     {"types", GgufValue::of_i32s({1, 3, -2})}};
  for (auto t : {GgufType::u8, GgufType::i8, GgufType::u16, GgufType::i16, GgufType::u32, GgufType::i32,
                 GgufType::u64, GgufType::i64}) {
    GgufValue v;
    v.type = t;
    v.ints = {t == GgufType::i8 || t == GgufType::i16 || t == GgufType::i32 || t == GgufType::i64 ? -5 : 200};
    kv.emplace_back("int." + std::to_string(static_cast<int>(t)), v);
  }
  GgufValue f64;
  f64.type = GgufType::f64;
  f64.floats = {1e300};
  kv.emplace_back("f64", f64);
  std::vector<std::string> data;
  std::vector<GgufTensorData> tensors;
  const std::pair<ptk::DType, std::vector<std::int64_t>> kinds[] = {
      {ptk::DType::f32, {3, 5}}, {ptk::DType::f16, {7}}, {ptk::DType::bf16, {2, 3, 4}},
      {ptk::DType::q8_0, {3, 64}}, {ptk::DType::q4_0, {1, 2, 1, 32}}};
  for (const auto& [dtype, shape] : kinds) {
    std::string b(gguf_tensor_bytes(shape, dtype), '\0');
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i * 7 + data.size());
    data.push_back(b);
  }
  for (std::size_t i = 0; i < data.size(); ++i)
    tensors.push_back({"t" + std::to_string(i), kinds[i].second, kinds[i].first, data[i]});
  for (std::uint64_t alignment : {32u, 64u, 1u}) {
    const std::string file = serialize_gguf(kv, tensors, alignment);
    const Gguf g = parse_gguf(file, "round trip");
    EXPECT_EQ(g.alignment, alignment);
    ASSERT_EQ(g.metadata.size(), kv.size() + (alignment != 32));
    for (const auto& [k, v] : kv) {
      const GgufValue* got = g.find(k);
      ASSERT_NE(got, nullptr) << k;
      EXPECT_EQ(got->type, v.type) << k;
      EXPECT_EQ(got->array, v.array) << k;
      EXPECT_EQ(got->ints, v.ints) << k;
      EXPECT_EQ(got->floats, v.floats) << k;
      EXPECT_EQ(got->strings, v.strings) << k;
    }
    ASSERT_EQ(g.tensors.size(), tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(g.tensors[i].shape, tensors[i].shape);
      EXPECT_EQ(g.tensors[i].dtype, tensors[i].dtype);
      EXPECT_EQ(g.tensors[i].offset % alignment, 0u);
      EXPECT_EQ(file.substr(g.tensors[i].offset, g.tensors[i].bytes), data[i]) << "tensor " << i;
    }
  }
}

void expect_refused(const std::string& bytes, const std::string& needle) {
  try {
    parse_gguf(bytes, "bad.gguf");
    ADD_FAILURE() << "accepted; expected a refusal naming '" << needle << "'";
  } catch (const GgufError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(Gguf, HostileFilesAreRefusedInOneLine) {
  const std::string ok = hand_written();
  for (std::size_t n = 0; n < ok.size(); ++n)  // every cut: in the header, in the padding, in the data
    EXPECT_THROW(parse_gguf(ok.substr(0, n), "cut"), GgufError) << "cut at " << n;
  expect_refused(ok.substr(0, 100), "runs past the end of the file");
  const std::string head = "GGUF" + le32(3);
  expect_refused("GGUG" + ok.substr(4), "no \"GGUF\" magic");
  expect_refused("GGUF" + le32(0x03000000) + ok.substr(8), "big-endian");
  expect_refused("GGUF" + le32(1) + ok.substr(8), "GGUF version 1");
  expect_refused(head + le64(0) + le64(1000000000), "1000000000 metadata entries cannot fit");
  expect_refused(head + le64(1ull << 60) + le64(0), "tensors cannot fit");
  expect_refused(head + le64(0) + le64(1) + le64(1ull << 62) + "x" + std::string(20, '\0'), "truncated: a metadata key");
  expect_refused(head + le64(0) + le64(1) + gstr("k") + le32(9) + le32(8) + le64(1ull << 40) + std::string(16, 'a'),
                 "an array of 1099511627776 elements cannot fit");
  expect_refused(head + le64(0) + le64(1) + gstr("k") + le32(9) + le32(9) + le64(1) + std::string(16, 'a'), "arrays of arrays");
  expect_refused(head + le64(0) + le64(1) + gstr("k") + le32(13) + std::string(16, 'a'), "value type 13 is not a GGUF type");
  expect_refused(head + le64(0) + le64(2) + gstr("k") + le32(4) + le32(1) + gstr("k") + le32(4) + le32(1), "'k' appears twice");
  expect_refused(head + le64(0) + le64(1) + gstr("general.alignment") + le32(4) + le32(3), "not a power of two");
  const std::string kv = le64(1) + gstr("a") + le32(4) + le32(7);
  const auto tensor = [&](std::uint32_t dims, std::uint64_t ne, std::uint32_t type, std::uint64_t offset) {
    std::string t = gstr("t") + le32(dims);
    for (std::uint32_t d = 0; d < dims; ++d) t += le64(ne);
    return t + le32(type) + le64(offset);
  };
  const auto file = [&](const std::string& infos, int n) {
    std::string b = head + le64(n) + kv + infos;
    b.resize(((b.size() + 31) / 32) * 32 + 256, '\0');
    return b;
  };
  expect_refused(file(tensor(5, 2, 0, 0), 1), "has 5 dimensions");
  expect_refused(file(tensor(1, 0, 0, 0), 1), "dimension 0 = 0");
  expect_refused(file(tensor(4, 1ull << 20, 0, 0), 1), "at most 2^52 elements");
  expect_refused(file(tensor(1, 64, 12, 0), 1), "ggml type 12 (Q4_K), not one ptk reads");
  expect_refused(file(tensor(1, 48, 8, 0), 1), "rows of 48 values, not whole blocks of 32");
  expect_refused(file(tensor(1, 2, 0, 4), 1), "not a multiple of the alignment 32");
  expect_refused(file(tensor(1, 64, 0, 224), 1), "runs past the end of the file");
  expect_refused(file(tensor(1, 64, 0, 1ull << 63), 1), "runs past the end of the file");
  expect_refused(file(tensor(1, 16, 0, 0) + tensor(1, 16, 0, 32), 2), "'t' appears twice");
  std::string overlap = tensor(1, 16, 0, 0) + gstr("u") + le32(1) + le64(16) + le32(0) + le64(64);
  EXPECT_NO_THROW(parse_gguf(file(overlap, 2), "adjacent"));
  overlap = tensor(1, 16, 0, 0) + gstr("u") + le32(1) + le64(16) + le32(0) + le64(32);
  expect_refused(file(overlap, 2), "two tensors overlap");
}

TEST(Gguf, WriterRefusesBytesThatDoNotMatchTheShape) {
  EXPECT_THROW(serialize_gguf({}, {{"t", {3}, ptk::DType::f32, std::string_view("12345678")}}), GgufError);
  EXPECT_THROW(serialize_gguf({}, {{"t", {}, ptk::DType::f32, std::string_view()}}), GgufError);
  EXPECT_THROW(serialize_gguf({}, {}, 3), GgufError);
}

TEST(Gguf, MappedFileSeesTheBytesAndRefusesDevices) {
  const std::string path = testing::TempDir() + "ptk_mapped_test.gguf";
  std::ofstream(path, std::ios::binary) << hand_written();
  {
    const MappedFile m(path);
    EXPECT_EQ(m.bytes(), hand_written());
    EXPECT_EQ(parse_gguf(m.bytes(), path).tensors.size(), 1u);
  }
  std::remove(path.c_str());
  EXPECT_THROW(MappedFile("/dev/zero"), FileError);
  EXPECT_THROW(MappedFile("/nonexistent/file.gguf"), FileError);
}

}  // namespace
