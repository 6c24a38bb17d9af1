// safetensors: round trip, and every kind of bad file gives a SafetensorsError of the right kind with a
// one-line message that starts with the file name.
#include <gtest/gtest.h>

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "ptk/io/atomic_file.hpp"
#include "ptk/io/safetensors.hpp"

namespace {

using ptk::io::Safetensors;
using ptk::io::SafetensorsError;
using Kind = SafetensorsError::Kind;

Safetensors sample() {
  Safetensors st;
  st.tensors["wte.weight"] = {{3, 2}, {1.0f, -2.0f, 3.5f, 0.0f, -0.0f, 1e-30f}};
  st.tensors["ln_f.bias"] = {{4}, {0.25f, 0.5f, 0.75f, 1.0f}};
  st.tensors["empty"] = {{0, 5}, {}};
  st.tensors["scalar"] = {{}, {42.0f}};
  st.metadata["step"] = "17";
  st.metadata["vocab"] = "\n !\"abc";
  return st;
}

// The 8-byte length + header of a file built by hand.
std::string file_with_header(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + data;
}

::testing::AssertionResult rejects(const std::string& bytes, Kind kind, const std::string& fragment,
                                   const std::vector<std::string>& required = {}) {
  try {
    ptk::io::parse_safetensors(bytes, "ckpt.safetensors", required);
  } catch (const SafetensorsError& e) {
    const std::string msg = e.what();
    if (e.kind() != kind)
      return ::testing::AssertionFailure() << "kind " << ptk::io::to_string(e.kind()) << ", want " << ptk::io::to_string(kind) << ": " << msg;
    if (msg.rfind("ckpt.safetensors: ", 0) != 0 || msg.find('\n') != std::string::npos)
      return ::testing::AssertionFailure() << "not one line starting with the file name: " << msg;
    if (msg.find(fragment) == std::string::npos) return ::testing::AssertionFailure() << "'" << fragment << "' not in: " << msg;
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "accepted";
}

TEST(Safetensors, RoundTripThroughAFile) {
  const std::string path = testing::TempDir() + "ptk_safetensors_test.safetensors";
  ptk::io::write_safetensors(path, sample());
  const auto back = ptk::io::read_safetensors(path, {"wte.weight", "ln_f.bias"});
  std::remove(path.c_str());
  const auto want = sample();
  ASSERT_EQ(back.tensors.size(), want.tensors.size());
  for (const auto& [k, t] : want.tensors) {
    EXPECT_EQ(back.tensors.at(k).shape, t.shape) << k;
    EXPECT_EQ(back.tensors.at(k).data, t.data) << k;
  }
  EXPECT_EQ(back.metadata.at("step"), "17");
  EXPECT_EQ(back.metadata.at("vocab"), want.metadata.at("vocab"));
  EXPECT_EQ(back.metadata.at(ptk::io::kChecksumKey).size(), 8u);
}

TEST(Safetensors, LayoutIsTheStandardOne) {
  const auto bytes = ptk::io::serialize_safetensors(sample());
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t{static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)])} << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  // Data: tensors sorted by name, back to back: empty (0 B), ln_f.bias (16 B), scalar (4 B), wte.weight (24 B).
  EXPECT_EQ(bytes.size(), 8 + n + 44);
  const std::string header = bytes.substr(8, n);
  EXPECT_NE(header.find("\"ln_f.bias\":{\"data_offsets\":[0,16],\"dtype\":\"F32\",\"shape\":[4]}"), std::string::npos) << header;
  EXPECT_EQ(ptk::io::crc32_hex("123456789", 9), "cbf43926");  // the standard CRC-32 check value
}

TEST(Safetensors, RejectsTruncatedFiles) {
  const auto bytes = ptk::io::serialize_safetensors(sample());
  EXPECT_TRUE(rejects(bytes.substr(0, 5), Kind::truncated, "shorter than the 8-byte header length"));
  EXPECT_TRUE(rejects(bytes.substr(0, 40), Kind::truncated, "header length is"));
  EXPECT_TRUE(rejects(bytes.substr(0, bytes.size() - 1), Kind::truncated, "data ends at byte"));
}

TEST(Safetensors, DetectsAFlippedDataByte) {
  auto bytes = ptk::io::serialize_safetensors(sample());
  bytes[bytes.size() - 3] ^= 0x10;
  EXPECT_TRUE(rejects(bytes, Kind::corrupted, "checksum mismatch"));
}

// The header has its own CRC: a changed metadata value (here "step": "17" -> "18", same length, so every
// offset and the data CRC still agree) is caught.
TEST(Safetensors, DetectsAChangedHeader) {
  auto bytes = ptk::io::serialize_safetensors(sample());
  const auto at = bytes.find("\"step\":\"17\"");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 9] = '8';
  EXPECT_TRUE(rejects(bytes, Kind::corrupted, "header checksum mismatch"));
}

TEST(Safetensors, RejectsForeignFiles) {
  EXPECT_TRUE(rejects("PK\x03\x04 this is a zip file, not a checkpoint", Kind::foreign, "not a safetensors file"));
  EXPECT_TRUE(rejects(file_with_header("[1, 2]  ", ""), Kind::foreign, "not a safetensors file"));
  EXPECT_TRUE(rejects(file_with_header(R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", "abcd"), Kind::foreign,
                      "dtype 'F16' is not supported"));
  EXPECT_TRUE(rejects(ptk::io::serialize_safetensors(sample()), Kind::foreign, "missing tensor 'h.0.ln_1.weight'",
                      {"wte.weight", "h.0.ln_1.weight"}));
}

// The header reader of Hugging Face weights (parse_safetensors_header): F32, BF16 and F16 read in place, each
// tensor's bytes checked against its dtype's size, other dtypes refused by name.
TEST(Safetensors, HeaderReaderTakesSixteenBitTensorsInPlace) {
  const std::string file = file_with_header(
      R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[1,3],"data_offsets":[4,10]},)"
      R"("c":{"dtype":"F32","shape":[1],"data_offsets":[10,14]}})",
      "abcdefghijklmn");
  const auto h = ptk::io::parse_safetensors_header(file, "hf.safetensors");
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.find("a")->dtype, ptk::DType::bf16);
  EXPECT_EQ(h.find("b")->dtype, ptk::DType::f16);
  EXPECT_EQ(h.find("b")->shape, (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(h.find("b")->bytes, "efghij");
  EXPECT_EQ(h.find("b")->bytes.data(), file.data() + file.size() - 10);  // a view of the file, not a copy
  EXPECT_EQ(h.find("z"), nullptr);
  const auto refuses = [](const std::string& bytes, const std::string& needle) {
    try {
      ptk::io::parse_safetensors_header(bytes, "hf.safetensors");
    } catch (const ptk::io::SafetensorsError& e) {
      return std::string(e.what()).find(needle) != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(refuses(file_with_header(R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", "abcdefgh"),
                      "tensor 'i': dtype 'I64' is not supported (ptk reads F32, BF16 and F16)"));
  EXPECT_TRUE(refuses(file_with_header(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,8]}})", "abcdefgh"),
                      "do not hold the 2 BF16 values of shape [2]"));
  EXPECT_TRUE(refuses(std::string("\x08\0\0\0\0\0\0\0", 8), "no JSON header"));  // a length and nothing after it
}

TEST(Safetensors, StreamedHeaderTilesTheTensorsInOrder) {
  using ptk::DType;
  const std::string head = ptk::io::serialize_safetensors_header(
      {{"w", DType::bf16, {2, 3}}, {"n", DType::f32, {3}}, {"h", DType::f16, {1}}}, {{"format", "pt"}});
  EXPECT_EQ(head.size() % 8, 0u);
  const std::string data = "0123456789ab" "cdefghijklmn" "op";  // 6 bf16, 3 f32, 1 f16 in the given order
  const std::string file = head + data;  // the header's views point into it
  const auto h = ptk::io::parse_safetensors_header(file, "hf.safetensors");
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.find("w")->bytes, "0123456789ab");
  EXPECT_EQ(h.find("n")->bytes, "cdefghijklmn");
  EXPECT_EQ(h.find("h")->bytes, "op");
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_THROW(ptk::io::serialize_safetensors_header({{"q", DType::q8_0, {32}}}, {}), SafetensorsError);
  EXPECT_THROW(ptk::io::serialize_safetensors_header({{"a", DType::f32, {1}}, {"a", DType::f32, {1}}}, {}), SafetensorsError);
}

TEST(Safetensors, RejectsInvalidHeaders) {
  EXPECT_TRUE(rejects(file_with_header(R"({"w":{"dtype":"F32","shape":[1],)", "abcd"), Kind::invalid, "not valid JSON"));
  EXPECT_TRUE(rejects(file_with_header(R"({"w":{"dtype":"F32","shape":[2]}})", "abcdefgh"), Kind::invalid,
                      "expected exactly dtype, shape and data_offsets"));
  EXPECT_TRUE(rejects(file_with_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"), Kind::invalid,
                      "do not hold the 2 F32 values"));
  EXPECT_TRUE(rejects(file_with_header(R"({"__metadata__":{"step":3}})", ""), Kind::invalid, "is not a string"));
  EXPECT_TRUE(rejects(file_with_header(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd"), Kind::invalid,
                      "not a non-negative integer"));
  // A number JSON can write but a double cannot hold (found by the safetensors fuzz target: nlohmann throws
  // out_of_range, not parse_error, and it escaped the reader).
  EXPECT_TRUE(rejects(file_with_header(R"({"w":{"dtype":"F32","shape":[4e44444444],"data_offsets":[0,4]}})", "abcd"),
                      Kind::invalid, "not valid JSON"));
}

TEST(Safetensors, RejectsOverlapsGapsAndTrailingData) {
  EXPECT_TRUE(rejects(file_with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                       std::string(12, 'x')),
                      Kind::invalid, "overlaps another tensor's data"));
  EXPECT_TRUE(rejects(file_with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, 'x')),
                      Kind::invalid, "has a gap at bytes [0, 4)"));
  EXPECT_TRUE(rejects(file_with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string(8, 'x')),
                      Kind::invalid, "4 bytes after the last tensor"));
}

TEST(Safetensors, ReadsFilesWithoutAChecksum) {
  const auto st = ptk::io::parse_safetensors(
      file_with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string("\0\0\x80?", 4)), "x");
  EXPECT_EQ(st.tensors.at("a").data, std::vector<float>{1.0f});
}

TEST(Safetensors, UnreadableAndUnwritable) {
  try {
    ptk::io::read_safetensors("/nonexistent/ckpt.safetensors");
    FAIL() << "accepted";
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(e.kind(), Kind::unreadable);
    EXPECT_STREQ(e.what(), "/nonexistent/ckpt.safetensors: cannot open file: No such file or directory");
  }
  try {
    ptk::io::write_safetensors("/nonexistent/ckpt.safetensors", sample());
    FAIL() << "accepted";
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(e.kind(), Kind::unreadable);
  }
  Safetensors bad;
  bad.tensors["w"] = {{2, 2}, {1.0f}};
  EXPECT_THROW(ptk::io::serialize_safetensors(bad), SafetensorsError);
}

// A write leaves exactly the file (no temporary beside it); a failed write leaves the old file whole; the
// temporaries of a writer that died are removed by the next write, those of a live process are kept.
TEST(AtomicFile, LeavesTheOldOrTheNewFileOnly) {
  const std::string dir = testing::TempDir() + "ptk_atomic_file_test";
  std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
  const std::string path = dir + "/ck.safetensors";
  ptk::io::write_safetensors(path, sample());
  const auto listing = [&] {
    std::string names;
    if (DIR* d = opendir(dir.c_str())) {
      while (const dirent* e = readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names += std::string(e->d_name) + " ";
      closedir(d);
    }
    return names;
  };
  EXPECT_EQ(listing(), "ck.safetensors ");
  // pid 1 never goes away; a pid far beyond pid_max is never alive.
  std::ofstream(dir + "/.ck.safetensors.tmp-1-0") << "live";
  std::ofstream(dir + "/.ck.safetensors.tmp-2147483646-3") << "dead";
  std::ofstream(dir + "/.other.tmp-2147483646-3") << "not ours";
  ptk::io::write_safetensors(path, sample());
  const auto names = listing();
  EXPECT_NE(names.find(".ck.safetensors.tmp-1-0"), std::string::npos) << names;
  EXPECT_EQ(names.find(".ck.safetensors.tmp-2147483646-3"), std::string::npos) << names;
  EXPECT_NE(names.find(".other.tmp-2147483646-3"), std::string::npos) << names;
  EXPECT_THROW(ptk::io::check_can_write(dir), ptk::io::FileError);                      // a directory
  EXPECT_THROW(ptk::io::check_can_write(dir + "/missing/ck.safetensors"), ptk::io::FileError);
  EXPECT_NO_THROW(ptk::io::check_can_write(dir + "/new.safetensors"));
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
