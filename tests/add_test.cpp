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

// The heads of rows [B, T, W] from a column (a fused qkv's q, k or v), as the attention kernels read and write them:
// heads_of(...)(b, h, t, d) is rows[b, t, offset + h·D + d]; a copy into the view writes those columns, no others.
TEST(Heads, ViewsOfRowsAddressTheirColumns) {
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    const int B = 3, T = 5, H = 3, D = 7, W = 3 * H * D + 2;
    const auto rows = uniform(static_cast<std::size_t>(B * T * W), -1, 1, "heads");
    const auto values = uniform(static_cast<std::size_t>(B * H * T * D), -1, 1, "heads-values");
    for (const int offset : {0, H * D, 2 * H * D + 2}) {
      const auto Rows = Tensor<Space>::from_host({B, T, W}, rows);
      const auto heads = kernels::heads_of<Space>(Rows.data(), B, T, W, offset, H, D);
      const Tensor<Space> read({B, H, T, D});
      Kokkos::deep_copy(Tensor4<Space>(read.data(), B, H, T, D), heads);
      const auto Values = Tensor<Space>::from_host({B, H, T, D}, values);
      Kokkos::deep_copy(heads, Tensor4<Space>(Values.data(), B, H, T, D));
      const auto got = read.to_vector(), written = Rows.to_vector();
      for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t)
          for (int c = 0; c < W; ++c) {
            const auto at = static_cast<std::size_t>((b * T + t) * W + c);
            const int h = (c - offset) / D, d = (c - offset) % D;
            const bool head = c >= offset && c < offset + H * D;
            const auto in_heads = static_cast<std::size_t>(((b * H + h) * T + t) * D + d);
            if (head) ASSERT_EQ(got[in_heads], rows[at]) << Space::name() << " offset " << offset << " read";
            ASSERT_EQ(written[at], head ? values[in_heads] : rows[at])
                << Space::name() << " offset " << offset << " written at [" << b << "," << t << "," << c << "]";
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
