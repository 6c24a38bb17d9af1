// attention parity: ptk::ops::attention (composed) against the float64 oracle.
#include "parity.hpp"
#include "ptk/ops/attention.hpp"
#include "ptk/reference/attention.hpp"

namespace ptk::test {
namespace {

struct AttentionCase {
  std::int64_t B, H, T, S, D;
  bool causal;
};

std::string name(const AttentionCase& c) {
  return "B" + std::to_string(c.B) + "_H" + std::to_string(c.H) + "_T" + std::to_string(c.T) + "_S" +
         std::to_string(c.S) + "_D" + std::to_string(c.D) + (c.causal ? "_causal" : "");
}

// gtest and ctest show the case by its name, not its bytes.
void PrintTo(const AttentionCase& c, std::ostream* os) { *os << name(c); }

const std::vector<AttentionCase> kCases = {
    {1, 1, 1, 1, 1, false},     {1, 1, 1, 1, 1, true},      {2, 3, 17, 17, 8, false}, {2, 3, 17, 17, 8, true},
    {1, 2, 127, 127, 64, true}, {2, 1, 3, 17, 5, false},    {1, 1, 17, 3, 33, false}, {1, 2, 513, 513, 16, true},
    {3, 2, 64, 127, 32, false}, {1, 12, 65, 65, 64, true},
};

template <class Space>
void check_attention(const AttentionCase& c) {
  const Shape q_shape{c.B, c.H, c.T, c.D}, kv_shape{c.B, c.H, c.S, c.D};
  const auto q = uniform(element_count(q_shape), -1, 1, name(c) + "q");
  const auto k = uniform(element_count(kv_shape), -1, 1, name(c) + "k");
  const auto v = uniform(element_count(kv_shape), -1, 1, name(c) + "v");
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  std::vector<float> want(q.size());
  reference::attention_forward(want.data(), q.data(), k.data(), v.data(), c.B, c.H, c.T, c.S, c.D, scale, c.causal);

  const auto r = ops::attention(Tensor<Space>::from_host(q_shape, q), Tensor<Space>::from_host(kv_shape, k),
                                Tensor<Space>::from_host(kv_shape, v), std::nullopt, c.causal);
  EXPECT_TRUE(all_close(r.out.to_vector(), want, q_shape, tolerance::attention(c.D, c.S))) << Space::name();
}

class AttentionParity : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionParity, Forward) {
  for_each_space([&](auto space) { check_attention<typename decltype(space)::type>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Sweep, AttentionParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

TEST(AttentionErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::attention(Tensor<S>({1, 2, 5, 8}), Tensor<S>({1, 2, 7, 8}), Tensor<S>({1, 2, 7, 8}), std::nullopt, true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "attention: causal needs T == S, got Q [1, 2, 5, 8], K [1, 2, 7, 8], V [1, 2, 7, 8]");
  }
  EXPECT_THROW(ops::attention(Tensor<S>({1, 2, 5, 8}), Tensor<S>({1, 2, 7, 4}), Tensor<S>({1, 2, 7, 4})), Error);
  EXPECT_THROW(ops::attention(Tensor<S>({2, 5, 8}), Tensor<S>({2, 5, 8}), Tensor<S>({2, 5, 8})), Error);
  // 1 x 1 x 50000 x 50000 scores exceed the 32-bit index range: refused before allocating 10 GB.
  try {
    ops::attention(Tensor<S>({1, 1, 50000, 1}), Tensor<S>({1, 1, 50000, 1}), Tensor<S>({1, 1, 50000, 1}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "attention: the score matrix would have shape [1, 1, 50000, 50000] (2500000000 elements); "
                           "ptk kernels index with 32-bit ints");
  }
}

}  // namespace
}  // namespace ptk::test
