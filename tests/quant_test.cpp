// q8_0 and q4_0 blocks (core/quant.hpp) and the conversions between element types (ops/convert.hpp): GGUF's bytes,
// the quantization error bound block by block, the device's blocks equal to the host's, the refusals, and the
// 16-bit round trips through a kernel on every space.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>

#include "bits.hpp"
#include "parity.hpp"
#include "ptk/core/quant.hpp"
#include "ptk/kernels/detail/load.hpp"
#include "ptk/kernels/quantize_activations.hpp"
#include "ptk/ops/convert.hpp"
#include "ptk/reference/quantize_activations.hpp"

namespace ptk::test {
namespace {

template <class Block>
std::vector<unsigned char> bytes_of(const Block& b) {
  std::vector<unsigned char> out(sizeof b);
  std::memcpy(out.data(), &b, sizeof b);
  return out;
}

// x[i] = (i − 16) / 2: amax 8 at i = 0 (negative), so q8_0's d = 8/127 and q4_0's d = −8/−8 = 1. The expected bytes
// follow GGUF's layout written out by hand: the f16 scale little-endian, then the quants.
TEST(Quant, BlockBytesAreGgufs) {
  float x[quant_block];
  for (int i = 0; i < quant_block; ++i) x[i] = static_cast<float>(i - 16) / 2;

  const auto b8 = bytes_of(quantize_q8_0(x));
  ASSERT_EQ(b8.size(), 34u);
  const std::uint16_t d8 = to_f16(8.0f / 127.0f).bits;
  EXPECT_EQ(b8[0], d8 & 0xff);
  EXPECT_EQ(b8[1], d8 >> 8);
  for (int i = 0; i < quant_block; ++i) {
    // x · 127/8 = (i − 16) · 7.9375: never within 0.06 of a half, so the rounding is unambiguous.
    const int q = static_cast<int>(std::lround((i - 16) * 7.9375));
    EXPECT_EQ(static_cast<int>(static_cast<std::int8_t>(b8[2 + i])), q) << "q8_0 value " << i;
  }

  const auto b4 = bytes_of(quantize_q4_0(x));
  ASSERT_EQ(b4.size(), 18u);
  EXPECT_EQ(b4[0], 0x00);  // f16 1.0 = 0x3c00
  EXPECT_EQ(b4[1], 0x3c);
  const auto q4 = [](int i) { return std::min(15, static_cast<int>(std::floor((i - 16) / 2.0 + 8.5))); };
  for (int j = 0; j < quant_block / 2; ++j)  // byte j: value j in the low nibble, value j + 16 in the high one
    EXPECT_EQ(b4[2 + j], q4(j) | (q4(j + 16) << 4)) << "q4_0 byte " << j;
  EXPECT_EQ(b4[2 + 15], 8 | (15 << 4));  // x = −0.5 → 8.0 → 8; x = 7.5 → 16 → clamped to 15
}

// The blocks a test draws: uniform, with outliers, all zero, tiny (the scale an f16 subnormal or zero), the top of
// the range, and a block whose largest magnitude appears twice with both signs.
std::vector<float> test_blocks(int blocks, const std::string& seed, float top) {
  auto x = uniform(std::int64_t(blocks) * quant_block, -1, 1, seed);
  std::mt19937 gen(7);
  for (int b = 0; b < blocks; ++b) {
    float* v = &x[static_cast<std::size_t>(b) * quant_block];
    switch (b % 6) {
      case 1: v[gen() % quant_block] *= 40.0f; break;
      case 2: std::fill(v, v + quant_block, 0.0f); break;
      case 3: for (int i = 0; i < quant_block; ++i) v[i] *= 1e-6f; break;
      case 4: v[5] = top; v[9] = -top; break;
      case 5: v[3] = -2.0f; v[30] = 2.0f; break;
      default: break;
    }
  }
  return x;
}

// |x − value| <= |d| / 2 + |q| · |d − d16|: rounding x / d to the integer q moves it by at most d / 2 (d for a
// q4_0 value clamped to 15: quant.hpp), and the stored scale d16 (d rounded to f16) is off by |d − d16| per unit
// of q. d is the quantizer's float (amax / 127, or m / −8), recomputed here in double; the quantizer's x · (1/d)
// in float is off by two roundings of |q| <= 128 steps, 2^-15 of a step, which the bound allows as 2^-14.
template <class Block>
void check_error_bound(const std::vector<float>& x) {
  for (std::size_t b = 0; b < x.size() / quant_block; ++b) {
    const float* v = &x[b * quant_block];
    const Block blk = quantize_block<Block>(v);
    double amax = 0, m = 0;
    for (int i = 0; i < quant_block; ++i)
      if (std::fabs(v[i]) > amax) amax = std::fabs(v[i]), m = v[i];
    const double d = std::is_same_v<Block, q8_0> ? amax / 127 : m / -8, d16 = to_float(blk.d);
    for (int i = 0; i < quant_block; ++i) {
      const double got = value(blk, i);
      int q = 0;  // the stored integer
      bool clamped = false;
      if constexpr (std::is_same_v<Block, q4_0>) q = nibble(blk, i) - 8, clamped = q == 7;
      else q = blk.qs[i];
      const double bound = std::fabs(d) * ((clamped ? 1.0 : 0.5) + 0x1p-14) + std::abs(q) * std::fabs(d - d16) * (1 + 0x1p-20);
      ASSERT_LE(std::fabs(v[i] - got), bound) << "block " << b << " value " << i << ": x " << v[i] << " d " << d16;
    }
  }
}

TEST(Quant, ErrorWithinHalfAStepPerValue) {
  check_error_bound<q8_0>(test_blocks(600, "q8 error", 1000.0f));
  check_error_bound<q4_0>(test_blocks(600, "q4 error", 1000.0f));
}

// ops::convert quantizes in a kernel on every space: the same bytes as the host's blocks, and to_f32 gives back
// the blocks' values exactly.
template <class Block>
void check_device_blocks() {
  const std::int64_t rows = 7, K = 17 * quant_block;
  const auto x = test_blocks(static_cast<int>(rows * K / quant_block), "device blocks", 500.0f);
  std::vector<Block> want(x.size() / quant_block);
  for (std::size_t b = 0; b < want.size(); ++b)
    want[b] = quantize_block<Block>(&x[b * quant_block]);
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    const auto q = ops::convert<Block>(Tensor<Space>::from_host({rows, K}, x));
    const auto got = q.to_vector();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t b = 0; b < want.size(); ++b)
      ASSERT_EQ(bytes_of(got[b]), bytes_of(want[b])) << Space::name() << " block " << b;
    const auto back = ops::to_f32(q).to_vector();
    for (std::size_t i = 0; i < back.size(); ++i)
      ASSERT_EQ(back[i], value(want[i / quant_block], static_cast<int>(i % quant_block))) << Space::name() << " " << i;
  });
}

TEST(Quant, DeviceBlocksEqualTheHosts) {
  check_device_blocks<q8_0>();
  check_device_blocks<q4_0>();
}

// x rounded to its int8 blocks, as every product with q8_0 or q4_0 weights takes it (kernels::quantize_activations),
// against the oracle (reference/quantize_activations.hpp) exactly: q · d is exact in double, and the kernel's float
// product rounds it once. Random rows, then blocks at the edges: zeros, denormals (x / d clamped to ±127),
// ±3e30, exact halves of a step (rounded away from zero), and a NaN and an infinity, which make their block NaN.
TEST(Quant, ActivationsRoundedToInt8Blocks) {
  for (std::int64_t rows : {1, 3, 17})
    for (std::int64_t K : {32, 544})
      for_each_space([&](auto space) {
        using Space = typename decltype(space)::type;
        const auto name = "int8 activations " + std::to_string(rows) + "x" + std::to_string(K);
        auto x = uniform(rows * K, -3, 3, name);
        if (rows == 17 && K == 544) {
          for (int i = 0; i < 32; ++i) {
            x[static_cast<std::size_t>(i)] = 0.0f;                                    // block 0: zeros
            x[static_cast<std::size_t>(32 + i)] = (i % 2 ? 1 : -1) * 1e-44f * (i + 1);  // block 1: denormals
            x[static_cast<std::size_t>(64 + i)] = (i - 16) * 3e30f;                   // block 2: huge
            x[static_cast<std::size_t>(96 + i)] = i == 0 ? 127.0f : (i - 16) + 0.5f;  // block 3: d = 1, halves
          }
          x[200] = std::nanf("");                                   // block 6: NaN
          x[300] = -std::numeric_limits<float>::infinity();        // block 9: -inf
        }
        const auto want = reference::quantize_activations(x.data(), rows, K);
        const Tensor<Space> X = Tensor<Space>::from_host({rows, K}, x), Y({rows, K});
        kernels::quantize_activations<Space>(Y.rows(), X.rows());
        const auto got = Y.to_vector();
        for (std::size_t i = 0; i < got.size(); ++i) {
          const bool poisoned = rows == 17 && K == 544 && (i / 32 == 6 || i / 32 == 9);
          if (poisoned) {
            ASSERT_TRUE(std::isnan(got[i])) << Space::name() << " " << name << " value " << i << ": " << got[i];
          } else {
            ASSERT_EQ(got[i], static_cast<float>(want[i]))  // a value, so -0 (the oracle's round(-0.3)) is 0
                << Space::name() << " " << name << " value " << i << ": " << got[i] << " vs " << want[i];
          }
        }
      });
}

// The host's AVX-512 rounding of a block (kernels::round_block_to_int8) and its integers and scale as the decode
// kernel takes them (block_to_int8) against the portable loops, bit for bit (on a host without AVX-512 both are the
// portable loops): 20000 blocks at scales from 2^-149 to 2^127, exact halves of a step at random scales, zeros and
// −0, a lone nonzero value, the clamp of a denormal scale, and blocks with a NaN or an infinity.
TEST(Quant, ActivationBlocksVectorEqualsPortable) {
  std::mt19937 rng(20261128);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-149, 120), lane(0, quant_block - 1), kind(0, 7);
  float x[quant_block], got[quant_block], want[quant_block];
  for (int block = 0; block < 20000; ++block) {
    const float scale = std::ldexp(1.0f, exponent(rng));
    const int k = kind(rng);
    for (int i = 0; i < quant_block; ++i) x[i] = unit(rng) * scale;
    if (k == 1) {  // exact halves: d = scale, x = (j + 1/2) · d
      x[0] = 127.0f * scale;
      for (int i = 1; i < quant_block; ++i) x[i] = (static_cast<float>(lane(rng) * 4 - 64) + 0.5f) * scale;
    } else if (k == 2) {
      for (float& v : x) v = lane(rng) % 2 ? 0.0f : -0.0f;
    } else if (k == 3) {
      for (float& v : x) v = 0.0f;
      x[lane(rng)] = unit(rng) * scale;
    } else if (k == 4) {
      x[lane(rng)] = lane(rng) % 2 ? NAN : -NAN;
    } else if (k == 5) {
      x[lane(rng)] = lane(rng) % 2 ? INFINITY : -INFINITY;
    } else if (k == 6) {  // denormals only: 1 / d inexact, x / d past ±127 before the clamp
      for (int i = 0; i < quant_block; ++i) x[i] = static_cast<float>(lane(rng) - 16) * 1e-45f;
    }
    kernels::round_block_to_int8(x, got);
    kernels::round_block_to_int8_portable(x, want);
    ASSERT_EQ(std::memcmp(got, want, sizeof got), 0)
        << "block " << block << " (kind " << k << ", scale " << scale << "): first difference at "
        << std::distance(got, std::mismatch(got, got + quant_block, want, [](float a, float b) {
             return std::memcmp(&a, &b, sizeof a) == 0;
           }).first);
    // The decode kernel's form: the integers and the scale.
    std::int8_t q[quant_block], q_want[quant_block];
    const float d = kernels::block_to_int8(x, q), d_want = kernels::block_to_int8_portable(x, q_want);
    ASSERT_EQ(std::memcmp(&d, &d_want, sizeof d), 0) << "block " << block << " (kind " << k << "): scale " << d
                                                     << ", portable " << d_want;
    ASSERT_EQ(std::memcmp(q, q_want, sizeof q), 0)
        << "block " << block << " (kind " << k << ", scale " << scale << "): integers differ first at "
        << std::distance(q, std::mismatch(q, q + quant_block, q_want).first);
  }
}

// bf16 and f16 through ops::convert and to_f32 on every space: each value rounded as half.hpp rounds it (checked
// there against a nearest-value oracle), NaN and infinities kept.
TEST(Quant, SixteenBitRoundTrips) {
  auto x = uniform(4099, -70000, 70000, "16-bit round trip");
  x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 65504.0f, x[4] = 1e-7f, x[5] = -0.0f;
  for (auto& v : x)
    if (std::fabs(v) >= 65504.0f && std::isfinite(v)) v = std::copysign(65504.0f, v);  // f16's range
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    const auto X = Tensor<Space>::from_host({4099}, x);
    const auto h = ops::to_f32(ops::convert<f16>(X)).to_vector(), b = ops::to_f32(ops::convert<bf16>(X)).to_vector();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float wh = to_float(to_f16(x[i])), wb = to_float(to_bf16(x[i]));
      ASSERT_TRUE(h[i] == wh || (std::isnan(h[i]) && std::isnan(wh))) << Space::name() << " f16 " << i << ": " << x[i];
      ASSERT_TRUE(b[i] == wb || (std::isnan(b[i]) && std::isnan(wb))) << Space::name() << " bf16 " << i << ": " << x[i];
    }
    EXPECT_TRUE(std::signbit(h[5]) && std::signbit(b[5]));
  });
}

// load_lanes (the host's vector loads, where the build has them) against load_lanes_portable, bit for bit, for every
// element type, on 16-value chunks at both halves of each block of a row with every scale and integer class.
template <class E>
void check_lanes(const std::vector<E>& row, int values) {
  for (int b = 0; b < values; b += 16) {
    float fast[16], portable[16];
    kernels::load_lanes<16, 1>(row.data(), b, 0, fast);
    kernels::load_lanes_portable<16, 1>(row.data(), b, 0, portable);
    for (int l = 0; l < 16; ++l)
      ASSERT_TRUE(fast[l] == portable[l] || (std::isnan(fast[l]) && std::isnan(portable[l])))
          << dtype_name(Element<E>::dtype) << " value " << b + l << ": " << fast[l] << " vs " << portable[l];
  }
}

TEST(Quant, VectorLoadsEqualPortableLoads) {
  const int blocks = 600, values = blocks * quant_block;
  const auto x = test_blocks(blocks, "lanes", 3000.0f);
  std::vector<q8_0> q8(blocks);
  std::vector<q4_0> q4(blocks);
  for (int b = 0; b < blocks; ++b) q8[b] = quantize_q8_0(&x[b * quant_block]), q4[b] = quantize_q4_0(&x[b * quant_block]);
  check_lanes(q8, values);
  check_lanes(q4, values);
  std::vector<f16> h(65536);
  std::vector<bf16> bh(65536);
  for (std::uint32_t p = 0; p < 65536; ++p) h[p] = f16{static_cast<std::uint16_t>(p)}, bh[p] = bf16{static_cast<std::uint16_t>(p)};
  check_lanes(h, 65536);
  check_lanes(bh, 65536);
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Quant, RefusesWhatItCannotStore) {
  using S = Kokkos::DefaultHostExecutionSpace;
  auto x = uniform(64, -1, 1, "refusals");
  const auto with = [&](std::size_t i, float v) {
    auto y = x;
    y[i] = v;
    return Tensor<S>::from_host({2, 32}, y);
  };
  EXPECT_EQ(refusal([&] { ops::convert<q8_0>(with(40, NAN)); }),
            "convert: x holds 1 NaN or infinite values; q8_0 cannot store them");
  EXPECT_EQ(refusal([&] { ops::convert<q4_0>(with(0, -INFINITY)); }),
            "convert: x holds 1 NaN or infinite values; q4_0 cannot store them");
  EXPECT_EQ(refusal([&] { ops::convert<q8_0>(Tensor<S>({3, 33})); }),
            "convert: x has shape [3, 33]; q8_0 stores the last dimension in blocks of 32");
  EXPECT_NE(refusal([&] { ops::convert<q8_0>(with(3, 9e6f)); }).find("beyond what q8_0 stores"), std::string::npos);
  EXPECT_NE(refusal([&] { ops::convert<q4_0>(with(3, 6e5f)); }).find("beyond what q4_0 stores"), std::string::npos);
  EXPECT_EQ(refusal([&] { ops::convert<q4_0>(with(3, 5e5f)); }), "(accepted)");
  EXPECT_NE(refusal([&] { ops::convert<f16>(with(3, 65520.0f)); }).find("beyond what f16 stores"), std::string::npos);
  EXPECT_EQ(refusal([&] { ops::convert<f16>(with(3, 65519.99f)); }), "(accepted)");  // rounds to 65504
  EXPECT_NE(refusal([&] { ops::convert<bf16>(with(3, 3.4e38f)); }).find("beyond what bf16 stores"), std::string::npos);
  EXPECT_EQ(refusal([&] { ops::convert<f16>(with(3, INFINITY)); }), "(accepted)");  // inf stays inf
  EXPECT_EQ(refusal([&] { ops::convert<bf16>(with(3, NAN)); }), "(accepted)");
}

}  // namespace
}  // namespace ptk::test
