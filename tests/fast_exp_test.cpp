// fast_exp against exp in double: its derived bound (docs/tolerances.md) over a dense sweep of
// [-87.3, 88.7], the edges of that range and the special values.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ptk/kernels/detail/fast_exp.hpp"
#include "bits.hpp"
#include "tolerances.hpp"

namespace ptk::test {
namespace {

using kernels::fast_exp;
using kernels::fast_exp_nonpositive;

// fast_exp's clamps, ln(FLT_MIN) and ln(FLT_MAX) rounded to float. hi rounds up: e^hi is above
// FLT_MAX by more than half an ulp, so the correctly rounded result there is +inf too.
constexpr float lo = -87.3365479f, hi = 88.7228394f;

// Relative error of fast_exp(x) in units of u; results below FLT_MIN are judged by their absolute
// error against the subnormal spacing (one rounding there is 2^-150 absolute at most).
double error_in_u(float x) {
  const double want = std::exp(static_cast<double>(x));
  const double got = fast_exp(x);
  double err = std::fabs(got - want);
  if (want < FLT_MIN) err = std::fmax(0.0, err - 0x1p-150);
  return err / want / tolerance::u;
}

// Every 61st float of [lo, hi) (about 37 M points, every exponent and every residue class of the
// range reduction), plus every float of [-1, 1] that is a multiple of 2^-16.
TEST(FastExp, WithinItsBoundOverTheRange) {
  double worst = 0;
  float worst_x = 0;
  auto check = [&](float x) {
    const double e = error_in_u(x);
    if (!(e <= worst)) {
      worst = e;
      worst_x = x;
    }
  };
  for (std::uint32_t b = 0; b < to_bits(hi); b += 61) check(from_bits(b));
  for (std::uint32_t b = 0x80000000u; b <= to_bits(lo); b += 61) check(from_bits(b));
  for (int k = -65536; k <= 65536; ++k) check(static_cast<float>(k) * 0x1p-16f);
  check(lo);
  check(std::nextafter(hi, 0.0f));
  check(std::nextafter(lo, 0.0f));
  EXPECT_LE(worst, tolerance::fast_exp / tolerance::u) << "worst at x = " << worst_x;
  std::printf("fast_exp: worst %.3f u at x = %.9g (bound %.2f u)\n", worst, worst_x, tolerance::fast_exp / tolerance::u);
}

TEST(FastExp, SpecialValuesAndEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
  EXPECT_EQ(fast_exp(-0.0f), 1.0f);
  EXPECT_EQ(fast_exp(1e-30f), 1.0f);
  EXPECT_EQ(fast_exp(inf), inf);
  EXPECT_EQ(fast_exp(-inf), 0.0f);
  for (float x : {std::nextafter(hi, inf), 88.73f, 89.0f, 100.0f, 1e30f, FLT_MAX}) EXPECT_EQ(fast_exp(x), inf) << x;
  for (float x : {std::nextafter(lo, -inf), -87.34f, -88.0f, -103.9f, -1e30f, -FLT_MAX}) {
    EXPECT_EQ(fast_exp(x), 0.0f) << x;
    EXPECT_FALSE(std::signbit(fast_exp(x))) << x;
  }
  // The edges: e^hi rounds to +inf; the float below it is finite (and within the bound, above).
  EXPECT_EQ(fast_exp(hi), inf);
  EXPECT_TRUE(std::isfinite(fast_exp(std::nextafter(hi, 0.0f))));
  EXPECT_GE(fast_exp(lo), 0.5f * FLT_MIN);
  // NaNs of either sign and any payload (quiet and signalling) stay NaN; the exponent bits they
  // put through the 2^n construction are unsigned arithmetic, so UBSan has nothing to flag.
  for (std::uint32_t b : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu})
    EXPECT_TRUE(std::isnan(fast_exp(from_bits(b)))) << std::hex << b;
}

// fast_exp_nonpositive (softmax, gelu, silu) has no clamp and applies 2^n to the exponent bits: on
// its domain x <= 1 it must give fast_exp's result bit for bit from its floor (-86.9) up, and +0
// below (the bit mask clears whatever the arithmetic made of x, -inf and -FLT_MAX included; between
// ln(FLT_MIN) and the floor that is a flush of results below 1.8e-38); NaN stays NaN, any payload.
TEST(FastExp, NonpositiveVariantMatchesOnItsDomain) {
  const float inf = std::numeric_limits<float>::infinity();
  const float floor_x = kernels::fast_exp_nonpositive_floor;
  int differing = 0;
  float first_x = 0;
  auto check = [&](float x) {
    if (to_bits(fast_exp_nonpositive(x)) != to_bits(fast_exp(x)) && differing++ == 0) first_x = x;
  };
  for (std::uint32_t b = 0x80000000u; b <= to_bits(floor_x); b += 61) check(from_bits(b));
  for (std::uint32_t b = 0; b <= to_bits(1.0f); b += 61) check(from_bits(b));
  check(floor_x);
  check(1.0f);
  EXPECT_EQ(differing, 0) << "first at x = " << first_x;
  EXPECT_GT(fast_exp_nonpositive(floor_x), 1.5f * FLT_MIN);
  for (float x : {std::nextafter(floor_x, -inf), -87.0f, -87.2f, lo, -87.34f, -88.0f, -103.9f, -1e30f, -FLT_MAX, -inf}) {
    EXPECT_EQ(fast_exp_nonpositive(x), 0.0f) << x;
    EXPECT_FALSE(std::signbit(fast_exp_nonpositive(x))) << x;
  }
  for (std::uint32_t b : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FC001FFu})
    EXPECT_TRUE(std::isnan(fast_exp_nonpositive(from_bits(b)))) << std::hex << b;
}

}  // namespace
}  // namespace ptk::test
