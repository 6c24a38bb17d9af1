// rope parity: ptk::ops::rope and rope_backward (+=) against the oracle, both layouts, with position offsets; rope
// fused into a KV cache append against rope and the append.
#include <algorithm>
#include <cstring>
#include <tuple>

#include "parity.hpp"
#include "ptk/ops/decode_attention.hpp"
#include "ptk/ops/rope.hpp"
#include "ptk/reference/rope.hpp"

namespace ptk::test {
namespace {

struct RopeCase {
  Shape shape;  // [B,T,H,D] or [B,H,T,D]
  bool bhtd;
  std::int64_t pos_offset;
};

std::string name(const RopeCase& c) {
  return shape_name(c.shape) + (c.bhtd ? "_bhtd" : "_bthd") + (c.pos_offset ? "_offset" + std::to_string(c.pos_offset) : "");
}
void PrintTo(const RopeCase& c, std::ostream* os) { *os << name(c); }

const std::vector<RopeCase> kCases = [] {
  std::vector<RopeCase> cases;
  for (std::int64_t t : {1, 3, 17, 127, 513})
    for (std::int64_t d : {2, 6, 64, 130})
      for (bool bhtd : {false, true}) cases.push_back({bhtd ? Shape{2, 3, t, d} : Shape{2, t, 3, d}, bhtd, 0});
  cases.push_back({{1, 17, 1, 64}, false, 1000});
  cases.push_back({{3, 1, 5, 32}, true, 8191});
  cases.push_back({{1, 1, 1, 2}, false, 0});
  return cases;
}();

// E: the element type of X, Y, dY and dX (f32, bf16, f16); the oracle runs on the stored values.
template <class Space, class Tune, class E = float>
void check_rope(const RopeCase& c) {
  auto x = uniform(element_count(c.shape), -1, 1, name(c) + "x");
  auto dy = uniform(element_count(c.shape), -1, 1, name(c) + "dy");
  auto base = uniform(element_count(c.shape), -1, 1, name(c) + "base");
  round_in_place<E>(x);
  round_in_place<E>(dy);
  round_in_place<E>(base);
  const auto B = c.shape[0], D = c.shape[3];
  // The oracle's [O, T, H, D].
  const auto O = c.bhtd ? B * c.shape[1] : B, T = c.bhtd ? c.shape[2] : c.shape[1], H = c.bhtd ? 1 : c.shape[2];
  std::vector<float> want(x.size()), want_dx = base;
  reference::rope_forward(want.data(), x.data(), O, T, H, D, 10000.0, c.pos_offset);
  reference::rope_backward(want_dx.data(), dy.data(), O, T, H, D, 10000.0, c.pos_offset);

  const auto layout = c.bhtd ? ops::RopeLayout::bhtd : ops::RopeLayout::bthd;
  const auto y = ops::rope(Tensor<Space, E>::from_host(c.shape, rounded<E>(x)), c.pos_offset, 10000.0f, layout);
  const auto tol = stored_output<E>(tolerance::rope);
  EXPECT_TRUE(all_close(values_of(y.to_vector()), want, c.shape, tol)) << Space::name() << ' ' << element_name<E>() << " forward";
  const auto dx = Tensor<Space, E>::from_host(c.shape, rounded<E>(base));
  ops::rope_backward(dx, Tensor<Space, E>::from_host(c.shape, rounded<E>(dy)), c.pos_offset, 10000.0f, layout);
  EXPECT_TRUE(all_close(values_of(dx.to_vector()), want_dx, c.shape, tol)) << Space::name() << ' ' << element_name<E>() << " backward";
}

class RopeParity : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeParity, ForwardBackward) {
  for_each_space([&](auto space) { check_rope<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}

TEST_P(RopeParity, ForwardBackward16Bit) {
  for_each_space_16bit([&](auto space, auto e) {
    check_rope<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(GetParam());
  });
}

INSTANTIATE_TEST_SUITE_P(Sweep, RopeParity, ::testing::ValuesIn(kCases), [](const auto& info) { return name(info.param); });

TEST(RopeErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::rope(Tensor<S>({1, 4, 2, 7}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rope: the last dimension D of X must be even, got shape [1, 4, 2, 7]");
  }
  try {
    ops::rope_backward(Tensor<S>({1, 4, 2, 6}), Tensor<S>({1, 4, 2, 8}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rope_backward: dx has shape [1, 4, 2, 6] but dout has shape [1, 4, 2, 8]");
  }
  EXPECT_THROW(ops::rope(Tensor<S>({4, 2, 8})), Error);
  EXPECT_THROW(ops::rope(Tensor<S>({1, 4, 2, 8}), -1), Error);
}

// ops::rope_kv_cache_append (a cached layer's rope and append in one pass) against ops::rope on q and k, then
// kv_cache_append, bit for bit: q and k side by side in one rows tensor past a column of padding (their offsets),
// v at an offset of its own, grouped and full kv heads, one and several new tokens at 0 and later positions, the
// rotated rows and the caches of every type; and its refusals.
template <class Space, class E>
void check_rope_append(std::int64_t B, std::int64_t Tn, std::int64_t Hq, std::int64_t Hkv, std::int64_t D, std::int64_t pos) {
  const std::int64_t Tmax = pos + Tn + 2, Wqk = 1 + (Hq + Hkv) * D, Wv = 2 + Hkv * D;
  const std::string label = "append B" + std::to_string(B) + " Tn" + std::to_string(Tn) + " H" + std::to_string(Hq) +
                            "/" + std::to_string(Hkv) + " D" + std::to_string(D) + " pos" + std::to_string(pos) + " " +
                            element_name<E>();
  const auto qk = uniform(B * Tn * Wqk, -2, 2, label + "qk"), v = uniform(B * Tn * Wv, -2, 2, label + "v");
  const auto columns = [&](std::int64_t first, std::int64_t heads) {  // [B, Tn, heads, D] from the qk rows
    std::vector<float> out;
    for (std::int64_t r = 0; r < B * Tn; ++r)
      out.insert(out.end(), qk.begin() + r * Wqk + first, qk.begin() + r * Wqk + first + heads * D);
    return Tensor<Space>::from_host({B, Tn, heads, D}, out);
  };
  const auto want_q = ops::rope(columns(1, Hq), pos).to_vector();
  const auto want_k = ops::rope(columns(1 + Hq * D, Hkv), pos);
  auto want_kc = Tensor<Space, E>({B, Hkv, Tmax, D}, "k"), want_vc = Tensor<Space, E>({B, Hkv, Tmax, D}, "v");
  const auto v_rows = Tensor<Space>::from_host({B, Tn, Wv}, v);
  ops::kv_cache_append(want_kc, want_vc, want_k.reshape({B, Tn, Hkv * D}), 0, v_rows, 2, pos);

  const auto rows = Tensor<Space>::from_host({B, Tn, Wqk}, qk);
  auto kc = Tensor<Space, E>({B, Hkv, Tmax, D}, "k"), vc = Tensor<Space, E>({B, Hkv, Tmax, D}, "v");
  ops::rope_kv_cache_append(kc, vc, rows, 1, Hq, rows, 1 + Hq * D, v_rows, 2, pos, 10000.0f);
  const auto got = rows.to_vector(), wk = want_k.to_vector();
  std::vector<float> want = qk;  // the padding column untouched, q and k rotated in place
  for (std::int64_t r = 0; r < B * Tn; ++r) {
    std::copy_n(want_q.begin() + r * Hq * D, Hq * D, want.begin() + r * Wqk + 1);
    std::copy_n(wk.begin() + r * Hkv * D, Hkv * D, want.begin() + r * Wqk + 1 + Hq * D);
  }
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << Space::name() << " " << label << " rows";
  for (const auto& [a, b, what] : {std::tuple{kc.to_vector(), want_kc.to_vector(), "K cache"},
                                    std::tuple{vc.to_vector(), want_vc.to_vector(), "V cache"}})
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(E)), 0) << Space::name() << " " << label << " " << what;
}

TEST(RopeKvAppend, EqualsRopeThenAppendBitForBit) {
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    const auto run = [&](auto e) {
      using E = decltype(e);
      check_rope_append<Space, E>(1, 1, 4, 2, 64, 5);
      check_rope_append<Space, E>(2, 3, 3, 1, 6, 0);
      check_rope_append<Space, E>(1, 17, 2, 2, 2, 100);
      check_rope_append<Space, E>(2, 17, 12, 4, 130, 0);
    };
    run(float{});
    run(bf16{});
    run(f16{});
  });
  using S = Kokkos::DefaultExecutionSpace;
  const Tensor<S> kc({1, 2, 8, 6}), q({1, 1, 12}), k({1, 1, 12});
  EXPECT_THROW(ops::rope_kv_cache_append(kc, kc, q, 1, 2, k, 0, k, 0, 0, 10000.0f), Error);  // q heads past the rows
  EXPECT_THROW(ops::rope_kv_cache_append(kc, kc, q, 0, 2, k, 0, k, 0, 0, 0.0f), Error);      // base
  EXPECT_THROW(ops::rope_kv_cache_append(kc, kc, q, 0, 2, k, 0, k, 0, 8, 10000.0f), Error);  // past Tmax
  const Tensor<S> odd({1, 2, 8, 5}), q_odd({1, 1, 10});
  EXPECT_THROW(ops::rope_kv_cache_append(odd, odd, q_odd, 0, 2, q_odd, 0, q_odd, 0, 0, 10000.0f), Error);  // D odd
}

}  // namespace
}  // namespace ptk::test
