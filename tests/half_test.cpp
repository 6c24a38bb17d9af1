// bf16 and f16 (core/half.hpp) against an oracle that knows nothing of their bit tricks: every one of the 65536
// patterns of each type decoded from its fields in double, and rounding as "the nearest value of the type, ties to
// the even pattern", found by a search over those decoded values (with inf standing in as the next binade's first
// value, as IEEE's overflow rule makes it). Checked: every pattern to float and back, every midpoint between
// neighbours (the ties) and a float either side of it, 2^20 random floats over the whole range, the specials; and
// the conversions inside a Kokkos kernel on every space of the build, against the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "bits.hpp"
#include "parity.hpp"
#include "ptk/core/half.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/convert.hpp"

namespace ptk::test {
namespace {

// A 16-bit format by its field widths: value = (-1)^s · 2^(e - bias) · (1 + m / 2^mbits), or 2^(1 - bias) · m / 2^mbits
// for e = 0; e all ones is inf (m = 0) or NaN.
struct Format {
  int exponent_bits, mantissa_bits;
  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  bool is_nan(std::uint16_t p) const {
    const int e = (p >> mantissa_bits) & ((1 << exponent_bits) - 1), m = p & ((1 << mantissa_bits) - 1);
    return e == (1 << exponent_bits) - 1 && m != 0;
  }
  double decode(std::uint16_t p) const {
    const int e = (p >> mantissa_bits) & ((1 << exponent_bits) - 1), m = p & ((1 << mantissa_bits) - 1);
    const double sign = (p & 0x8000) ? -1.0 : 1.0;
    if (e == (1 << exponent_bits) - 1) return m ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
    if (e == 0) return sign * std::ldexp(static_cast<double>(m), 1 - bias() - mantissa_bits);
    return sign * std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mantissa_bits), e - bias());
  }
  // The non-negative finite values in pattern order (increasing), then inf as the value 2^(emax + 1).
  std::vector<std::pair<double, std::uint16_t>> ladder() const {
    std::vector<std::pair<double, std::uint16_t>> out;
    const std::uint16_t inf = static_cast<std::uint16_t>(((1 << exponent_bits) - 1) << mantissa_bits);
    for (std::uint16_t p = 0; p < inf; ++p) out.emplace_back(decode(p), p);
    out.emplace_back(std::ldexp(1.0, (1 << exponent_bits) - 1 - bias()), inf);
    return out;
  }
  // The pattern x rounds to: nearest on the ladder, ties to the even pattern; NaN is any NaN.
  std::uint16_t round(float x, const std::vector<std::pair<double, std::uint16_t>>& lad) const {
    const double a = std::fabs(static_cast<double>(x));
    const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    if (a >= lad.back().first) return sign | lad.back().second;
    const auto hi = std::lower_bound(lad.begin(), lad.end(), std::make_pair(a, std::uint16_t{0}));
    if (hi->first == a) return sign | hi->second;
    const auto lo = hi - 1;
    const double dl = a - lo->first, dh = hi->first - a;
    if (dl < dh || (dl == dh && (lo->second & 1) == 0)) return sign | lo->second;
    return sign | hi->second;
  }
};

constexpr Format kF16{5, 10}, kBf16{8, 7};

template <class T, class ToT>
void check_format(const Format& fmt, ToT to_t, const char* name) {
  const auto lad = fmt.ladder();
  std::vector<float> inputs;
  int failures = 0;
  // Every pattern to float (exact) and back (the same pattern; NaN stays a NaN of the same sign).
  for (std::uint32_t p = 0; p < 65536; ++p) {
    const float f = to_float(T{static_cast<std::uint16_t>(p)});
    const double want = fmt.decode(static_cast<std::uint16_t>(p));
    if (fmt.is_nan(static_cast<std::uint16_t>(p))) {
      const T back = to_t(f);
      if (!std::isnan(f) || !fmt.is_nan(back.bits) || (back.bits & 0x8000) != (p & 0x8000)) {
        ADD_FAILURE() << name << " NaN pattern " << std::hex << p << " -> " << f << " -> " << back.bits;
        if (++failures > 10) return;
      }
      continue;
    }
    if (static_cast<double>(f) != want || std::signbit(f) != ((p & 0x8000) != 0)) {
      ADD_FAILURE() << name << " pattern 0x" << std::hex << p << ": to_float " << f << ", want " << want;
      if (++failures > 10) return;
    }
    inputs.push_back(f);
  }
  // Midpoints of neighbours (exact in float: one more bit than the type) and a float either side.
  for (std::size_t i = 0; i + 1 < lad.size(); ++i) {
    const float mid = static_cast<float>((lad[i].first + lad[i + 1].first) / 2);
    for (const float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, HUGE_VALF)}) {
      inputs.push_back(x);
      inputs.push_back(-x);
    }
  }
  std::mt19937 rng(2026);
  for (int i = 0; i < (1 << 20); ++i) {
    const float x = from_bits(static_cast<std::uint32_t>(rng()));
    if (!std::isnan(x)) inputs.push_back(x);
  }
  for (const float x : {0.0f, -0.0f, HUGE_VALF, -HUGE_VALF, std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::min()})
    inputs.push_back(x);
  for (const float x : inputs) {
    const std::uint16_t got = to_t(x).bits, want = fmt.round(x, lad);
    if (got != want) {
      ADD_FAILURE() << name << " from float " << x << " (bits 0x" << std::hex << to_bits(x) << "): got 0x" << got
                    << ", want 0x" << want;
      if (++failures > 10) return;
    }
  }
  // NaNs of any payload and sign come out NaN with their sign.
  for (const std::uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc00000u, 0x7fbfffffu, 0xff800001u}) {
    const T t = to_t(from_bits(nan));
    EXPECT_TRUE(fmt.is_nan(t.bits) && (t.bits & 0x8000) == ((nan >> 16) & 0x8000))
        << name << " NaN 0x" << std::hex << nan << " -> 0x" << t.bits;
  }
}

TEST(Half, F16AgainstTheLadder) { check_format<f16>(kF16, [](float x) { return to_f16(x); }, "f16"); }
TEST(Half, Bf16AgainstTheLadder) { check_format<bf16>(kBf16, [](float x) { return to_bf16(x); }, "bf16"); }

// to_float(f16) takes the host's F16C instruction where the build targets it (the ladder test above then checks
// that one): the integer code the other targets run, and the masked form the row ops' loops read f16 with (widen),
// must give the same float for every pattern (NaN: a NaN of the same sign; F16C also quiets a signalling one).
TEST(Half, PortableF16DecodeMatchesToFloat) {
  for (std::uint32_t p = 0; p < 65536; ++p) {
    const f16 h{static_cast<std::uint16_t>(p)};
    const float a = to_float(h);
    for (const float b : {detail::f16_to_float_portable(h), detail::f16_to_float_masked(h), widen(h)}) {
      if (std::isnan(a) || std::isnan(b))
        ASSERT_TRUE(std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b)) << std::hex << p;
      else
        ASSERT_EQ(to_bits(a), to_bits(b)) << std::hex << p;
    }
  }
}

// Both conversions and back inside a kernel (a functor: nvcc does not take a device lambda in a gtest body).
template <class Space>
struct ConvertEach {
  ConstVector<Space> x;
  Kokkos::View<std::uint16_t**, typename Space::memory_space> bits16;
  Matrix<Space> back;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    bits16(i, 0) = to_f16(x(i)).bits;
    bits16(i, 1) = to_bf16(x(i)).bits;
    back(i, 0) = to_float(f16{bits16(i, 0)});
    back(i, 1) = to_float(bf16{bits16(i, 1)});
  }
};

// The same functions inside a kernel on every space of the build give the host's bits.
TEST(Half, ConversionsInAKernelMatchTheHost) {
  std::vector<float> xs;
  std::mt19937 rng(7);
  for (int i = 0; i < 4099; ++i) xs.push_back(from_bits(static_cast<std::uint32_t>(rng())));
  xs.push_back(65519.996f);
  xs.push_back(65520.0f);
  xs.push_back(std::ldexp(1.0f, -25));
  const auto same = [](float got, float want) { return to_bits(got) == to_bits(want) || (std::isnan(got) && std::isnan(want)); };
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    const auto n = static_cast<std::int64_t>(xs.size());
    const auto in = Tensor<Space>::from_host({n}, xs);
    Kokkos::View<std::uint16_t**, typename Space::memory_space> out("ptk::half_test", n, 2);
    Tensor<Space> back({n, 2});
    Kokkos::parallel_for("ptk::half_test", Kokkos::RangePolicy<Space>(0, n),
                         ConvertEach<Space>{in.flat(), out, Matrix<Space>(back.data(), n, 2)});
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    const auto host_back = back.to_vector();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      ASSERT_EQ(host(i, 0), to_f16(xs[i]).bits) << Space::name() << " f16 of " << xs[i];
      ASSERT_EQ(host(i, 1), to_bf16(xs[i]).bits) << Space::name() << " bf16 of " << xs[i];
      ASSERT_TRUE(same(host_back[2 * i], to_float(f16{host(i, 0)}))) << Space::name() << " f16 back, " << xs[i];
      ASSERT_TRUE(same(host_back[2 * i + 1], to_float(bf16{host(i, 1)}))) << Space::name() << " bf16 back, " << xs[i];
    }
  });
}

// kernels::convert to f16 (on a host with AVX-512, VCVTPS2PH 16 at a time; elsewhere to_f16 per value) gives
// to_f16's bits on every space: every f16 value, the midpoints between neighbours and a float either side (the
// ties), NaNs with payloads and signs, the overflow threshold, float subnormals, and 2^20 random bit patterns;
// 2^20 + 7 values, so the vector path's tail runs too.
TEST(Half, VectorF16RoundingMatchesToF16) {
  std::vector<float> xs;
  for (std::uint32_t p = 0; p < 0x7c00u; ++p) {
    const float v = to_float(f16{static_cast<std::uint16_t>(p)}), next = to_float(f16{static_cast<std::uint16_t>(p + 1)});
    const float mid = static_cast<float>((static_cast<double>(v) + next) / 2);
    for (float x : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  for (float x : {65519.996f, 65520.0f, 1e30f, std::numeric_limits<float>::infinity(), 1e-40f, 1e-45f,
                  from_bits(0x7fc00001u), from_bits(0xffa00000u), from_bits(0x7f800001u)})
    xs.push_back(x);
  std::mt19937 rng(11);
  while (xs.size() < (std::size_t{1} << 20) + 7) xs.push_back(from_bits(static_cast<std::uint32_t>(rng())));
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    const auto n = static_cast<std::int64_t>(xs.size());
    const auto in = Tensor<Space>::from_host({n}, xs);
    const auto out = Tensor<Space, f16>::uninitialized({n});
    kernels::convert<Space, f16>(out.flat(), in.flat());
    const auto got = out.to_vector();
    for (std::size_t i = 0; i < xs.size(); ++i)
      ASSERT_EQ(got[i].bits, to_f16(xs[i]).bits) << Space::name() << " f16 of " << xs[i] << " (bits " << std::hex
                                                 << to_bits(xs[i]) << ")";
  });
  // The row ops' blocks of 32 stores (kernels::store_rounded: VCVTPS2PH for f16, the vectorized to_bf16 for bf16).
  std::vector<f16> h(xs.size());
  std::vector<bf16> b(xs.size());
  for (std::size_t q = 0; q + 32 <= xs.size(); q += 32) {
    float t[32];
    std::copy(xs.begin() + static_cast<std::ptrdiff_t>(q), xs.begin() + static_cast<std::ptrdiff_t>(q + 32), t);
    kernels::store_rounded(h.data() + q, t);
    kernels::store_rounded(b.data() + q, t);
  }
  for (std::size_t i = 0; i < xs.size() / 32 * 32; ++i) {
    ASSERT_EQ(h[i].bits, to_f16(xs[i]).bits) << "store_rounded f16 of bits " << std::hex << to_bits(xs[i]);
    ASSERT_EQ(b[i].bits, to_bf16(xs[i]).bits) << "store_rounded bf16 of bits " << std::hex << to_bits(xs[i]);
  }
}

}  // namespace
}  // namespace ptk::test
