// q8_0 and q4_0 weights in row tiles (quant.hpp q8_0x16, q4_0x16, as the host stores such a weight of whole 16-row
// tiles): the tiles hold GGUF's bytes regrouped; the tile decode kernel (kernels/matmul_decode_tiles.hpp) against the
// oracle on x rounded to int8 blocks and W's stored values, with alpha, beta, a bias and groups of products; its
// AVX-512 VNNI path against its portable loop and against the panel kernel over GGUF's blocks, bit for bit; ops::linear
// and ops::linear_group over tiles on every route (decode, the decode kernel in chunks, panels).
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "matmul_cases.hpp"
#include "parity.hpp"
#include "ptk/kernels/matmul_decode.hpp"
#include "ptk/kernels/matmul_quantized_panel.hpp"
#include "ptk/ops/convert.hpp"
#include "ptk/ops/linear.hpp"
#include "ptk/reference/matmul.hpp"
#include "ptk/reference/quantize_activations.hpp"

namespace ptk::test {
namespace {

std::string case_name(std::int64_t M, std::int64_t N, std::int64_t K) {
  return "tiles M" + std::to_string(M) + "_N" + std::to_string(N) + "_K" + std::to_string(K);
}

// The first element where a and b differ in their bits, as "row r, column c: a vs b", or "" where none does.
std::string first_difference(const std::vector<float>& a, const std::vector<float>& b, std::int64_t N) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return "row " + std::to_string(i / static_cast<std::size_t>(N)) + ", column " +
             std::to_string(i % static_cast<std::size_t>(N)) + ": " + std::to_string(a[i]) + " vs " +
             std::to_string(b[i]);
  return a.size() == b.size() ? "" : "sizes differ";
}

// alpha · q(x) · W_valuesᵀ + bias + beta · y0 in double (q(x): x rounded to int8 blocks as the kernels round it).
std::vector<float> oracle(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& bias,
                          const std::vector<float>& y0, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                          float beta) {
  const auto xs = reference::quantize_activations(x.data(), M, K);
  const std::vector<double> ws(w.begin(), w.end());
  std::vector<double> y(static_cast<std::size_t>(M * N));
  reference::matmul_forward(y.data(), xs.data(), ws.data(), 1, M, N, K, false, true, false, false);
  return scaled_product(y, alpha, bias, beta, y0, N);
}

// Runs f(Block{}) for q8_0 and q4_0.
template <class F>
void for_each_block(F&& f) {
  f(q8_0{});
  f(q4_0{});
}

TEST(MatmulTiles, HoldGgufsBytesRegrouped) {
  for_each_block([](auto e) {
    using Block = decltype(e);
    for_each_space([&](auto space) {
      using Space = typename decltype(space)::type;
      const std::int64_t N = 48, K = 96;
      const auto blocks = ops::convert<Block>(Tensor<Space>::from_host({N, K}, uniform(N * K, -1, 1, "tile bytes")));
      const auto tiles = ops::tile(blocks);
      EXPECT_EQ(tiles.items(), N / tile_rows * (K / quant_block));
      const auto b = blocks.to_vector();
      const auto t = tiles.to_vector();
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t k = 0; k < K / quant_block; ++k) {
          const Block want = b[static_cast<std::size_t>(n * (K / quant_block) + k)];
          const Block got =
              tile_block(t[static_cast<std::size_t>(n / tile_rows * (K / quant_block) + k)], n % tile_rows);
          ASSERT_EQ(std::memcmp(&want, &got, sizeof(Block)), 0) << Space::name() << " row " << n << ", block " << k;
        }
      const auto back = ops::untile(tiles).to_vector();
      EXPECT_EQ(std::memcmp(back.data(), b.data(), b.size() * sizeof(Block)), 0) << Space::name();
      EXPECT_EQ(ops::to_f32(tiles).to_vector(), ops::to_f32(blocks).to_vector()) << Space::name();
    });
    using Host = Kokkos::DefaultHostExecutionSpace;
    EXPECT_THROW(ops::tile(ops::convert<Block>(Tensor<Host>({40, 64}))), InputError);  // 40 rows: not whole tiles
  });
}

// The tile kernel through kernels::matmul_decode (one product) and matmul_decode_group (three, of different heights),
// for every row count it takes, against the oracle; K of 1 to 128 blocks.
TEST(MatmulTiles, DecodeMatchesTheOracle) {
  for_each_block([](auto e) {
    using Block = decltype(e);
    using T = tile_of_t<Block>;
    for (std::int64_t M : {1, 2, 3, 5, 8})
      for (std::int64_t K : {32, 96, 544, 4096})
        for_each_space([&](auto space) {
          using Space = typename decltype(space)::type;
          using Tune = typename decltype(space)::tune;
          const std::array<std::int64_t, 3> Ns{16, 48, 528};
          const auto name = case_name(M, 0, K) + dtype_name(Element<Block>::dtype);
          const auto x = uniform(M * K, -1, 1, name + "x");
          const auto X = Tensor<Space>::from_host({M, K}, x);
          kernels::DecodeGroup<Space, T> group;
          std::vector<Tensor<Space>> ys, biases;  // kept alive: the group's views do not own their memory
          std::vector<std::vector<float>> wants;
          std::vector<Tensor<Space, T>> ws;
          for (std::size_t p = 0; p < Ns.size(); ++p) {
            const std::int64_t N = Ns[p];
            const auto blocks = ops::convert<Block>(
                Tensor<Space>::from_host({N, K}, uniform(N * K, -1, 1, name + "w" + std::to_string(p))));
            const auto bias = p == 1 ? uniform(N, -1, 1, name + "b") : std::vector<float>{};
            const auto y0 = uniform(M * N, -1, 1, name + "y" + std::to_string(p));
            ws.push_back(ops::tile(blocks));
            ys.push_back(Tensor<Space>::from_host({M, N}, y0));
            wants.push_back(oracle(x, ops::to_f32(blocks).to_vector(), bias, y0, M, N, K, 0.5f, 1.0f));
            biases.push_back(bias.empty() ? Tensor<Space>() : Tensor<Space>::from_host({N}, bias));
            group.part[p] = {ys[p].rows(), ws[p].rows(),
                             bias.empty() ? ConstVector<Space>() : ConstVector<Space>(biases[p].flat())};
          }
          group.count = static_cast<int>(Ns.size());
          kernels::matmul_decode_group<Space, Tune, T>(group, X.rows(), 0.5f, 1.0f);
          for (std::size_t p = 0; p < Ns.size(); ++p)
            EXPECT_TRUE(all_close(ys[p].to_vector(), wants[p], {M, Ns[p]}, tolerance::matmul(K)))
                << Space::name() << " " << name << " part " << p;
          // A product alone, beta 0: y written, not read (NaN before).
          const auto one = Tensor<Space>::from_host(
              {M, Ns[0]}, std::vector<float>(static_cast<std::size_t>(M * Ns[0]), std::nanf("")));
          kernels::matmul_decode<Space, Tune, T>(one.rows(), X.rows(), ws[0].rows());
          const std::vector<float> zeros(static_cast<std::size_t>(M * Ns[0]));
          const auto blocks0 = ops::untile(ws[0]);
          EXPECT_TRUE(all_close(one.to_vector(),
                                oracle(x, ops::to_f32(blocks0).to_vector(), {}, zeros, M, Ns[0], K, 1, 0), {M, Ns[0]},
                                tolerance::matmul(K)))
              << Space::name() << " " << name << " alone";
        });
  });
}

struct PortableTiles : kernels::HostDecode {
  static constexpr bool int8_simd = false;
};
template <class Decode>
struct TilesTune {
  using decode = Decode;
};

// The host's VNNI path against its portable loop, and both against the panel kernel over GGUF's blocks (the same
// integer sums and fp32 operations in the same order): bit for bit, with NaN and infinite x rows NaN.
TEST(MatmulTiles, VnniEqualsPortableEqualsPanels) {
  for_each_block([](auto e) {
    using Block = decltype(e);
    using S = Kokkos::DefaultHostExecutionSpace;
    for (std::int64_t M : {1, 3, 8})
      for (std::int64_t K : {32, 96, 4128}) {
        const std::int64_t N = 80;
        const auto name = case_name(M, N, K) + dtype_name(Element<Block>::dtype) + " bits";
        auto x = uniform(M * K, -3, 3, name + "x");
        x[1] = std::numeric_limits<float>::quiet_NaN();
        if (M > 2) x[static_cast<std::size_t>(2 * K + K / 2 + 1)] = std::numeric_limits<float>::infinity();  // row 2
        const auto X = Tensor<S>::from_host({M, K}, x);
        const auto blocks = ops::convert<Block>(Tensor<S>::from_host({N, K}, uniform(N * K, -2, 2, name + "w")));
        const auto tiles = ops::tile(blocks);
        using T = typename decltype(tiles)::value_type;
        const Tensor<S> fast({M, N}), portable({M, N}), panel({M, N}), panel_tiles({M, N});
        const kernels::TilesProduct<S, T> part{fast.rows(), tiles.rows(), ConstVector<S>()};
        kernels::matmul_decode_tiles<S, TilesTune<kernels::HostDecode>, T>(&part, 1, X.rows(), 1.0f, 0.0f);
        const kernels::TilesProduct<S, T> slow{portable.rows(), tiles.rows(), ConstVector<S>()};
        kernels::matmul_decode_tiles<S, TilesTune<PortableTiles>, T>(&slow, 1, X.rows(), 1.0f, 0.0f);
        kernels::matmul_quantized_panel<S, TilesTune<kernels::HostDecode>, Block>(panel.rows(), X.rows(), blocks.rows(),
                                                                                  1.0f, 0.0f);
        kernels::matmul_quantized_panel<S, TilesTune<kernels::HostDecode>, T>(panel_tiles.rows(), X.rows(),
                                                                              tiles.rows(), 1.0f, 0.0f);
        const auto f = fast.to_vector();
        EXPECT_EQ(first_difference(f, portable.to_vector(), N), "") << name << ": VNNI vs portable";
        EXPECT_EQ(first_difference(f, panel.to_vector(), N), "") << name << ": tiles vs panels";
        EXPECT_EQ(first_difference(f, panel_tiles.to_vector(), N), "") << name << ": tiles vs panels over tiles";
        for (std::int64_t n = 0; n < N; ++n) {
          EXPECT_TRUE(std::isnan(f[static_cast<std::size_t>(n)])) << name << " column " << n;
          if (M > 2) EXPECT_TRUE(std::isnan(f[static_cast<std::size_t>(2 * N + n)])) << name << " column " << n;
        }
      }
  });
}

// ops::linear over tiles on every route: the tile kernel (<= 8 rows; up to quantized_rows in chunks of 8), the panel
// kernel over tiles (from panel_from_rows), and the GEMM (a tuning without panels: the tiles given back as blocks);
// with a bias; and ops::linear_group of tiles, bit for bit each linear.
TEST(MatmulTiles, LinearOnEveryRoute) {
  for_each_block([](auto e) {
    using Block = decltype(e);
    for (std::int64_t M : {1, 8, 9, 17, 24, 25, 40})
      for_each_space([&](auto space) {
        using Space = typename decltype(space)::type;
        using Tune = typename decltype(space)::tune;
        const std::int64_t N = 96, K = 544;
        const auto name = case_name(M, N, K) + dtype_name(Element<Block>::dtype) + " linear";
        const auto x = uniform(M * K, -1, 1, name + "x"), b = uniform(N, -1, 1, name + "b");
        const auto blocks = ops::convert<Block>(Tensor<Space>::from_host({N, K}, uniform(N * K, -1, 1, name + "w")));
        const auto tiles = ops::tile(blocks);
        using T = typename decltype(tiles)::value_type;
        const auto X = Tensor<Space>::from_host({M, K}, x);
        const auto Y = ops::linear<Space, Tune>(X, tiles, Tensor<Space>::from_host({N}, b));
        const std::vector<float> zeros(static_cast<std::size_t>(M * N));
        EXPECT_TRUE(all_close(Y.to_vector(), oracle(x, ops::to_f32(blocks).to_vector(), b, zeros, M, N, K, 1, 0),
                              {M, N}, tolerance::matmul(K)))
            << Space::name() << " " << name;
        const auto other =
            ops::tile(ops::convert<Block>(Tensor<Space>::from_host({32, K}, uniform(32 * K, -1, 1, name + "v"))));
        const auto group = ops::linear_group<Space, Tune, T>(X, {tiles, other});
        EXPECT_EQ(first_difference(group[0].to_vector(), ops::linear<Space, Tune>(X, tiles).to_vector(), N), "")
            << Space::name() << " " << name << " group part 0";
        EXPECT_EQ(first_difference(group[1].to_vector(), ops::linear<Space, Tune>(X, other).to_vector(), 32), "")
            << Space::name() << " " << name << " group part 1";
      });
  });
}

}  // namespace
}  // namespace ptk::test
