// Decode matmul parity: y[M,N] = x[M,K] · W[N,K]ᵀ for M <= 8 (ptk::kernels::matmul_decode, reached
// through ops::matmul with trans_b) against the float64 oracle; which products take the decode kernel; ops::linear's
// bias, fused into the decode kernel or added after the GEMM.
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "parity.hpp"
#include "ptk/kernels/matmul_decode.hpp"
#include "ptk/ops/convert.hpp"
#include "ptk/ops/linear.hpp"
#include "ptk/ops/matmul.hpp"
#include "ptk/reference/matmul.hpp"
#include "ptk/reference/quantize_activations.hpp"

namespace ptk::test {
namespace {

const std::vector<std::int64_t> kSizes{1, 3, 17, 127, 513, 4099};

std::string case_name(std::int64_t M, std::int64_t N, std::int64_t K) {
  return "M" + std::to_string(M) + "_N" + std::to_string(N) + "_K" + std::to_string(K);
}

// C = alpha · x · Wᵀ + beta · C0 (beta = 0: ops::matmul, else ops::matmul_accumulate) against the
// oracle's product combined in double.
template <class Space, class Tune>
void check_decode(std::int64_t M, std::int64_t N, std::int64_t K, float alpha = 1, float beta = 0) {
  const auto name = case_name(M, N, K);
  const auto x = uniform(M * K, -1, 1, name + "x"), w = uniform(N * K, -1, 1, name + "w");
  std::vector<float> want(static_cast<std::size_t>(M * N));
  reference::matmul_forward(want.data(), x.data(), w.data(), 1, M, N, K, false, true, false, false);
  const auto X = Tensor<Space>::from_host({M, K}, x), W = Tensor<Space>::from_host({N, K}, w);
  Tensor<Space> C;
  if (beta == 0 && alpha == 1) {
    C = ops::matmul<Space, Tune>(X, W, false, true);
  } else {
    const auto c0 = uniform(M * N, -1, 1, name + "c");
    for (std::size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(double(alpha) * want[i] + double(beta) * c0[i]);
    C = Tensor<Space>::from_host({M, N}, c0);
    ops::matmul_accumulate<Space, Tune>(C, X, W, false, true, alpha, beta);
  }
  EXPECT_TRUE(all_close(C.to_vector(), want, {M, N}, tolerance::matmul(K)))
      << Space::name() << " " << name << " alpha=" << alpha << " beta=" << beta;
}

class MatmulDecodeParity : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(MatmulDecodeParity, Forward) {
  const std::int64_t M = GetParam();
  for (auto N : kSizes)
    for (auto K : kSizes) for_each_space([&](auto space) { check_decode<typename decltype(space)::type, typename decltype(space)::tune>(M, N, K); });
}

INSTANTIATE_TEST_SUITE_P(Rows, MatmulDecodeParity, ::testing::Range<std::int64_t>(1, kernels::decode_max_rows + 1),
                         [](const auto& info) { return "M" + std::to_string(info.param); });

TEST(MatmulDecode, AlphaBeta) {
  for (auto [M, N, K] : std::vector<std::array<std::int64_t, 3>>{{1, 127, 513}, {5, 17, 4099}, {8, 513, 3}})
    for (auto [alpha, beta] : std::vector<std::pair<float, float>>{{1, 1}, {-0.5f, 1}, {2, 0.25f}, {3, 0}}) {
      // Named copies: clang (hipcc) rejects capturing structured bindings in C++17.
      const std::int64_t m = M, n = N, k = K;
      const float a = alpha, b = beta;
      for_each_space([&](auto space) { check_decode<typename decltype(space)::type, typename decltype(space)::tune>(m, n, k, a, b); });
    }
}

// The host's K-blocked sweep (HostDecode::k_block, and a tuning that slices every R with groups of 3
// W rows, so a team's 16 rows end with a single) against the oracle and against the one-sweep path,
// on K that straddles slice boundaries (a last slice shorter than k_block, a tail past the last full
// block); a second run must repeat it bit for bit. (The sliced and one-sweep paths add each lane's
// k in the same order, but g++ may contract a different set of them into FMAs, so they are only
// compared within tolerance.) The tunings are named, so the GPU-geometry build runs them too.
struct OneSweep : kernels::HostDecode {
  static constexpr int k_block(int) { return 0; }
};
struct GroupedSlices : kernels::HostDecode {
  static constexpr int w_rows(int) { return 3; }
  static constexpr int k_block(int) { return 64; }
};
template <class Decode>
struct DecodeTune {
  using decode = Decode;
};

// kernels::matmul_decode under a test's own tuning for the row counts Rs alone: the dispatch would compile all
// eight (kernels::matmul_decode_rows), which made this the slowest unit to build (44 s of g++ in the cpu preset).
template <class Space, class Tune, class E, int... Rs>
void decode_rows(const Matrix<Space>& y, const ConstMatrix<Space>& x, const ConstMatrixOf<Space, E>& w) {
  const auto M = static_cast<int>(x.extent(0));
  const bool ran = ((M == Rs ? (kernels::matmul_decode_rows<Rs, Space, Tune, E>(kernels::decode_single<Space, E>(y, w), x, 1.0f, 0.0f), true) : false) || ...);
  ASSERT_TRUE(ran) << "decode_rows: no instance for " << M << " rows";
}

TEST(MatmulDecode, KBlockedSweep) {
  using S = Kokkos::DefaultHostExecutionSpace;
  for (std::int64_t M : {3, 5, 8})
    for (std::int64_t N : {1, 17, 40})
      for (std::int64_t K : {15, 64, 511, 1000, 1047}) {
        const auto name = case_name(M, N, K);
        const auto x = uniform(M * K, -1, 1, name + "x"), w = uniform(N * K, -1, 1, name + "w");
        std::vector<float> want(static_cast<std::size_t>(M * N));
        reference::matmul_forward(want.data(), x.data(), w.data(), 1, M, N, K, false, true, false, false);
        const auto X = Tensor<S>::from_host({M, K}, x), W = Tensor<S>::from_host({N, K}, w);
        const Tensor<S> blocked({M, N}), grouped({M, N}), one({M, N});
        decode_rows<S, DecodeTune<kernels::HostDecode>, float, 3, 5, 8>(blocked.rows(), X.rows(), W.rows());
        decode_rows<S, DecodeTune<GroupedSlices>, float, 3, 5, 8>(grouped.rows(), X.rows(), W.rows());
        decode_rows<S, DecodeTune<OneSweep>, float, 3, 5, 8>(one.rows(), X.rows(), W.rows());
        const Tensor<S> again({M, N});
        decode_rows<S, DecodeTune<GroupedSlices>, float, 3, 5, 8>(again.rows(), X.rows(), W.rows());
        EXPECT_EQ(grouped.to_vector(), again.to_vector()) << name;
        for (const auto* result : {&blocked, &grouped, &one})
          EXPECT_TRUE(all_close(result->to_vector(), want, {M, N}, tolerance::matmul(K))) << name;
      }
}

// The oracle's y = x̂ · Wᵀ on W's stored values (to_f32 of W, exact), in double: x̂ = x, or for quantize_x x quantized
// per block of 32 as the decode kernel multiplies it against q8_0 and q4_0 weights (reference/quantize_activations.hpp).
std::vector<float> stored_oracle(const std::vector<float>& x, const std::vector<float>& stored, std::int64_t M,
                                 std::int64_t N, std::int64_t K, bool quantize_x) {
  const auto xs = quantize_x ? reference::quantize_activations(x.data(), M, K) : std::vector<double>(x.begin(), x.end());
  const std::vector<double> ws(stored.begin(), stored.end());
  std::vector<double> y(static_cast<std::size_t>(M * N));
  reference::matmul_forward(y.data(), xs.data(), ws.data(), 1, M, N, K, false, true, false, false);
  return std::vector<float>(y.begin(), y.end());
}

// W stored as bf16, f16, q8_0 or q4_0 (ops::convert on the device): the kernel against the oracle applied to the
// stored values and, for q8_0 and q4_0, to x quantized as the kernel quantizes it, so that the test checks the
// kernel, not the rounding of W or x; the tolerance is fp32's for a K-long product (W's values and x's integers are
// read exactly and accumulated in fp32). K runs over odd lengths for the 16-bit types, and over whole blocks (1, 3,
// 17, 128 of them: the host's two-block steps and a last single block) for the quantized ones. The rounding of W and
// x itself (against f32) is reported in docs/tolerances.md, from QuantizationError below.
template <class E>
void check_decode_stored() {
  const std::vector<std::int64_t> Ks = is_quantized_v<E> ? std::vector<std::int64_t>{32, 96, 544, 4096}
                                                         : std::vector<std::int64_t>{1, 3, 17, 127, 513, 4099};
  for (std::int64_t M : {1, 2, 3, 5, 8})
    for (std::int64_t N : {1, 17, 127, 513})
      for (auto K : Ks)
        for_each_space([&](auto space) {
          using Space = typename decltype(space)::type;
          using Tune = typename decltype(space)::tune;
          const auto name = case_name(M, N, K) + dtype_name(Element<E>::dtype);
          const auto x = uniform(M * K, -1, 1, name + "x"), w = uniform(N * K, -1, 1, name + "w");
          const auto W = ops::convert<E>(Tensor<Space>::from_host({N, K}, w));
          const auto want = stored_oracle(x, ops::to_f32(W).to_vector(), M, N, K, is_quantized_v<E>);
          const auto X = Tensor<Space>::from_host({M, K}, x);
          const Tensor<Space> Y({M, N});
          kernels::matmul_decode<Space, Tune, E>(Y.rows(), X.rows(), W.rows());
          EXPECT_TRUE(all_close(Y.to_vector(), want, {M, N}, tolerance::matmul(K))) << Space::name() << " " << name;
        });
}

TEST(MatmulDecode, Bf16Weights) { check_decode_stored<bf16>(); }
TEST(MatmulDecode, F16Weights) { check_decode_stored<f16>(); }
TEST(MatmulDecode, Q8_0Weights) { check_decode_stored<q8_0>(); }
TEST(MatmulDecode, Q4_0Weights) { check_decode_stored<q4_0>(); }

// The host's AVX-512 VNNI path (vpdpbusd over two blocks a step) against the portable integer loop with the same
// lanes (a tuning with int8_simd off), bit for bit: both form the same integers and the same fp32 operations in the
// same order. K of 1 to 129 blocks: odd counts end on a single block, which the portable loop takes.
struct PortableInt8 : kernels::HostDecode {
  static constexpr bool int8_simd = false;
};

TEST(MatmulDecode, QuantizedVnniEqualsPortable) {
#if !defined(PTK_HOST_VNNI)
  GTEST_SKIP() << "this build has no AVX-512 VNNI path (the host runs the portable loop only)";
#else
  using S = Kokkos::DefaultHostExecutionSpace;
  const auto run = [](auto e) {
    using E = decltype(e);
    for (std::int64_t M : {1, 2, 3, 8})
      for (std::int64_t N : {1, 17, 40})
        for (std::int64_t K : {32, 64, 96, 544, 4128}) {
          const auto name = case_name(M, N, K) + dtype_name(Element<E>::dtype) + " vnni";
          const auto X = Tensor<S>::from_host({M, K}, uniform(M * K, -3, 3, name + "x"));
          const auto W = ops::convert<E>(Tensor<S>::from_host({N, K}, uniform(N * K, -2, 2, name + "w")));
          const Tensor<S> fast({M, N}), portable({M, N});
          decode_rows<S, DecodeTune<kernels::HostDecode>, E, 1, 2, 3, 8>(fast.rows(), X.rows(), W.rows());
          decode_rows<S, DecodeTune<PortableInt8>, E, 1, 2, 3, 8>(portable.rows(), X.rows(), W.rows());
          EXPECT_TRUE(all_close(fast.to_vector(), portable.to_vector(), {M, N}, Tolerance{0, 0})) << name;
        }
  };
  run(q8_0{});
  run(q4_0{});
#endif
}

// x's blocks at the edges, for q8_0 and q4_0 weights, in every space and tuning: a NaN or an infinity makes its row
// NaN (its block's scale is NaN); a block of zeros, one of denormals (scale 0 or a denormal one, whose x / d is
// clamped to ±127) and one of huge values are finite and match the oracle on x quantized the same way.
TEST(MatmulDecode, QuantizedEdgeValues) {
  const auto run = [](auto e) {
    using E = decltype(e);
    const std::int64_t M = 4, N = 33, K = 128;
    auto x = uniform(M * K, -1, 1, "edge x");
    x[5] = std::nanf("");                                 // row 0
    x[K + 70] = -std::numeric_limits<float>::infinity();  // row 1
    for (int k = 0; k < 32; ++k) {
      x[2 * K + k] = 0.0f;
      x[2 * K + 32 + k] = 1e-40f * static_cast<float>(k - 16);
      x[3 * K + k] = 3e30f * (k % 2 ? 1.0f : -1.0f);
    }
    for_each_space([&](auto space) {
      using Space = typename decltype(space)::type;
      using Tune = typename decltype(space)::tune;
      const auto W = ops::convert<E>(Tensor<Space>::from_host({N, K}, uniform(N * K, -1, 1, "edge w")));
      const Tensor<Space> Y({M, N});
      kernels::matmul_decode<Space, Tune, E>(Y.rows(), Tensor<Space>::from_host({M, K}, x).rows(), W.rows());
      const auto y = Y.to_vector();
      const auto stored = ops::to_f32(W).to_vector();
      const auto xs = reference::quantize_activations(x.data(), M, K);
      for (std::int64_t n = 0; n < N; ++n) {
        EXPECT_TRUE(std::isnan(y[n]) && std::isnan(y[N + n])) << Space::name() << " column " << n;
        for (std::int64_t r = 2; r < M; ++r) {
          double want = 0, mag = 0;
          for (std::int64_t k = 0; k < K; ++k)
            want += xs[r * K + k] * stored[n * K + k], mag += std::fabs(xs[r * K + k] * stored[n * K + k]);
          EXPECT_NEAR(y[r * N + n], want, 2 * tolerance::u * K * mag)
              << Space::name() << " row " << r << " column " << n;
        }
      }
    });
  };
  run(q8_0{});
  run(q4_0{});
}

// ops::linear with W stored as E: the decode kernel for <= 8 rows (q8_0, q4_0: up to Tune::decode::quantized_rows,
// 8 at a time: 9 = 8 + 1, 17, 24 = 3 x 8, and 25 just past it on the host); for more, the GEMM over W as stored
// (bf16, f16) or on to_f32(W) (q8_0, q4_0); x quantized for q8_0 and q4_0 on every path; with and without a bias,
// against the oracle on the stored values (and x quantized); and its refusals.
TEST(Linear, StoredWeights) {
  const auto run = [](auto e) {
    using E = decltype(e);
    for (std::int64_t M : {1, 8, 9, 17, 24, 25, 33, 40})
      for (bool with_bias : {true, false})
        for_each_space([&](auto space) {
          using Space = typename decltype(space)::type;
          using Tune = typename decltype(space)::tune;
          const std::int64_t N = 127, K = 544;
          const auto name = "stored linear" + case_name(M, N, K) + dtype_name(Element<E>::dtype);
          const auto x = uniform(M * K, -1, 1, name + "x"), w = uniform(N * K, -1, 1, name + "w");
          const auto b = uniform(N, -1, 1, name + "b");
          const auto W = ops::convert<E>(Tensor<Space>::from_host({N, K}, w));
          auto want = stored_oracle(x, ops::to_f32(W).to_vector(), M, N, K, is_quantized_v<E>);
          for (std::size_t i = 0; i < want.size(); ++i)
            want[i] = static_cast<float>(double(want[i]) + (with_bias ? double(b[i % N]) : 0.0));
          const auto B = with_bias ? Tensor<Space>::from_host({N}, b) : Tensor<Space>();
          const auto Y = ops::linear<Space, Tune>(Tensor<Space>::from_host({M, K}, x), W, B);
          EXPECT_TRUE(all_close(Y.to_vector(), want, {M, N}, tolerance::matmul(K))) << Space::name() << " " << name;
        });
  };
  run(bf16{});
  run(f16{});
  run(q8_0{});
  run(q4_0{});
  using Host = Kokkos::DefaultHostExecutionSpace;
  const auto Wq = ops::convert<q8_0>(Tensor<Host>({4, 64}));
  EXPECT_THROW(ops::linear(Tensor<Host>({2, 32}), Wq), InputError);
  EXPECT_THROW(ops::linear(Tensor<Host>({2, 64}), Wq, Tensor<Host>({5})), InputError);
}

// The host's GEMM over q8_0 and q4_0 weights widens their blocks as it packs them: the product equals, bit for bit,
// the f32 GEMM on to_f32(W) (the route before, and the GPU's), over whole 16 x 16 tiles, ragged rows, a last slab
// of one block (K = 800: slabs of 384, 384, 32) and a second of a few (K = 544), with beta 0 and 1.
TEST(Linear, QuantizedGemmEqualsTheGemmOnConvertedWeights) {
  const auto run = [](auto e) {
    using E = decltype(e);
    // Named copies, not a structured binding: nvcc and clang (hipcc) reject capturing bindings in C++17.
    for (const auto& mnk : std::vector<std::array<std::int64_t, 3>>{{40, 200, 800}, {9, 127, 544}, {512, 48, 64}})
      for (float beta : {0.0f, 1.0f})
        for_each_space([&](auto space) {
          using Space = typename decltype(space)::type;
          using Tune = typename decltype(space)::tune;
          if constexpr (!Tune::matmul::register_tiled) {
            const std::int64_t M = mnk[0], N = mnk[1], K = mnk[2];
            const auto name = "quantized gemm" + case_name(M, N, K) + dtype_name(Element<E>::dtype);
            const auto X = Tensor<Space>::from_host({M, K}, uniform(M * K, -1, 1, name + "x"));
            const auto W = ops::convert<E>(Tensor<Space>::from_host({N, K}, uniform(N * K, -1, 1, name + "w")));
            const auto c0 = uniform(M * N, -1, 1, name + "c");
            const auto got = Tensor<Space>::from_host({M, N}, c0), want = Tensor<Space>::from_host({M, N}, c0);
            kernels::matmul_quantized_weight<Space, Tune, E>(got.batched_matrices(), X.batched_matrices(),
                                                             W.batched_matrices(), 0.5f, beta);
            kernels::matmul_forward<Space, Tune>(want.batched_matrices(), X.batched_matrices(),
                                                 ops::to_f32(W).batched_matrices(), false, true, 0.5f, beta);
            const auto g = got.to_vector(), w = want.to_vector();
            std::size_t differing = 0, first = 0;
            for (std::size_t i = 0; i < g.size(); ++i)
              if (std::memcmp(&g[i], &w[i], sizeof(float)) != 0 && differing++ == 0) first = i;
            EXPECT_EQ(differing, 0u) << Space::name() << " " << name << " beta " << beta << ": first at row "
                                     << first / N << ", column " << first % N << ": " << g[first] << " vs " << w[first];
          }
        });
  };
  run(q8_0{});
  run(q4_0{});
}

// The rounding of W, reported rather than bounded (its bound per value is quant_test's): for uniform x and W in
// [-1, 1] and K = 4096, the RMS and largest error of y = x · Wᵀ with W stored as each type, relative to the RMS of
// y with W in f32, printed for docs/tolerances.md.
TEST(MatmulDecode, QuantizationError) {
  using S = Kokkos::DefaultHostExecutionSpace;
  const std::int64_t N = 256, K = 4096;
  const auto x = uniform(K, -1, 1, "qerr x"), w = uniform(N * K, -1, 1, "qerr w");
  std::vector<float> exact(static_cast<std::size_t>(N));
  reference::matmul_forward(exact.data(), x.data(), w.data(), 1, 1, N, K, false, true, false, false);
  double rms_exact = 0;
  for (float v : exact) rms_exact += double(v) * v;
  rms_exact = std::sqrt(rms_exact / N);
  const auto X = Tensor<S>::from_host({1, K}, x), W = Tensor<S>::from_host({N, K}, w);
  const auto report = [&](const char* type, const std::vector<float>& y, double ceiling) {
    double sq = 0, worst = 0;
    for (std::int64_t n = 0; n < N; ++n) {
      const double e = std::fabs(double(y[n]) - exact[n]);
      sq += e * e, worst = std::max(worst, e);
    }
    const double rms = std::sqrt(sq / N) / rms_exact;
    std::printf("quantization error of x·Wᵀ, K = %lld, W %-5s: rms %.2e, max %.2e (relative to rms |y|)\n",
                static_cast<long long>(K), type, rms, worst / rms_exact);
    EXPECT_LT(rms, ceiling) << type;  // ~ the type's step for uniform values over sqrt(3) times rms |w|: a loose gate
  };
  const auto run = [&](auto e, double ceiling) {
    using E = decltype(e);
    const Tensor<S> Y({1, N});
    kernels::matmul_decode<S, kernels::Tuning<S>, E>(Y.rows(), X.rows(), ops::convert<E>(W).rows());
    report(dtype_name(Element<E>::dtype), Y.to_vector(), ceiling);
  };
  run(bf16{}, 4e-3);
  run(f16{}, 5e-4);
  run(q8_0{}, 1e-2);
  run(q4_0{}, 2e-1);
}

// The decode kernel serves exactly the shared-weight [N,K] products of at most 8 rows in all
// (a batch of M-row matrices counts batch · M rows); everything else stays on the GEMM.
TEST(MatmulDecode, TakenForFewRowsAgainstASharedWeight) {
  using S = Kokkos::DefaultHostExecutionSpace;
  const auto dims = [](std::size_t b, std::size_t r, std::size_t c) { return Tensor3<S>("t", b, r, c); };
  const auto applies = [&](std::size_t batch, std::size_t M, std::size_t batch_a, std::size_t batch_b, bool ta,
                           bool tb) {
    return kernels::decode_applies<S>(dims(batch, M, 5), dims(batch_a, ta ? 7 : M, ta ? M : 7),
                                      dims(batch_b, tb ? 5 : 7, tb ? 7 : 5), ta, tb);
  };
  EXPECT_TRUE(applies(1, 1, 1, 1, false, true));
  EXPECT_TRUE(applies(1, 8, 1, 1, false, true));
  EXPECT_TRUE(applies(2, 4, 2, 1, false, true));  // [2,4,K] · W[N,K]ᵀ: 8 contiguous rows
  EXPECT_FALSE(applies(1, 9, 1, 1, false, true));
  EXPECT_FALSE(applies(3, 3, 3, 1, false, true));  // 9 rows in all
  EXPECT_FALSE(applies(1, 4, 1, 1, false, false));  // W stored [K,N]
  EXPECT_FALSE(applies(1, 4, 1, 1, true, true));
  EXPECT_FALSE(applies(2, 1, 2, 2, false, true));  // a weight per batch
  EXPECT_FALSE(applies(2, 1, 1, 2, false, true));

  // A batched x [2,3,K] against a shared W [N,K]: the op's result is the kernel's on the 6 rows.
  const std::int64_t N = 127, K = 513;
  const auto x = uniform(6 * K, -1, 1, "batched x"), w = uniform(N * K, -1, 1, "batched w");
  const auto X = Tensor<S>::from_host({2, 3, K}, x), W = Tensor<S>::from_host({N, K}, w);
  const auto via_op = ops::matmul(X, W, false, true).to_vector();
  const auto X2 = Tensor<S>::from_host({6, K}, x);
  const Tensor<S> Y({6, N});
  kernels::matmul_decode<S>(Y.rows(), X2.rows(), W.rows());
  EXPECT_EQ(via_op, Y.to_vector());
  std::vector<float> want(static_cast<std::size_t>(6 * N));
  reference::matmul_forward(want.data(), x.data(), w.data(), 1, 6, N, K, false, true, false, false);
  EXPECT_TRUE(all_close(via_op, want, {2, 3, N}, tolerance::matmul(K)));
}

// ops::linear and linear_accumulate: Y (=|+=) X·Wᵀ + b with the bias added as the decode kernel (rows <= 8) or the
// GEMM (more rows; K = 2100: the host's second, ragged slab adds onto the first's bias) stores, and without a bias,
// against the oracle's product plus b in double.
TEST(Linear, BiasOnBothPaths) {
  for (std::int64_t M : {1, 3, 8, 9, 33})
    for (std::int64_t K : {513, 2100})
      for (bool with_bias : {true, false})
        for (bool accumulate : {false, true})
          for_each_space([&](auto space) {
          using Space = typename decltype(space)::type;
          using Tune = typename decltype(space)::tune;
          const std::int64_t N = 127;
          const auto name = "linear" + case_name(M, N, K);
          const auto x = uniform(M * K, -1, 1, name + "x"), w = uniform(N * K, -1, 1, name + "w");
          const auto b = uniform(N, -1, 1, name + "b"), y0 = uniform(M * N, -1, 1, name + "y");
          std::vector<float> prod(static_cast<std::size_t>(M * N)), want(prod.size());
          reference::matmul_forward(prod.data(), x.data(), w.data(), 1, M, N, K, false, true, false, false);
          for (std::int64_t r = 0; r < M; ++r)
            for (std::int64_t n = 0; n < N; ++n) {
              const auto i = static_cast<std::size_t>(r * N + n);
              want[i] = static_cast<float>(double(prod[i]) + (with_bias ? double(b[n]) : 0.0) + (accumulate ? double(y0[i]) : 0.0));
            }
          const auto X = Tensor<Space>::from_host({M, K}, x), W = Tensor<Space>::from_host({N, K}, w);
          const auto B = with_bias ? Tensor<Space>::from_host({N}, b) : Tensor<Space>();
          Tensor<Space> Y;
          if (accumulate) {
            Y = Tensor<Space>::from_host({M, N}, y0);
            ops::linear_accumulate<Space, Tune>(Y, X, W, B);
          } else {
            Y = ops::linear<Space, Tune>(X, W, B);
          }
          EXPECT_TRUE(all_close(Y.to_vector(), want, {M, N}, tolerance::matmul(K)))
              << Space::name() << " M " << M << " bias " << with_bias << " accumulate " << accumulate;
        });
  using Host = Kokkos::DefaultHostExecutionSpace;
  EXPECT_THROW(ops::linear(Tensor<Host>({2, 3}), Tensor<Host>({4, 3}), Tensor<Host>({5})), Error);
  EXPECT_THROW(ops::linear(Tensor<Host>({2, 3}), Tensor<Host>({4, 2})), Error);
}

}  // namespace
}  // namespace ptk::test
