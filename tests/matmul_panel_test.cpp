// The panel kernel over q8_0 and q4_0 weights (kernels::matmul_quantized_panel: x's rows in SIMD lanes, a prompt's
// products): against the oracle on x rounded to int8 blocks and W's stored values, for row counts around the panel's
// 16 (one row, ragged last panels, several panels), W rows around a team's and a block step's, one and many blocks,
// beta 0 and 1, x with NaN and ±inf rows; and the host's AVX-512 VNNI path against its portable loop, bit for bit.
// (ops::linear reaches it from Tune::decode::panel_from_rows rows: Linear.StoredWeights.)
#include <array>
#include <cmath>
#include <limits>

#include "bits.hpp"
#include "parity.hpp"
#include "ptk/kernels/matmul_quantized_panel.hpp"
#include "ptk/ops/convert.hpp"
#include "ptk/reference/matmul.hpp"
#include "ptk/reference/quantize_activations.hpp"

namespace ptk::test {
namespace {

template <class Decode>
struct PanelTune {
  using decode = Decode;
};
struct PortablePanel : kernels::HostDecode {
  static constexpr bool int8_simd = false;
};

// y = alpha · q(x) · W_valuesᵀ + beta · y0 in double (q(x): the oracle's rounding of x to int8 blocks).
std::vector<float> panel_oracle(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& y0,
                                std::int64_t M, std::int64_t N, std::int64_t K, float alpha, float beta) {
  const auto xs = reference::quantize_activations(x.data(), M, K);
  const std::vector<double> ws(w.begin(), w.end());
  std::vector<double> y(static_cast<std::size_t>(M * N));
  reference::matmul_forward(y.data(), xs.data(), ws.data(), 1, M, N, K, false, true, false, false);
  std::vector<float> want(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) want[i] = static_cast<float>(double(alpha) * y[i] + double(beta) * y0[i]);
  return want;
}

TEST(MatmulPanel, MatchesTheOracleOnQuantizedX) {
  const auto run = [](auto e) {
    using E = decltype(e);
    for (const auto& mnk : std::vector<std::array<std::int64_t, 3>>{{1, 9, 32}, {16, 40, 544}, {17, 33, 64}, {40, 127, 800}})
      for (float beta : {0.0f, 1.0f})
        for_each_space([&](auto space) {
          using Space = typename decltype(space)::type;
          using Tune = typename decltype(space)::tune;
          const std::int64_t M = mnk[0], N = mnk[1], K = mnk[2];
          const std::string name = "panel M" + std::to_string(M) + " N" + std::to_string(N) + " K" + std::to_string(K) +
                                   " beta " + std::to_string(beta) + " " + dtype_name(Element<E>::dtype);
          const auto x = uniform(M * K, -1, 1, name + "x"), y0 = uniform(M * N, -1, 1, name + "y");
          const auto W = ops::convert<E>(Tensor<Space>::from_host({N, K}, uniform(N * K, -1, 1, name + "w")));
          const auto want = panel_oracle(x, ops::to_f32(W).to_vector(), y0, M, N, K, 0.5f, beta);
          const auto Y = Tensor<Space>::from_host({M, N}, y0);
          kernels::matmul_quantized_panel<Space, Tune, E>(Y.rows(), Tensor<Space>::from_host({M, K}, x).rows(), W.rows(),
                                                          0.5f, beta);
          EXPECT_TRUE(all_close(Y.to_vector(), want, {M, N}, tolerance::matmul(K))) << Space::name() << " " << name;
        });
  };
  run(q8_0{});
  run(q4_0{});
}

TEST(MatmulPanel, VnniEqualsPortableAndNonFiniteRowsAreNaN) {
  using S = Kokkos::DefaultHostExecutionSpace;
  const auto run = [](auto e) {
    using E = decltype(e);
    for (std::int64_t M : {1, 15, 16, 33})
      for (std::int64_t K : {32, 96, 4096}) {
        const std::int64_t N = 37;
        const std::string name = "panel bits M" + std::to_string(M) + " K" + std::to_string(K) + dtype_name(Element<E>::dtype);
        auto x = uniform(M * K, -3, 3, name + "x");
        const float inf = std::numeric_limits<float>::infinity();
        x[0] = std::numeric_limits<float>::quiet_NaN();            // row 0: NaN
        if (M > 2) x[static_cast<std::size_t>(2 * K + 5)] = -inf;  // row 2: NaN (a block's scale is NaN)
        const auto X = Tensor<S>::from_host({M, K}, x);
        const auto W = ops::convert<E>(Tensor<S>::from_host({N, K}, uniform(N * K, -2, 2, name + "w")));
        const Tensor<S> fast({M, N}), portable({M, N});
        kernels::matmul_quantized_panel<S, PanelTune<kernels::HostDecode>, E>(fast.rows(), X.rows(), W.rows(), 1.0f, 0.0f);
        kernels::matmul_quantized_panel<S, PanelTune<PortablePanel>, E>(portable.rows(), X.rows(), W.rows(), 1.0f, 0.0f);
        const auto f = fast.to_vector(), p = portable.to_vector();
        for (std::size_t i = 0; i < f.size(); ++i) {
          const std::int64_t r = static_cast<std::int64_t>(i) / N;
          if (r == 0 || r == 2) {
            ASSERT_TRUE(std::isnan(f[i]) && std::isnan(p[i])) << name << " row " << r << ": " << f[i] << ", " << p[i];
          } else {
#if defined(PTK_HOST_VNNI)  // (without it both runs are the portable loop: nothing to compare)
            ASSERT_EQ(to_bits(f[i]), to_bits(p[i])) << name << " row " << r << " column " << i % N << ": " << f[i] << " vs " << p[i];
#endif
          }
        }
      }
  };
  run(q8_0{});
  run(q4_0{});
}

}  // namespace
}  // namespace ptk::test
