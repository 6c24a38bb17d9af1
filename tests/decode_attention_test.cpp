// decode attention parity: ptk::ops::decode_attention (split-KV, grouped-query) against the float64 oracle,
// over cache lengths that cross the chunk boundaries, GQA ratios 1, 2, 4, several new tokens at once and forced
// split counts; cache positions past the filled length hold NaN, so reading one would show. The same cases over
// bf16 and f16 caches, against the oracle applied to the cache's rounded values (the test checks the kernel, not
// the rounding). Also kv_cache_append against a plain copy (and round_to for 16-bit caches), and the one-line
// refusals of bad shapes.
#include <limits>
#include <tuple>

#include "parity.hpp"
#include "ptk/ops/decode_attention.hpp"
#include "ptk/reference/decode_attention.hpp"

namespace ptk::test {
namespace {

struct DecodeCase {
  std::int64_t B, Hq, Hkv, Tq, Tmax, D, L;
  int splits = 0;  // 0: the op's choice
};

std::string name(const DecodeCase& c) {
  return "B" + std::to_string(c.B) + "_Hq" + std::to_string(c.Hq) + "_Hkv" + std::to_string(c.Hkv) + "_Tq" +
         std::to_string(c.Tq) + "_Tmax" + std::to_string(c.Tmax) + "_D" + std::to_string(c.D) + "_L" +
         std::to_string(c.L) + "_splits" + std::to_string(c.splits);
}
void PrintTo(const DecodeCase& c, std::ostream* os) { *os << name(c); }

const std::vector<DecodeCase> kCases = {
    {1, 1, 1, 1, 1, 1, 1},          {1, 4, 4, 1, 8, 16, 7},        {3, 4, 2, 1, 64, 32, 64},
    {2, 8, 2, 1, 128, 64, 127},     {1, 4, 1, 3, 40, 17, 17},      {2, 6, 3, 2, 600, 64, 513},
    {1, 8, 2, 1, 2048, 64, 1500},   {1, 8, 4, 4, 2000, 128, 1999}, {1, 2, 1, 1, 300, 3, 257, 7},
    {2, 4, 2, 3, 520, 32, 513, 3},  {1, 4, 4, 1, 130, 64, 129, 64}, {1, 2, 2, 5, 70, 8, 5, 2},
    {1, 3, 1, 1, 4096, 80, 4096},   {1, 1, 1, 1, 33, 16, 33, 33},
};

// The caches' filled positions random in [-1, 1], the rest NaN.
std::vector<float> cache_values(const DecodeCase& c, const std::string& seed) {
  auto x = uniform(c.B * c.Hkv * c.Tmax * c.D, -1, 1, seed);
  for (std::int64_t bh = 0; bh < c.B * c.Hkv; ++bh)
    for (std::int64_t t = c.L; t < c.Tmax; ++t)
      for (std::int64_t d = 0; d < c.D; ++d) x[(bh * c.Tmax + t) * c.D + d] = std::numeric_limits<float>::quiet_NaN();
  return x;
}

// The caches stored as E (f32, bf16, f16); the oracle sees the values they hold.
template <class Space, class Tune, class E = float>
void check_decode(const DecodeCase& c, const std::vector<float>& q, const std::vector<float>& k32,
                  const std::vector<float>& v32) {
  const Shape q_shape{c.B, c.Hq, c.Tq, c.D}, cache_shape{c.B, c.Hkv, c.Tmax, c.D}, lse_shape{c.B, c.Hq, c.Tq};
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  std::vector<E> k_stored, v_stored;
  std::vector<float> k = k32, v = v32;
  if constexpr (std::is_same_v<E, float>) {
    k_stored = k32;
    v_stored = v32;
  } else {
    k_stored = rounded<E>(k32);
    v_stored = rounded<E>(v32);
    k = values_of(k_stored);
    v = values_of(v_stored);
  }
  std::vector<float> want(q.size()), want_lse(static_cast<std::size_t>(c.B * c.Hq * c.Tq));
  reference::decode_attention(want.data(), want_lse.data(), q.data(), k.data(), v.data(), c.B, c.Hq, c.Hkv, c.Tq,
                              c.Tmax, c.D, c.L, scale);
  const auto kt = Tensor<Space, E>::from_host(cache_shape, k_stored), vt = Tensor<Space, E>::from_host(cache_shape, v_stored);
  const auto qt = Tensor<Space>::from_host(q_shape, q);
  const auto r = ops::decode_attention<Space, Tune>(qt, kt, vt, c.L, std::nullopt, c.splits);
  // Inputs in [-1, 1] at scale 1/sqrt(D): every score is below sqrt(D) in magnitude.
  const double bound = std::max(1.0, std::sqrt(static_cast<double>(c.D)));
  const auto out = r.out.to_vector();
  const char* type = dtype_name(Element<E>::dtype);
  EXPECT_TRUE(all_close(out, want, q_shape, tolerance::attention(c.D, c.L, bound))) << Space::name() << " out, " << type;
  EXPECT_TRUE(all_close(r.lse.to_vector(), want_lse, lse_shape, tolerance::attention_lse(c.D, c.L, bound)))
      << Space::name() << " lse, " << type;
  // The merge order is fixed: a second run is bitwise the first.
  EXPECT_EQ((ops::decode_attention<Space, Tune>(qt, kt, vt, c.L, std::nullopt, c.splits).out.to_vector()), out) << Space::name();
}

class DecodeAttentionParity : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(DecodeAttentionParity, Forward) {
  const auto& c = GetParam();
  const auto q = uniform(c.B * c.Hq * c.Tq * c.D, -1, 1, name(c) + "q");
  const auto k = cache_values(c, name(c) + "k"), v = cache_values(c, name(c) + "v");
  for_each_space([&](auto space) { check_decode<typename decltype(space)::type, typename decltype(space)::tune>(c, q, k, v); });
}

TEST_P(DecodeAttentionParity, Bf16AndF16Caches) {
  const auto& c = GetParam();
  const auto q = uniform(c.B * c.Hq * c.Tq * c.D, -1, 1, name(c) + "q");
  const auto k = cache_values(c, name(c) + "k"), v = cache_values(c, name(c) + "v");
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    check_decode<Space, Tune, bf16>(c, q, k, v);
    check_decode<Space, Tune, f16>(c, q, k, v);
  });
}

INSTANTIATE_TEST_SUITE_P(Sweep, DecodeAttentionParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

// Every split count gives the oracle's answer: the merge of partial (max, sum, acc) is exact math.
TEST(DecodeAttention, AnySplitCountMatches) {
  const DecodeCase base{2, 4, 2, 2, 300, 32, 257};
  const auto q = uniform(base.B * base.Hq * base.Tq * base.D, -1, 1, "splits-q");
  const auto k = cache_values(base, "splits-k"), v = cache_values(base, "splits-v");
  for (int splits : {1, 2, 5, 16, 257}) {
    DecodeCase c = base;
    c.splits = splits;
    for_each_space([&](auto space) { check_decode<typename decltype(space)::type, typename decltype(space)::tune>(c, q, k, v); });
  }
}

// Keys from columns 2.. of one projection, values from columns 1.. of another, into positions 5..7 of 9.
TEST(DecodeAttention, CacheAppendPlacesHeads) {
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    const std::int64_t B = 2, H = 3, Tmax = 9, D = 4, Tn = 3, W = 2 + H * D + 1, pos = 5;
    const auto k_rows = uniform(B * Tn * W, -1, 1, "append-k"), v_rows = uniform(B * Tn * W, -1, 1, "append-v");
    auto k_cache = Tensor<Space>({B, H, Tmax, D}, "k"), v_cache = Tensor<Space>({B, H, Tmax, D}, "v");
    ops::kv_cache_append(k_cache, v_cache, Tensor<Space>::from_host({B, Tn, W}, k_rows), 2,
                         Tensor<Space>::from_host({B, Tn, W}, v_rows), 1, pos);
    for (const auto& [cache, rows, offset] :
         {std::tuple{k_cache.to_vector(), k_rows, 2}, std::tuple{v_cache.to_vector(), v_rows, 1}})
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
          for (std::int64_t t = 0; t < Tmax; ++t)
            for (std::int64_t d = 0; d < D; ++d) {
              const bool written = t >= pos && t < pos + Tn;
              const float want = written ? rows[static_cast<std::size_t>((b * Tn + t - pos) * W + offset + h * D + d)] : 0.0f;
              ASSERT_EQ(cache[static_cast<std::size_t>(((b * H + h) * Tmax + t) * D + d)], want)
                  << Space::name() << " offset " << offset << " b " << b << " h " << h << " t " << t << " d " << d;
            }
  });
}

// A 16-bit cache holds the rows' values rounded to nearest even, bit for bit; past f16's range, inf. D = 35: two
// groups of 16 (one instruction each on an AVX-512 host: store_rounded_run) and 3 values a value at a time.
template <class E>
void check_rounding_append() {
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    const std::int64_t B = 1, H = 2, Tmax = 4, D = 35, Tn = 2, W = H * D, pos = 1;
    auto rows = uniform(B * Tn * W, -3, 3, "append-16");
    rows[0] = 70000.0f;  // beyond f16 (inf there), within bf16
    rows[1] = -1e-7f;    // an f16 subnormal
    auto k_cache = Tensor<Space, E>({B, H, Tmax, D}, "k"), v_cache = Tensor<Space, E>({B, H, Tmax, D}, "v");
    const auto r = Tensor<Space>::from_host({B, Tn, W}, rows);
    ops::kv_cache_append(k_cache, v_cache, r, 0, r, 0, pos);
    const auto k = k_cache.to_vector(), v = v_cache.to_vector();
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t t = 0; t < Tn; ++t)
        for (std::int64_t d = 0; d < D; ++d) {
          const E want = round_to<E>(rows[static_cast<std::size_t>(t * W + h * D + d)]);
          const std::size_t at = static_cast<std::size_t>((h * Tmax + pos + t) * D + d);
          ASSERT_EQ(k[at].bits, want.bits) << Space::name() << " " << dtype_name(Element<E>::dtype) << " k h " << h << " t " << t << " d " << d;
          ASSERT_EQ(v[at].bits, want.bits) << Space::name() << " " << dtype_name(Element<E>::dtype) << " v h " << h << " t " << t << " d " << d;
        }
  });
}

TEST(DecodeAttention, CacheAppendRoundsTo16Bit) {
  check_rounding_append<bf16>();
  check_rounding_append<f16>();
  EXPECT_TRUE(std::isinf(to_float(round_to<f16>(70000.0f))));
}

TEST(DecodeAttention, RefusesBadShapes) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto q = Tensor<Space>({1, 4, 1, 8}, "q");
  const auto cache = Tensor<Space>({1, 3, 16, 8}, "cache"), cache2 = Tensor<Space>({1, 2, 16, 8}, "cache");
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { ops::decode_attention(q, cache, cache, 4); }).find("not a multiple"), std::string::npos);
  EXPECT_NE(message([&] { ops::decode_attention(q, cache2, cache2, 17); }).find("length 17"), std::string::npos);
  EXPECT_NE(message([&] { ops::decode_attention(q, cache2, cache2, 0); }).find("length 0"), std::string::npos);
  EXPECT_NE(message([&] { ops::decode_attention(q, cache2, cache, 4); }).find("same shape"), std::string::npos);
  const auto rows = Tensor<Space>({1, 2, 16}, "rows"), narrow = Tensor<Space>({1, 2, 15}, "rows");
  EXPECT_NE(message([&] { ops::kv_cache_append(cache2, cache2, rows, 0, rows, 0, 15); }).find("do not fit"),
            std::string::npos);
  EXPECT_NE(message([&] { ops::kv_cache_append(cache2, cache2, rows, 0, narrow, 0, 0); }).find("columns"),
            std::string::npos);
}

}  // namespace
}  // namespace ptk::test
