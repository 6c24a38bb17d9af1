// The small ops around the model's big ones against the oracle: residual add and its backward (accumulate),
// a Linear layer's bias forward and backward (column sums), and the head split / merge of attention.
#include "parity.hpp"
#include "ptk/kernels/add.hpp"
#include "ptk/kernels/heads.hpp"
#include "ptk/kernels/mul.hpp"
#include "ptk/reference/add.hpp"

namespace ptk::test {
namespace {

struct AddCase {
  std::int64_t rows, cols;
};
std::string name(const AddCase& c) { return std::to_string(c.rows) + "x" + std::to_string(c.cols); }
void PrintTo(const AddCase& c, std::ostream* os) { *os << name(c); }

const std::vector<AddCase> kCases = {{1, 1}, {1, 3}, {3, 17}, {17, 127}, {127, 513}, {513, 33}, {4099, 17}, {2, 3072}};

template <class Space, class Tune>
void check_add(const AddCase& c) {
  const auto n = c.rows * c.cols;
  const Shape shape{c.rows, c.cols};
  const auto a = uniform(n, -1, 1, "add-a" + name(c)), b = uniform(n, -1, 1, "add-b" + name(c));
  const auto bias = uniform(c.cols, -1, 1, "add-bias" + name(c));
  const auto A = Tensor<Space>::from_host(shape, a), B = Tensor<Space>::from_host(shape, b);

  std::vector<float> want(static_cast<std::size_t>(n));
  reference::add_forward(want.data(), a.data(), b.data(), n);
  Tensor<Space> Y(shape);
  kernels::add_forward<Space>(Y.flat(), A.flat(), B.flat());
  EXPECT_TRUE(all_close(Y.to_vector(), want, shape, Tolerance{0, tolerance::u})) << "add_forward " << Space::name();

  // Residual backward: dA += dY into a nonzero dA.
  std::vector<float> da = b;
  reference::add_backward(da.data(), static_cast<float*>(nullptr), a.data(), n);
  const auto dA = Tensor<Space>::from_host(shape, b);
  kernels::accumulate<Space>(dA.flat(), A.flat());
  EXPECT_TRUE(all_close(dA.to_vector(), da, shape, Tolerance{0, tolerance::u})) << "accumulate " << Space::name();

  reference::bias_forward(want.data(), a.data(), bias.data(), c.rows, c.cols);
  const auto Bias = Tensor<Space>::from_host({c.cols}, bias);
  kernels::bias_forward<Space>(Y.rows(), A.rows(), Bias.flat());
  EXPECT_TRUE(all_close(Y.to_vector(), want, shape, Tolerance{0, tolerance::u})) << "bias_forward " << Space::name();

  // dbias += column sums of dY: both sum in double and round once; the summation orders differ.
  std::vector<float> dbias = bias;
  reference::bias_backward(dbias.data(), a.data(), c.rows, c.cols);
  const auto dBias = Tensor<Space>::from_host({c.cols}, bias);
  kernels::bias_backward<Space, Tune>(dBias.flat(), A.rows());
  EXPECT_TRUE(all_close(dBias.to_vector(), dbias, {c.cols}, Tolerance{tolerance::tiny, 2 * tolerance::u}))
      << "bias_backward " << Space::name();
}

class AddParity : public ::testing::TestWithParam<AddCase> {};
TEST_P(AddParity, ForwardAndBackward) {
  for_each_space([&](auto space) { check_add<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}
INSTANTIATE_TEST_SUITE_P(Sweep, AddParity, ::testing::ValuesIn(kCases), [](const auto& info) { return name(info.param); });

// qkv rows [B, T, 3C] -> q, k, v heads [B, H, T, D] -> rows again: a pure permutation, exact both ways.
TEST(Heads, SplitAndMergeArePermutations) {
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    const std::int64_t B = 3, T = 5, H = 3, D = 7, C = H * D;
    const auto rows = uniform(B * T * 3 * C, -1, 1, "heads");
    const auto Rows = Tensor<Space>::from_host({B, T, 3 * C}, rows);
    const Tensor3<Space> r(Rows.data(), B, T, 3 * C);
    Tensor<Space> back({B, T, 3 * C});
    const Tensor3<Space> rb(back.data(), B, T, 3 * C);
    for (int part = 0; part < 3; ++part) {
      Tensor<Space> heads({B, H, T, D});
      const Tensor4<Space> h(heads.data(), B, H, T, D);
      kernels::split_heads<Space>(h, r, static_cast<int>(part * C));
      const auto got = heads.to_vector();
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t hh = 0; hh < H; ++hh)
          for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t d = 0; d < D; ++d)
              ASSERT_EQ(got[static_cast<std::size_t>(((b * H + hh) * T + t) * D + d)],
                        rows[static_cast<std::size_t>((b * T + t) * 3 * C + part * C + hh * D + d)])
                  << Space::name() << " part " << part << " at [" << b << "," << hh << "," << t << "," << d << "]";
      kernels::merge_heads<Space>(rb, h, static_cast<int>(part * C), part > 0);
    }
    EXPECT_EQ(back.to_vector(), rows) << Space::name();
  });
}

// A split at position t0 writes heads positions t0 .. t0 + T - 1 of a longer tensor (a KV cache) and nothing else.
TEST(Heads, SplitAtAPositionWritesOnlyThosePositions) {
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    const std::int64_t B = 2, T = 3, Tmax = 9, H = 2, D = 5, W = 4 * H * D, offset = 7;
    const auto rows = uniform(B * T * W, -1, 1, "split-pos-rows"), old = uniform(B * H * Tmax * D, -1, 1, "split-pos-old");
    for (const std::int64_t t0 : {0, 4, 6}) {
      const auto Rows = Tensor<Space>::from_host({B, T, W}, rows);
      const auto Heads = Tensor<Space>::from_host({B, H, Tmax, D}, old);
      kernels::split_heads<Space>(Tensor4<Space>(Heads.data(), B, H, Tmax, D), Tensor3<Space>(Rows.data(), B, T, W),
                                  static_cast<int>(offset), static_cast<int>(t0));
      const auto got = Heads.to_vector();
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
          for (std::int64_t t = 0; t < Tmax; ++t)
            for (std::int64_t d = 0; d < D; ++d) {
              const auto at = static_cast<std::size_t>(((b * H + h) * Tmax + t) * D + d);
              const bool written = t >= t0 && t < t0 + T;
              const float want =
                  written ? rows[static_cast<std::size_t>((b * T + t - t0) * W + offset + h * D + d)] : old[at];
              ASSERT_EQ(got[at], want) << Space::name() << " t0 " << t0 << " at [" << b << "," << h << "," << t << ","
                                       << d << "]";
            }
    }
  });
}

// The gated MLP's product: out = a·b (one rounding: exact against the double product rounded); its backward
// da += dout·b, db += dout·a rounds twice, or once where the compiler fuses a multiply-add: within
// u·|dout·b| + u·|result| (|dout·b| <= 2 here).
TEST(Mul, ForwardAndBackward) {
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    for (std::int64_t n : {1, 3, 17, 513}) {
      const auto a = uniform(n, -2, 2, "mul-a"), b = uniform(n, -2, 2, "mul-b"), g = uniform(n, -1, 1, "mul-g");
      const auto base = uniform(n, -1, 1, "mul-base");
      const auto A = Tensor<Space>::from_host({n}, a), Bt = Tensor<Space>::from_host({n}, b), Gt = Tensor<Space>::from_host({n}, g);
      Tensor<Space> out({n});
      kernels::mul_forward<Space>(out.flat(), A.flat(), Bt.flat());
      const auto dA = Tensor<Space>::from_host({n}, base), dB = Tensor<Space>::from_host({n}, base);
      kernels::mul_backward<Space>(dA.flat(), dB.flat(), Gt.flat(), A.flat(), Bt.flat());
      std::vector<float> want(static_cast<std::size_t>(n)), want_da(want.size()), want_db(want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        want[i] = static_cast<float>(static_cast<double>(a[i]) * b[i]);
        want_da[i] = static_cast<float>(base[i] + static_cast<double>(g[i]) * b[i]);
        want_db[i] = static_cast<float>(base[i] + static_cast<double>(g[i]) * a[i]);
      }
      EXPECT_EQ(out.to_vector(), want) << Space::name() << " n " << n;
      EXPECT_TRUE(all_close(dA.to_vector(), want_da, {n}, Tolerance{2 * tolerance::u, 2 * tolerance::u})) << Space::name() << " da, n " << n;
      EXPECT_TRUE(all_close(dB.to_vector(), want_db, {n}, Tolerance{2 * tolerance::u, 2 * tolerance::u})) << Space::name() << " db, n " << n;
    }
  });
}

}  // namespace
}  // namespace ptk::test
