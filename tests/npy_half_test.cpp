// .npy files of 16-bit floats (ptk/io/npy.hpp): float16 as '<f2', bf16 as its bits in '<u2' (NumPy has no
// bfloat16), widened exactly to float on read and rounded to nearest even on write. The float32 reader and the
// header parser are npy_test.cpp's; this file checks what the 2-byte types change: the dtype accepted, the element
// size in every length check, the conversions, and the bytes np.save writes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ptk/io/npy.hpp"

namespace {

using ptk::io::NpyArray;
using ptk::io::NpyDtype;
using ptk::io::NpyError;
using ptk::io::parse_npy;
using ptk::io::read_npy;
using ptk::io::write_npy;

// Written by NumPy 1.24.2 (np.save to a BytesIO); the writer must match them byte for byte.
// np.save(f, np.arange(6, dtype='<f2').reshape(2, 3))
const std::string kNumpyF16Arange23(
    "\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (2, "
    "3), }                                                          \x0a\x00\x00"
    "\x00<\x00@\x00\x42\x00\x44\x00\x45",
    140);

// np.save(f, np.float16(-0.1))
const std::string kNumpyF16Scalar(
    "\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (), "
    "}                                                              \x0a\x66\xae",
    130);

// np.save(f, np.array([0x3f80, 0x4049, 0xff80], dtype='<u2')): the bf16 bits of 1, 3.140625 and -inf.
const std::string kNumpyU2(
    "\x93NUMPY\x01\x00v\x00{'descr': '<u2', 'fortran_order': False, 'shape': (3,)"
    ", }                                                            \x0a\x80?I@"
    "\x80\xff",
    134);

// np.save(f, np.zeros((1,) * 16, dtype='<f2')): a header of 192 bytes, not 128, only because NumPy leaves room
// for the first dim to grow to 21 digits.
const std::string kNumpyF16Ones16 =
    std::string("\x93NUMPY\x01\x00\xb6\x00", 10) +
    "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), }" +
    std::string(80, ' ') + "\n" + std::string(2, '\0');

// A version 1.0 .npy file with the given header dict and raw data, no padding.
std::string npy_dict(const std::string& dict, const std::string& data) {
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict + data;
}

std::string npy(const std::string& descr, const std::string& shape, const std::string& data) {
  return npy_dict("{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }", data);
}

std::string halves(const std::vector<std::uint16_t>& bits) {
  return std::string(reinterpret_cast<const char*>(bits.data()), 2 * bits.size());
}

std::string temp_path(const std::string& stem) { return testing::TempDir() + "ptk_npy_half_test_" + stem + ".npy"; }

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The 16-bit data after the header of a written file.
std::vector<std::uint16_t> data_bits(const std::string& file, std::size_t count) {
  std::vector<std::uint16_t> bits(count);
  if (file.size() >= 2 * count) std::memcpy(bits.data(), file.data() + file.size() - 2 * count, 2 * count);
  return bits;
}

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// binary16's value from its fields, independently of half.hpp: (-1)^s · m · 2^-24 for subnormals,
// (-1)^s · (1024 + m) · 2^(e - 25) otherwise; all exact in float.
float f16_value(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (e == 0x1f) return m ? std::nanf("") : sign * INFINITY;
  return sign * (e == 0 ? std::ldexp(static_cast<float>(m), -24) : std::ldexp(static_cast<float>(1024 + m), e - 25));
}

bool is_f16_nan(std::uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool is_bf16_nan(std::uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }

// The one-line NpyError "<name>: ..." that parse() throws; "accepted" if it throws nothing.
template <class Parse>
std::string refusal(Parse parse) {
  try {
    parse();
  } catch (const NpyError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("in.npy: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  return "accepted";
}
std::string refusal(const std::string& bytes) {
  return refusal([&] { parse_npy(bytes, "in.npy"); });
}
std::string refusal(const std::string& bytes, NpyDtype expected) {
  return refusal([&] { parse_npy(bytes, "in.npy", expected); });
}

// Every float16 pattern but the NaNs comes back with the same bits (each is a float exactly, and rounding a float
// that is one gives it back); a NaN comes back a NaN.
TEST(NpyHalf, EveryF16PatternRoundTrips) {
  std::vector<std::uint16_t> patterns(65536);
  std::vector<float> values(patterns.size());
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    patterns[i] = static_cast<std::uint16_t>(i);
    values[i] = f16_value(patterns[i]);
  }
  const std::string path = temp_path("f16_all");
  write_npy(path, {256, 256}, values.data(), NpyDtype::f16);
  const std::vector<std::uint16_t> written = data_bits(read_bytes(path), patterns.size());
  const NpyArray a = read_npy(path);
  std::remove(path.c_str());
  EXPECT_EQ(a.stored, NpyDtype::f16);
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{256, 256}));
  ASSERT_EQ(a.data.size(), patterns.size());
  int nans = 0;
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    if (is_f16_nan(patterns[i])) {
      ++nans;
      EXPECT_TRUE(is_f16_nan(written[i])) << std::hex << patterns[i] << " written as " << written[i];
      EXPECT_TRUE(std::isnan(a.data[i])) << std::hex << patterns[i];
      continue;
    }
    EXPECT_EQ(written[i], patterns[i]);
    EXPECT_EQ(bits_of(a.data[i]), bits_of(values[i])) << std::hex << patterns[i] << ": read " << a.data[i];
  }
  EXPECT_EQ(nans, 2 * 1023);
}

// bf16 is float's top half: every pattern but the NaNs is a float exactly and comes back as it was.
TEST(NpyHalf, EveryBf16PatternRoundTrips) {
  std::vector<std::uint16_t> patterns(65536);
  std::vector<float> values(patterns.size());
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    patterns[i] = static_cast<std::uint16_t>(i);
    const std::uint32_t u = static_cast<std::uint32_t>(i) << 16;
    std::memcpy(&values[i], &u, sizeof u);
  }
  const std::string path = temp_path("bf16_all");
  write_npy(path, {65536}, values.data(), NpyDtype::bf16);
  const std::vector<std::uint16_t> written = data_bits(read_bytes(path), patterns.size());
  const NpyArray a = read_npy(path, NpyDtype::bf16);
  std::remove(path.c_str());
  EXPECT_EQ(a.stored, NpyDtype::bf16);
  ASSERT_EQ(a.data.size(), patterns.size());
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    if (is_bf16_nan(patterns[i])) {
      EXPECT_TRUE(is_bf16_nan(written[i])) << std::hex << patterns[i] << " written as " << written[i];
      EXPECT_TRUE(std::isnan(a.data[i])) << std::hex << patterns[i];
      continue;
    }
    EXPECT_EQ(written[i], patterns[i]);
    EXPECT_EQ(bits_of(a.data[i]), bits_of(values[i])) << std::hex << patterns[i];
  }
}

// Floats that are not 16-bit values round to nearest, ties to even; what is read back is the rounded value.
TEST(NpyHalf, WriteRoundsToNearestEvenAndReadsBackTheRoundedValue) {
  const std::vector<float> values = {0.1f, 1 + 0x1p-11f, 1 + 3 * 0x1p-11f, 1 + 0x1p-8f, 1 + 3 * 0x1p-8f, 70000.0f,
                                     -1e-9f};
  // np.float16(np.float32(v)).view('<u2') for each (0x2e66 for 0.1); bf16: the top 16 bits rounded.
  const std::vector<std::uint16_t> f16 = {0x2e66, 0x3c00, 0x3c02, 0x3c04, 0x3c0c, 0x7c00, 0x8000};
  const std::vector<std::uint16_t> bf16 = {0x3dcd, 0x3f80, 0x3f80, 0x3f80, 0x3f82, 0x4789, 0xb089};
  const std::string path = temp_path("rounding");
  write_npy(path, {7}, values.data(), NpyDtype::f16);
  EXPECT_EQ(data_bits(read_bytes(path), 7), f16);
  NpyArray a = read_npy(path, NpyDtype::f16);
  for (std::size_t i = 0; i < f16.size(); ++i) EXPECT_EQ(bits_of(a.data[i]), bits_of(f16_value(f16[i]))) << i;

  write_npy(path, {7}, values.data(), NpyDtype::bf16);
  EXPECT_EQ(data_bits(read_bytes(path), 7), bf16);
  a = read_npy(path, NpyDtype::bf16);
  for (std::size_t i = 0; i < bf16.size(); ++i) EXPECT_EQ(bits_of(a.data[i]), std::uint32_t{bf16[i]} << 16) << i;
  std::remove(path.c_str());
}

TEST(NpyHalf, WriterMatchesNumpyByteForByte) {
  const std::string path = temp_path("numpy_bytes");
  const std::vector<float> arange = {0, 1, 2, 3, 4, 5}, zero(1, 0.0f);
  const std::vector<float> bf16 = {1.0f, 3.140625f, -INFINITY};
  const float scalar = -0.1f;
  write_npy(path, {2, 3}, arange.data(), NpyDtype::f16);
  EXPECT_EQ(read_bytes(path), kNumpyF16Arange23);
  write_npy(path, {}, &scalar, NpyDtype::f16);
  EXPECT_EQ(read_bytes(path), kNumpyF16Scalar);
  write_npy(path, {3}, bf16.data(), NpyDtype::bf16);
  EXPECT_EQ(read_bytes(path), kNumpyU2);
  write_npy(path, std::vector<std::int64_t>(16, 1), zero.data(), NpyDtype::f16);
  EXPECT_EQ(read_bytes(path), kNumpyF16Ones16);
  std::remove(path.c_str());
}

TEST(NpyHalf, ReadsNumpyWrittenFiles) {
  NpyArray a = parse_npy(kNumpyF16Arange23, "in.npy");
  EXPECT_EQ(a.stored, NpyDtype::f16);
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(a.data, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  a = parse_npy(kNumpyF16Scalar, "in.npy", NpyDtype::f16);
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.data, std::vector<float>{-0.0999755859375f});  // the float16 nearest -0.1
  a = parse_npy(kNumpyU2, "in.npy", NpyDtype::bf16);
  EXPECT_EQ(a.stored, NpyDtype::bf16);
  EXPECT_EQ(a.data, (std::vector<float>{1.0f, 3.140625f, -INFINITY}));
  a = parse_npy(kNumpyF16Ones16, "in.npy");
  EXPECT_EQ(a.shape, std::vector<std::int64_t>(16, 1));
  EXPECT_EQ(a.data, std::vector<float>{0.0f});
}

// With an expected dtype only that one is read; the refusal names what the file holds and what was expected.
TEST(NpyHalf, ExpectedDtypeAcceptsOnlyItself) {
  const std::string f4 = npy("<f4", "(1,)", std::string("\x00\x00\x80\x3f", 4));
  EXPECT_EQ(parse_npy(f4, "in.npy").stored, NpyDtype::f32);
  EXPECT_EQ(parse_npy(f4, "in.npy", NpyDtype::f32).data, std::vector<float>{1.0f});
  EXPECT_EQ(refusal(kNumpyF16Arange23, NpyDtype::f32),
            "in.npy: dtype '<f2' (float16) is not the expected '<f4' (float32)");
  EXPECT_EQ(refusal(kNumpyU2, NpyDtype::f16),
            "in.npy: dtype '<u2' (bfloat16 bits as uint16) is not the expected '<f2' (float16)");
  EXPECT_EQ(refusal(f4, NpyDtype::f16), "in.npy: dtype '<f4' (float32) is not the expected '<f2' (float16)");
  EXPECT_EQ(refusal(f4, NpyDtype::bf16),
            "in.npy: dtype '<f4' (float32) is not the expected '<u2' (bfloat16 bits as uint16)");
  EXPECT_EQ(refusal(kNumpyF16Arange23, NpyDtype::bf16),
            "in.npy: dtype '<f2' (float16) is not the expected '<u2' (bfloat16 bits as uint16)");
  // Without an expectation a uint16 file is not guessed to be bf16.
  EXPECT_EQ(refusal(kNumpyU2), "in.npy: dtype '<u2' is not supported: ptk reads little-endian float32 ('<f4') or "
                               "float16 ('<f2'), and uint16 only as bf16 bits where bf16 is expected");
  EXPECT_EQ(refusal([] { parse_npy(kNumpyU2, "in.npy", static_cast<NpyDtype>(7)); }), "in.npy: unknown NpyDtype 7");
}

TEST(NpyHalf, RefusesOtherTwoByteDtypes) {
  const std::string two = halves({0x3c00});
  for (const char* descr : {">f2", ">u2", "|u2", "<i2", "<u4", "<f8"}) {
    SCOPED_TRACE(descr);
    const std::string bytes = npy(descr, "(1,)", two);
    const std::string quoted = std::string("dtype '") + descr + "' is not supported: ";
    EXPECT_EQ(refusal(bytes), "in.npy: " + quoted + "ptk reads little-endian float32 ('<f4') or float16 ('<f2')");
    EXPECT_EQ(refusal(bytes, NpyDtype::bf16),
              "in.npy: " + quoted + "expected little-endian '<u2' (bfloat16 bits as uint16)");
    EXPECT_EQ(refusal(bytes, NpyDtype::f16), "in.npy: " + quoted + "expected little-endian '<f2' (float16)");
  }
  const std::string structured = npy_dict("{'descr': [('a', '<u2')], 'fortran_order': False, 'shape': (1,), }", two);
  EXPECT_EQ(refusal(structured, NpyDtype::bf16),
            "in.npy: structured dtypes are not supported: expected little-endian '<u2' (bfloat16 bits as uint16)");
  EXPECT_EQ(refusal(structured),
            "in.npy: structured dtypes are not supported: ptk reads little-endian float32 ('<f4') or float16 ('<f2')");
}

// Every length check counts 2 bytes an element for '<f2' and '<u2'.
TEST(NpyHalf, LengthChecksUseTwoByteElements) {
  const std::string six = halves({1, 2, 3, 4, 5, 6});
  for (const NpyDtype t : {NpyDtype::f16, NpyDtype::bf16}) {
    const std::string descr = t == NpyDtype::f16 ? "<f2" : "<u2";
    SCOPED_TRACE(descr);
    EXPECT_EQ(parse_npy(npy(descr, "(2, 3)", six), "in.npy", t).data.size(), 6u);
    EXPECT_EQ(refusal(npy(descr, "(2, 3)", six.substr(0, 11)), t),
              "in.npy: truncated data: expected 12 bytes for shape [2, 3], found 11");
    EXPECT_EQ(refusal(npy(descr, "(2, 3)", six + six), t),
              "in.npy: unexpected trailing data: expected 12 bytes for shape [2, 3], found 24");
    // A lying shape is refused before anything is allocated for it.
    EXPECT_EQ(refusal(npy(descr, "(1000000000000,)", six), t),
              "in.npy: truncated data: expected 2000000000000 bytes for shape [1000000000000], found 12");
    // 2^61 elements: 2^62 bytes fit in int64 (a float32 file of that shape overflows); 2^62 elements do not.
    EXPECT_EQ(refusal(npy(descr, "(2305843009213693952,)", six), t),
              "in.npy: truncated data: expected 4611686018427387904 bytes for shape [2305843009213693952], found 12");
    EXPECT_EQ(refusal(npy(descr, "(4611686018427387904,)", six), t),
              "in.npy: shape [4611686018427387904] is too large: its size in bytes overflows int64");
    EXPECT_EQ(refusal(npy(descr, "(4294967296, 4294967296)", six), t),
              "in.npy: shape [4294967296, 4294967296] is too large: its element count overflows int64");
  }
  for (std::size_t n = 0; n < kNumpyF16Arange23.size(); ++n) {
    EXPECT_THROW(parse_npy(kNumpyF16Arange23.substr(0, n), "cut.npy"), NpyError) << n;
  }
  for (std::size_t n = 0; n < kNumpyU2.size(); ++n) {
    EXPECT_THROW(parse_npy(kNumpyU2.substr(0, n), "cut.npy", NpyDtype::bf16), NpyError) << n;
  }
}

TEST(NpyHalf, WriteErrors) {
  const float one = 1;
  for (const NpyDtype t : {NpyDtype::f16, NpyDtype::bf16}) {
    EXPECT_THROW(write_npy(temp_path("huge"), {4611686018427387904}, &one, t), NpyError);
    EXPECT_THROW(write_npy(temp_path("null"), {2}, nullptr, t), NpyError);
  }
  EXPECT_THROW(write_npy(temp_path("bad_dtype"), {1}, &one, static_cast<NpyDtype>(7)), NpyError);
  std::FILE* f = std::fopen(temp_path("bad_dtype").c_str(), "rb");
  EXPECT_EQ(f, nullptr) << "a refused write created its file";
  if (f) std::fclose(f);
#ifdef __linux__
  EXPECT_THROW(write_npy("/dev/full", {8192}, std::vector<float>(8192).data(), NpyDtype::f16), NpyError);
#endif
}

}  // namespace
