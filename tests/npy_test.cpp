#include "ptk/io/npy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

namespace {

using ptk::io::format_shape;
using ptk::io::NpyArray;
using ptk::io::NpyError;
using ptk::io::parse_npy;
using ptk::io::read_npy;
using ptk::io::write_npy;

// Written by NumPy 1.24: np.save(f, np.arange(6, dtype='<f4').reshape(2, 3)).
const std::string kNumpyArange23(
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': "
    "(2, 3), }                                                          \x0a\x00"
    "\x00\x00\x00\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@\x00\x00\xa0"
    "@",
    152);

// np.save(f, np.arange(5, dtype='<f4')).
const std::string kNumpyArange5(
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': "
    "(5,), }                                                            \x0a\x00"
    "\x00\x00\x00\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@",
    148);

// np.save(f, np.float32(3.5)).
const std::string kNumpyScalar(
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': "
    "(), }                                                              \x0a\x00"
    "\x00`@",
    132);

// A .npy file with the given header dict text and raw data, no padding.
std::string npy(const std::string& dict, const std::string& data = "", int major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  return out + dict + data;
}

std::string floats(std::initializer_list<float> values) {
  std::string out;
  for (const float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

std::string dict(const std::string& shape, const std::string& descr = "'<f4'", const std::string& fortran = "False") {
  return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string temp_path(const std::string& stem) {
  return testing::TempDir() + "ptk_npy_test_" + stem + ".npy";
}

// parse_npy(bytes) must throw NpyError with a one-line message that starts
// with the file name and contains every fragment.
testing::AssertionResult Rejects(const std::string& bytes, std::initializer_list<std::string> fragments) {
  try {
    parse_npy(bytes, "in.npy");
  } catch (const NpyError& e) {
    const std::string msg = e.what();
    if (msg.rfind("in.npy: ", 0) != 0) return testing::AssertionFailure() << "no file name in: " << msg;
    if (msg.find('\n') != std::string::npos) return testing::AssertionFailure() << "not one line: " << msg;
    for (const std::string& f : fragments) {
      if (msg.find(f) == std::string::npos) return testing::AssertionFailure() << "'" << f << "' not in: " << msg;
    }
    return testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return testing::AssertionFailure() << "threw a non-NpyError: " << e.what();
  }
  return testing::AssertionFailure() << "accepted";
}

TEST(Npy, FormatShape) {
  EXPECT_EQ(format_shape({}), "[]");
  EXPECT_EQ(format_shape({0}), "[0]");
  EXPECT_EQ(format_shape({2, 3, 4}), "[2, 3, 4]");
}

TEST(Npy, RoundTrip) {
  const std::vector<std::vector<std::int64_t>> shapes = {{}, {0}, {1}, {3}, {2, 3}, {2, 3, 4}, {2, 0, 3}};
  for (const auto& shape : shapes) {
    SCOPED_TRACE(format_shape(shape));
    std::int64_t count = 1;
    for (const auto d : shape) count *= d;
    std::vector<float> data(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = 0.5f * static_cast<float>(i) - 3.25f;

    const std::string path = temp_path("roundtrip");
    write_npy(path, shape, data.data());
    const NpyArray a = read_npy(path);
    EXPECT_EQ(a.shape, shape);
    EXPECT_EQ(a.data, data);
    std::remove(path.c_str());
  }
}

TEST(Npy, HeaderIsAlignedTo64AndEndsWithNewline) {
  const std::vector<std::vector<std::int64_t>> shapes = {
      {}, {7}, {2, 3}, {123456789, 0, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}};
  for (const auto& shape : shapes) {
    SCOPED_TRACE(format_shape(shape));
    const std::string path = temp_path("align");
    const std::vector<float> data(7, 1.0f);  // enough for every shape above
    write_npy(path, shape, data.data());
    const std::string bytes = read_bytes(path);
    std::remove(path.c_str());
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    const std::size_t header_end = 10 + (static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8);
    EXPECT_EQ(header_end % 64, 0u);
    ASSERT_LE(header_end, bytes.size());
    EXPECT_EQ(bytes[header_end - 1], '\n');
    EXPECT_EQ(bytes.compare(10, 16, "{'descr': '<f4',"), 0);
  }
}

TEST(Npy, WriterMatchesNumpyByteForByte) {
  const std::vector<float> values = {0, 1, 2, 3, 4, 5};
  const float scalar = 3.5f;
  const std::string path = temp_path("numpy_bytes");
  write_npy(path, {2, 3}, values.data());
  EXPECT_EQ(read_bytes(path), kNumpyArange23);
  write_npy(path, {5}, values.data());
  EXPECT_EQ(read_bytes(path), kNumpyArange5);
  write_npy(path, {}, &scalar);
  EXPECT_EQ(read_bytes(path), kNumpyScalar);
  std::remove(path.c_str());
}

TEST(Npy, ReadsNumpyWrittenFiles) {
  NpyArray a = parse_npy(kNumpyArange23, "arange23.npy");
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(a.data, (std::vector<float>{0, 1, 2, 3, 4, 5}));

  a = parse_npy(kNumpyArange5, "arange5.npy");
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{5}));
  EXPECT_EQ(a.data, (std::vector<float>{0, 1, 2, 3, 4}));

  a = parse_npy(kNumpyScalar, "scalar.npy");
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.data, std::vector<float>{3.5f});
}

TEST(Npy, ReadsVersion2And3Headers) {
  for (const int major : {2, 3}) {
    SCOPED_TRACE(major);
    const NpyArray a = parse_npy(npy(dict("(2, 1)") + "\n", floats({1.5f, -2}), major), "v.npy");
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 1}));
    EXPECT_EQ(a.data, (std::vector<float>{1.5f, -2}));
  }
}

TEST(Npy, AcceptsWhitespaceKeyOrderAndTupleVariants) {
  const std::vector<std::string> dicts = {
      "{'shape':(2,3),'fortran_order':False,'descr':'<f4'}",
      "  {\n\t'fortran_order' :  False ,\"descr\"\t: \"<f4\" , 'shape' : ( 2 ,\n 3 , ) , }  \r\n",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",  // Python 2 numpy
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}" + std::string(100, ' ') + "\n",
  };
  for (const std::string& d : dicts) {
    SCOPED_TRACE(d);
    const NpyArray a = parse_npy(npy(d, floats({1, 2, 3, 4, 5, 6})), "ws.npy");
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(a.data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  }
}

TEST(Npy, AcceptsZeroSizeAndScalarShapes) {
  NpyArray a = parse_npy(npy(dict("(2, 0, 3)")), "z.npy");
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 0, 3}));
  EXPECT_TRUE(a.data.empty());

  a = parse_npy(npy(dict("(0,)")), "z.npy");
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{0}));
  EXPECT_TRUE(a.data.empty());

  a = parse_npy(npy(dict("()"), floats({7})), "s.npy");
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.data, std::vector<float>{7});
}

TEST(Npy, RejectsBadMagic) {
  EXPECT_TRUE(Rejects("", {"not a .npy file (bad magic)"}));
  EXPECT_TRUE(Rejects("\x93NUM", {"not a .npy file (bad magic)"}));
  EXPECT_TRUE(Rejects("PK\x03\x04 this is a zip", {"not a .npy file (bad magic)"}));
  EXPECT_TRUE(Rejects("\x93NUMPX\x01\x00", {"not a .npy file (bad magic)"}));
}

TEST(Npy, RejectsUnsupportedVersion) {
  std::string bytes = kNumpyArange23;
  bytes[6] = 4;
  EXPECT_TRUE(Rejects(bytes, {"unsupported .npy format version 4.0"}));
  bytes[6] = 1;
  bytes[7] = 1;
  EXPECT_TRUE(Rejects(bytes, {"unsupported .npy format version 1.1"}));
  bytes[6] = 0;
  bytes[7] = 0;
  EXPECT_TRUE(Rejects(bytes, {"unsupported .npy format version 0.0"}));
}

TEST(Npy, RejectsTruncatedHeader) {
  EXPECT_TRUE(Rejects(std::string("\x93NUMPY", 6), {"truncated header"}));
  EXPECT_TRUE(Rejects(std::string("\x93NUMPY\x01\x00v", 9), {"truncated header"}));
  EXPECT_TRUE(Rejects(std::string("\x93NUMPY\x02\x00v\x00\x00", 11), {"truncated header"}));
  EXPECT_TRUE(Rejects(kNumpyArange23.substr(0, 100), {"truncated header", "118", "90"}));
}

TEST(Npy, RejectsMalformedHeaderDict) {
  const std::string f4 = floats({1});
  EXPECT_TRUE(Rejects(npy("{'fortran_order': False, 'shape': (1,)}", f4), {"malformed header", "missing key 'descr'"}));
  EXPECT_TRUE(Rejects(npy("{'descr': '<f4', 'shape': (1,)}", f4), {"missing key 'fortran_order'"}));
  EXPECT_TRUE(Rejects(npy("{'descr': '<f4', 'fortran_order': False}", f4), {"missing key 'shape'"}));
  EXPECT_TRUE(Rejects(npy("", f4), {"malformed header", "expected '{'"}));
  EXPECT_TRUE(Rejects(npy("not a dict", f4), {"malformed header", "expected '{'"}));
  EXPECT_TRUE(Rejects(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", f4), {"malformed header"}));
  EXPECT_TRUE(Rejects(npy("{'descr: '<f4'}", f4), {"malformed header"}));
  EXPECT_TRUE(Rejects(npy("{'descr': '<f4' 'fortran_order': False}", f4), {"malformed header", "expected ','"}));
  EXPECT_TRUE(Rejects(npy(dict("(1,)").substr(0, 40) + "} junk", f4), {"malformed header"}));
  EXPECT_TRUE(Rejects(npy(dict("(1,)") + " x", f4), {"malformed header", "after the closing '}'"}));
  EXPECT_TRUE(Rejects(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", f4),
                      {"malformed header", "unexpected key 'extra'"}));
  EXPECT_TRUE(Rejects(npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", f4),
                      {"malformed header", "duplicate key 'descr'"}));
  EXPECT_TRUE(Rejects(npy(dict("(1,)", "'<f4'", "0"), f4), {"'fortran_order' must be True or False, found '0'"}));
  EXPECT_TRUE(Rejects(npy(dict("[1]"), f4), {"'shape' must be a tuple"}));
  EXPECT_TRUE(Rejects(npy(dict("(1,,)"), f4), {"malformed header"}));
  EXPECT_TRUE(Rejects(npy(dict("(1 2)"), f4), {"malformed header"}));
  EXPECT_TRUE(Rejects(npy(std::string("{'descr': '<f4'\0, ", 18), f4), {"malformed header", "\\x00"}));
}

TEST(Npy, RejectsUnsupportedDtype) {
  // float16 is read too (npy_half_test.cpp); '<u2' only where bf16 is expected.
  const char* kOnly = "ptk reads little-endian float32 ('<f4') or float16 ('<f2')";
  EXPECT_TRUE(Rejects(npy(dict("(1,)", "'<f8'"), floats({1, 2})), {"dtype '<f8' is not supported: ", kOnly}));
  EXPECT_TRUE(Rejects(npy(dict("(1,)", "'>f4'"), floats({1})), {"dtype '>f4' is not supported", kOnly}));
  EXPECT_TRUE(Rejects(npy(dict("(1,)", "'|u1'"), "x"), {"dtype '|u1' is not supported"}));
  EXPECT_TRUE(Rejects(npy(dict("(1,)", "'<u2'"), "xx"), {"dtype '<u2' is not supported", kOnly, "bf16"}));
  EXPECT_TRUE(Rejects(npy(dict("(1,)", "[('a', '<f4')]"), floats({1})), {"structured dtypes are not supported", kOnly}));
  EXPECT_TRUE(Rejects(npy(dict("(1,)", "3"), floats({1})), {"malformed header", "expected a quoted string"}));
}

TEST(Npy, RejectsFortranOrder) {
  EXPECT_TRUE(Rejects(npy(dict("(2, 3)", "'<f4'", "True"), floats({1, 2, 3, 4, 5, 6})),
                      {"Fortran-order arrays are not supported; save with np.ascontiguousarray"}));
}

TEST(Npy, RejectsBadDimensions) {
  EXPECT_TRUE(Rejects(npy(dict("(2, -3)")), {"negative dimension '-3'"}));
  EXPECT_TRUE(Rejects(npy(dict("(2.5,)")), {"non-integer dimension '2.5'"}));
  EXPECT_TRUE(Rejects(npy(dict("('a',)")), {"non-integer dimension"}));
  EXPECT_TRUE(Rejects(npy(dict("(None,)")), {"non-integer dimension 'None'"}));
  EXPECT_TRUE(Rejects(npy(dict("(99999999999999999999,)")), {"dimension '99999999999999999999' overflows int64"}));
  EXPECT_TRUE(Rejects(npy(dict("(4294967296, 4294967296)")),
                      {"shape [4294967296, 4294967296] is too large", "element count overflows int64"}));
  // 2^61 elements fit in int64 but their 2^63 bytes do not.
  EXPECT_TRUE(Rejects(npy(dict("(2305843009213693952,)")), {"is too large", "size in bytes overflows int64"}));
  // As in NumPy, a zero dim does not excuse the others from overflowing.
  EXPECT_TRUE(Rejects(npy(dict("(0, 4294967296, 4294967296)")), {"element count overflows int64"}));
}

TEST(Npy, RejectsDataOfWrongLength) {
  EXPECT_TRUE(Rejects(npy(dict("(2, 3)"), floats({1, 2, 3, 4, 5})),
                      {"truncated data: expected 24 bytes for shape [2, 3], found 20"}));
  EXPECT_TRUE(Rejects(kNumpyArange23.substr(0, kNumpyArange23.size() - 1),
                      {"truncated data: expected 24 bytes for shape [2, 3], found 23"}));
  EXPECT_TRUE(Rejects(npy(dict("(1000000000000,)")), {"truncated data: expected 4000000000000 bytes", "found 0"}));
  EXPECT_TRUE(Rejects(kNumpyArange23 + "x", {"unexpected trailing data: expected 24 bytes for shape [2, 3], found 25"}));
  EXPECT_TRUE(Rejects(npy(dict("(0,)"), "abcd"), {"trailing data: expected 0 bytes for shape [0], found 4"}));
}

TEST(Npy, EveryTruncationOrByteCorruptionIsAnErrorNotACrash) {
  for (std::size_t n = 0; n < kNumpyArange23.size(); ++n) {
    EXPECT_THROW(parse_npy(kNumpyArange23.substr(0, n), "cut.npy"), NpyError) << n;
  }
  // Any outcome but a crash or a foreign exception is fine for header bytes.
  for (std::size_t i = 0; i < 128; ++i) {
    for (const int c : {0x00, 0x20, 0x27, 0x28, 0x29, 0x2c, 0x2d, 0x30, 0x39, 0x3a, 0x7b, 0x7d, 0xff}) {
      std::string bytes = kNumpyArange23;
      bytes[i] = static_cast<char>(c);
      try {
        parse_npy(bytes, "bent.npy");
      } catch (const NpyError&) {
      }
    }
  }
}

TEST(Npy, ReadErrorsNameThePath) {
  const std::string missing = temp_path("does_not_exist");
  try {
    read_npy(missing);
    ADD_FAILURE() << "no exception";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
  try {
    read_npy(testing::TempDir());
    ADD_FAILURE() << "no exception";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find(testing::TempDir()), std::string::npos) << e.what();
  }
  const std::string path = temp_path("not_npy");
  std::ofstream(path) << "hello";
  try {
    read_npy(path);
    ADD_FAILURE() << "no exception";
  } catch (const NpyError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": not a .npy file (bad magic)");
  }
  std::remove(path.c_str());
}

TEST(Npy, WriteErrors) {
  const std::string path = temp_path("no_such_dir") + "/x.npy";
  const float one = 1;
  try {
    write_npy(path, {1}, &one);
    ADD_FAILURE() << "no exception";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_npy(temp_path("neg"), {-1}, &one), NpyError);
  EXPECT_THROW(write_npy(temp_path("null"), {1}, nullptr), NpyError);
  EXPECT_THROW(write_npy(temp_path("huge"), {4294967296, 4294967296}, &one), NpyError);
#ifdef __linux__
  try {
    write_npy("/dev/full", {4}, std::vector<float>(4).data());
    ADD_FAILURE() << "no exception";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full: cannot write file"), std::string::npos) << e.what();
  }
#endif
}

}  // namespace
