// .npy integer ids (token ids, class targets): '<i4' and '<i8' are read (widened to int64); other dtypes
// are rejected with a one-line message, and float reading still rejects integer files.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "ptk/io/npy.hpp"

namespace {

using ptk::io::NpyError;

std::string npy(const std::string& descr, const std::string& shape, const std::string& data) {
  const std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\0';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict + data;
}

template <class T>
std::string raw(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

std::string message(const std::string& bytes) {
  try {
    ptk::io::parse_npy_ids(bytes, "ids.npy");
  } catch (const NpyError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(NpyIds, ReadsInt32AndInt64) {
  const auto a = ptk::io::parse_npy_ids(npy("<i4", "(2, 3)", raw<std::int32_t>({0, 1, -100, 7, 2147483647, 5})), "a.npy");
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(a.data, (std::vector<std::int64_t>{0, 1, -100, 7, 2147483647, 5}));
  const auto b = ptk::io::parse_npy_ids(npy("<i8", "(4,)", raw<std::int64_t>({3, -1, 1LL << 40, 0})), "b.npy");
  EXPECT_EQ(b.shape, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(b.data, (std::vector<std::int64_t>{3, -1, 1LL << 40, 0}));
}

TEST(NpyIds, ReadsFromAFile) {
  const std::string path = testing::TempDir() + "ptk_npy_ids_test.npy";
  std::ofstream(path, std::ios::binary) << npy("<i8", "(2,)", raw<std::int64_t>({9, 8}));
  EXPECT_EQ(ptk::io::read_npy_ids(path).data, (std::vector<std::int64_t>{9, 8}));
  std::remove(path.c_str());
  EXPECT_THROW(ptk::io::read_npy_ids(path), NpyError);
}

TEST(NpyIds, RejectsOtherDtypesAndBadSizes) {
  EXPECT_EQ(message(npy("<f4", "(1,)", raw<float>({1.0f}))),
            "ids.npy: dtype '<f4' is not supported for ids: ptk reads little-endian int32 ('<i4') or int64 ('<i8') ids");
  EXPECT_NE(message(npy(">i8", "(1,)", raw<std::int64_t>({1}))).find("not supported for ids"), std::string::npos);
  EXPECT_NE(message(npy("<u4", "(1,)", raw<std::uint32_t>({1}))).find("not supported for ids"), std::string::npos);
  EXPECT_NE(message(npy("<i8", "(3,)", raw<std::int64_t>({1, 2}))).find("truncated data: expected 24 bytes"), std::string::npos);
  EXPECT_NE(message(npy("<i4", "(1,)", raw<std::int32_t>({1, 2}))).find("unexpected trailing data"), std::string::npos);
}

TEST(NpyIds, FloatReaderStillRejectsIntegers) {
  try {
    ptk::io::parse_npy(npy("<i4", "(1,)", raw<std::int32_t>({1})), "x.npy");
    FAIL() << "accepted";
  } catch (const NpyError& e) {
    EXPECT_STREQ(e.what(), "x.npy: dtype '<i4' is not supported: ptk reads little-endian float32 ('<f4') or float16 ('<f2')");
  }
}

}  // namespace
