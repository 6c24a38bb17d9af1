// matmul parity: ptk::ops::matmul (portable kernel and KokkosBlas::gemm; and over A and B stored as bf16 or f16)
// and ptk::ops::matmul_backward against the oracle.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "matmul_cases.hpp"
#include "parity.hpp"
#include "ptk/core/vendor_blas.hpp"
#include "ptk/kernels/detail/load.hpp"
#include "ptk/ops/matmul.hpp"
#include "ptk/reference/matmul.hpp"
#include "ptk/reference/matmul_backward.hpp"

namespace ptk::test {
namespace {

// The sweep: odd sizes on every axis, all transpose combinations, batched and broadcast operands.
const std::vector<MatmulCase> kCases = [] {
  std::vector<MatmulCase> cases;
  for (std::int64_t n : {1, 3, 17, 127}) cases.push_back({0, 0, n, n, n, false, false});
  for (auto [M, N, K] : std::vector<std::array<std::int64_t, 3>>{
           {513, 17, 127}, {17, 513, 3}, {3, 127, 513}, {127, 1, 513}, {1, 513, 127}, {300, 257, 64}})
    cases.push_back({0, 0, M, N, K, false, false});
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      cases.push_back({0, 0, 17, 127, 33, ta, tb});
      cases.push_back({3, 3, 127, 17, 65, ta, tb});
    }
  cases.push_back({4, 0, 33, 129, 17, false, false});  // a linear layer: batched input, shared weight
  cases.push_back({4, 0, 33, 129, 17, false, true});
  cases.push_back({0, 2, 5, 7, 513, true, false});  // shared left operand
  cases.push_back({1, 1, 1, 1, 1, false, false});
  // Long reductions: the kernel sums K in slabs, then the slabs.
  cases.push_back({0, 0, 3, 5, 4096, false, false});
  cases.push_back({0, 0, 2, 33, 16384, true, true});
  cases.push_back({0, 0, 2, 3, 65536, false, true});
  cases.push_back({2, 2, 5, 3, 65536, true, false});
  // The host's 2048-step slabs with a ragged last one: a prompt's rows (one team splits the columns) and a training
  // product's (threads take whole row blocks).
  cases.push_back({0, 0, 37, 100, 4099, false, true});
  cases.push_back({0, 0, 1100, 50, 2100, false, false});
  // Attention-like batched shapes: QK^T (trans_b) and P·V.
  cases.push_back({6, 6, 64, 64, 32, false, true});
  cases.push_back({6, 6, 64, 32, 64, false, false});
  return cases;
}();

template <class Space, class Tune>
void check_matmul(const MatmulCase& c) {
  const Shape a_shape = operand_shape(c.batch_a, c.M, c.K, c.trans_a);
  const Shape b_shape = operand_shape(c.batch_b, c.K, c.N, c.trans_b);
  const auto a = uniform(element_count(a_shape), -1, 1, name(c) + "a");
  const auto b = uniform(element_count(b_shape), -1, 1, name(c) + "b");
  const std::int64_t batch = std::max<std::int64_t>({c.batch_a, c.batch_b, 1});
  std::vector<float> want(static_cast<std::size_t>(batch * c.M * c.N));
  reference::matmul_forward(want.data(), a.data(), b.data(), batch, c.M, c.N, c.K, c.trans_a, c.trans_b,
                            c.batch_a > 0, c.batch_b > 0);

  const auto A = Tensor<Space>::from_host(a_shape, a), B = Tensor<Space>::from_host(b_shape, b);
  for (auto impl : {ops::MatmulImpl::portable, ops::MatmulImpl::kokkos_blas}) {
    const auto C = ops::matmul<Space, Tune>(A, B, c.trans_a, c.trans_b, impl);
    Shape c_shape{c.M, c.N};
    if (c.batch_a > 0 || c.batch_b > 0) c_shape.insert(c_shape.begin(), batch);
    ASSERT_EQ(C.shape(), c_shape);
    EXPECT_TRUE(all_close(C.to_vector(), want, c_shape, tolerance::matmul(c.K)))
        << Space::name() << (impl == ops::MatmulImpl::portable ? " portable kernel" : " KokkosBlas::gemm");
  }
}

class MatmulParity : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulParity, Forward) {
  for_each_space([&](auto space) { check_matmul<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Sweep, MatmulParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

// A and B stored as EA and EB (B alone bf16/f16: a stored weight; or both 16-bit): the portable kernel against the
// oracle applied to the stored values, at fp32's tolerance (the kernel reads them exactly and sums in fp32). Two
// 16-bit operands on a GPU also go to the vendor GEMM (GpuMatmul::vendor_gemm16, tensor cores with fp32
// accumulation): checked at the same tolerance, and the portable kernel with the route turned off.
template <class Space, class Tune, class EA, class EB>
void check_stored_matmul(const MatmulCase& c) {
  const Shape a_shape = operand_shape(c.batch_a, c.M, c.K, c.trans_a);
  const Shape b_shape = operand_shape(c.batch_b, c.K, c.N, c.trans_b);
  const auto a = rounded<EA>(uniform(element_count(a_shape), -1, 1, name(c) + "a"));
  const auto b = rounded<EB>(uniform(element_count(b_shape), -1, 1, name(c) + "b"));
  const std::int64_t batch = std::max<std::int64_t>({c.batch_a, c.batch_b, 1});
  std::vector<float> want(static_cast<std::size_t>(batch * c.M * c.N));
  reference::matmul_forward(want.data(), values_of(a).data(), values_of(b).data(), batch, c.M, c.N, c.K, c.trans_a,
                            c.trans_b, c.batch_a > 0, c.batch_b > 0);
  const auto A = Tensor<Space, EA>::from_host(a_shape, a);
  const auto B = Tensor<Space, EB>::from_host(b_shape, b);
  Shape c_shape{c.M, c.N};
  if (c.batch_a > 0 || c.batch_b > 0) c_shape.insert(c_shape.begin(), batch);
  constexpr bool both_routes = Tune::matmul::vendor_gemm16 && !is_host_space_v<Space> && std::is_same_v<EA, EB>;
  for (const bool route : both_routes ? std::vector<bool>{true, false} : std::vector<bool>{false}) {
    const bool was = vendor::enable_gemm16(route);
    const auto C = ops::matmul<Space, Tune>(A, B, c.trans_a, c.trans_b);
    vendor::enable_gemm16(was);
    EXPECT_TRUE(all_close(C.to_vector(), want, c_shape, tolerance::matmul(c.K)))
        << Space::name() << " A " << dtype_name(Element<EA>::dtype) << ", B " << dtype_name(Element<EB>::dtype)
        << (route ? ", " + vendor::gemm16_route() : ", ptk's kernel");
  }
}

class MatmulStoredParity : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulStoredParity, Forward) {
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    check_stored_matmul<Space, Tune, float, bf16>(GetParam());
    check_stored_matmul<Space, Tune, float, f16>(GetParam());
    check_stored_matmul<Space, Tune, bf16, bf16>(GetParam());
    check_stored_matmul<Space, Tune, f16, f16>(GetParam());
  });
}

INSTANTIATE_TEST_SUITE_P(Sweep, MatmulStoredParity, ::testing::ValuesIn(kStoredCases),
                         [](const auto& info) { return name(info.param); });

// C = alpha · op(A) · op(B) + beta · C in place, against the oracle's product combined in double.
template <class Space, class Tune>
void check_accumulate(const MatmulCase& c, float alpha, float beta) {
  const Shape a_shape = operand_shape(c.batch_a, c.M, c.K, c.trans_a);
  const Shape b_shape = operand_shape(c.batch_b, c.K, c.N, c.trans_b);
  const auto a = uniform(element_count(a_shape), -1, 1, name(c) + "a");
  const auto b = uniform(element_count(b_shape), -1, 1, name(c) + "b");
  const std::int64_t batch = std::max<std::int64_t>({c.batch_a, c.batch_b, 1});
  Shape c_shape{c.M, c.N};
  if (c.batch_a > 0 || c.batch_b > 0) c_shape.insert(c_shape.begin(), batch);
  const auto c0 = uniform(element_count(c_shape), -1, 1, name(c) + "c");
  std::vector<float> product(c0.size()), want(c0.size());
  reference::matmul_forward(product.data(), a.data(), b.data(), batch, c.M, c.N, c.K, c.trans_a, c.trans_b,
                            c.batch_a > 0, c.batch_b > 0);
  for (std::size_t i = 0; i < want.size(); ++i)
    want[i] = static_cast<float>(double(alpha) * product[i] + double(beta) * c0[i]);

  const auto A = Tensor<Space>::from_host(a_shape, a), B = Tensor<Space>::from_host(b_shape, b);
  for (auto impl : {ops::MatmulImpl::portable, ops::MatmulImpl::kokkos_blas}) {
    const auto C = Tensor<Space>::from_host(c_shape, c0);
    ops::matmul_accumulate<Space, Tune>(C, A, B, c.trans_a, c.trans_b, alpha, beta, impl);
    EXPECT_TRUE(all_close(C.to_vector(), want, c_shape, tolerance::matmul(c.K)))
        << Space::name() << (impl == ops::MatmulImpl::portable ? " portable kernel" : " KokkosBlas::gemm")
        << " alpha=" << alpha << " beta=" << beta;
  }
}

TEST(MatmulAccumulate, AlphaBeta) {
  const std::vector<MatmulCase> cases{{0, 0, 17, 127, 33, false, false}, {3, 3, 127, 17, 65, true, true},
                                      {4, 0, 33, 129, 17, false, true},  {0, 2, 5, 7, 513, true, false},
                                      {0, 0, 13, 40, 1000, false, false}};
  for (const auto& c : cases)
    for (const auto& alpha_beta : std::vector<std::pair<float, float>>{{1, 1}, {-0.5f, 1}, {2, 0.25f}, {1, 0}}) {
      // Named copies, not a structured binding: clang (hipcc) rejects capturing bindings in C++17.
      const float alpha = alpha_beta.first, beta = alpha_beta.second;
      for_each_space([&](auto space) { check_accumulate<typename decltype(space)::type, typename decltype(space)::tune>(c, alpha, beta); });
    }
}

// The GEMM's pack tile (load.hpp): load_transposed_16 (the host's vector transposition, where the build has it) and
// load_transposed_16_portable against the definition, bit for bit, for f32, bf16 and f16 rows of random bit patterns
// (NaN, infinities and subnormals among them), into one panel (hi = lo + 8) and split over two panels of 8 rows.
template <class E>
void check_transposed_tiles() {
  constexpr std::size_t ld = 21;  // rows of the source this many items apart: no alignment assumed
  std::vector<E> src(16 * ld);
  std::uint32_t state = 12345;
  for (auto& v : src) {
    state = state * 1664525u + 1013904223u;
    if constexpr (std::is_same_v<E, float>) std::memcpy(&v, &state, sizeof v);
    else v = E{static_cast<std::uint16_t>(state >> 16)};
  }
  const auto same = [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0 || (std::isnan(x) && std::isnan(y)); };
  for (const std::size_t ldd : {std::size_t{8}, std::size_t{16}, std::size_t{48}}) {
    for (int variant = 0; variant < 2; ++variant) {
      std::vector<float> lo(16 * ldd, -1.0f), hi(16 * ldd, -1.0f);
      float* hi_ptr = ldd == 8 ? hi.data() : lo.data() + 8;  // 8-row panels split a tile; wider ones hold it whole
      if (variant == 0) kernels::load_transposed_16(src.data() + 2, ld, lo.data(), hi_ptr, ldd);
      else kernels::load_transposed_16_portable(src.data() + 2, ld, lo.data(), hi_ptr, ldd);
      for (int j = 0; j < 16; ++j)
        for (int k = 0; k < 16; ++k) {
          const float want = kernels::load(src.data() + 2 + j * ld, k);
          const float got = (j < 8 ? lo.data() + j : hi_ptr + (j - 8))[k * ldd];
          ASSERT_TRUE(same(got, want)) << dtype_name(Element<E>::dtype) << (variant ? " portable" : " vector")
                                       << " ldd " << ldd << ": row " << j << ", k " << k << ": " << got << " vs " << want;
        }
    }
  }
}

TEST(MatmulPack, TransposedTilesEqualTheDefinition) {
  check_transposed_tiles<float>();
  check_transposed_tiles<bf16>();
  check_transposed_tiles<f16>();
}

// Long K: the portable kernel's worst error against the float64 oracle must stay within a small
// multiple of OpenBLAS's (sgemm through KokkosBlas::gemm's BLAS TPL) on the same data. Under PTK_TUNING=gpu the
// GPU's kernel, whose 16 x 16 product splits K into ranges of 512 steps (matmul_split).
TEST(MatmulAccuracy, LongKNoWorseThanBlas) {
  using S = Kokkos::DefaultHostExecutionSpace;
  for (std::int64_t K : {4096, 16384, 65536}) {
    const MatmulCase c{0, 0, 16, 16, K, false, false};
    const auto a = uniform(c.M * K, -1, 1, name(c) + "a"), b = uniform(K * c.N, -1, 1, name(c) + "b");
    std::vector<double> want(static_cast<std::size_t>(c.M * c.N), 0.0);
    for (std::int64_t m = 0; m < c.M; ++m)
      for (std::int64_t k = 0; k < K; ++k)
        for (std::int64_t n = 0; n < c.N; ++n) want[m * c.N + n] += double(a[m * K + k]) * double(b[k * c.N + n]);
    const auto A = Tensor<S>::from_host({c.M, K}, a), B = Tensor<S>::from_host({K, c.N}, b);
    const auto max_error = [&](ops::MatmulImpl impl) {
#if defined(KOKKOS_ENABLE_OPENMP)
      const auto got = runtime::host_runs_gpu_tuning()
                           ? ops::matmul<S, kernels::EmulatedGpuTuning>(A, B, false, false, impl).to_vector()
                           : ops::matmul(A, B, false, false, impl).to_vector();
#else
      const auto got = ops::matmul(A, B, false, false, impl).to_vector();
#endif
      double worst = 0;
      for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
      return worst / tolerance::u;
    };
    const double ptk = max_error(ops::MatmulImpl::portable), blas = max_error(ops::MatmulImpl::kokkos_blas);
    std::cout << "[ accuracy ] K=" << K << ": max |error| ptk " << ptk << " u, OpenBLAS " << blas << " u\n";
    EXPECT_LE(ptk, 2.0 * blas + 64.0) << "K=" << K;
  }
}

// Backward: odd sizes on every axis, all transpose combinations, batched, and both broadcast directions (a
// shared B, the linear layer: dB sums over the batch, one flattened GEMM when A is not transposed and a loop of
// GEMMs when it is; a shared A: dA sums over the batch, always the loop), long summed reductions.
const std::vector<MatmulCase> kBackwardCases = [] {
  std::vector<MatmulCase> cases;
  for (std::int64_t n : {1, 3, 17, 127}) cases.push_back({0, 0, n, n, n, false, false});
  for (auto MNK : std::vector<std::array<std::int64_t, 3>>{{513, 17, 127}, {17, 513, 3}, {3, 127, 513}, {1, 513, 127}})
    cases.push_back({0, 0, MNK[0], MNK[1], MNK[2], false, false});
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      cases.push_back({0, 0, 17, 127, 33, ta, tb});
      cases.push_back({3, 3, 127, 17, 65, ta, tb});
      cases.push_back({4, 0, 33, 129, 17, ta, tb});  // shared B
      cases.push_back({0, 3, 5, 7, 513, ta, tb});    // shared A
    }
  cases.push_back({1, 1, 1, 1, 1, false, false});
  cases.push_back({1, 0, 3, 17, 5, false, true});
  cases.push_back({6, 0, 513, 17, 33, false, false});  // dB sums 6·513 rows in one GEMM
  cases.push_back({0, 5, 3, 257, 127, false, false});  // dA sums 5·257 columns over five GEMMs
  return cases;
}();

// The host GEMM's teams (matmul_blocked.hpp): a team of every OpenMP thread splitting a row block's columns, or one
// thread a row block, or Serial's single thread, sum every element's k in the same order: the same bits.
TEST(MatmulHost, SameBitsWhateverTheTeams) {
#if defined(KOKKOS_ENABLE_OPENMP) && defined(KOKKOS_ENABLE_SERIAL)
  for (const auto& [M, N, K, tb] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, bool>>{
           {64, 1000, 2100, true}, {1100, 150, 2100, false}, {9, 97, 4099, true}}) {
    const auto a = uniform(M * K, -1, 1, "teams-a"), b = uniform(K * N, -1, 1, "teams-b");
    const auto product = [&](auto space) {
      using S = decltype(space);
      const auto A = Tensor<S>::from_host({1, M, K}, a);
      const auto B = tb ? Tensor<S>::from_host({1, N, K}, b) : Tensor<S>::from_host({1, K, N}, b);
      Tensor<S> C({1, M, N});
      kernels::matmul_forward<S, kernels::Tuning<S>>(C.batched_matrices(), A.batched_matrices(), B.batched_matrices(),
                                                     false, tb);  // the host's tuning even under PTK_TUNING=gpu
      return C.to_vector();
    };
    const auto serial = product(Kokkos::Serial()), openmp = product(Kokkos::OpenMP());
    ASSERT_EQ(serial.size(), openmp.size());
    for (std::size_t i = 0; i < serial.size(); ++i)
      ASSERT_EQ(serial[i], openmp[i]) << M << " x " << N << " x " << K << ": element (" << i / N << ", " << i % N
                                      << ") differs between Serial and OpenMP (" << Kokkos::OpenMP().concurrency()
                                      << " threads)";
  }
#else
  GTEST_SKIP() << "needs both Serial and OpenMP";
#endif
}

// dA and dB start from random values: the op must add, not overwrite.
template <class Space, class Tune>
void check_matmul_backward(const MatmulCase& c, bool want_a, bool want_b) {
  const Shape a_shape = operand_shape(c.batch_a, c.M, c.K, c.trans_a);
  const Shape b_shape = operand_shape(c.batch_b, c.K, c.N, c.trans_b);
  const std::int64_t batch = std::max<std::int64_t>({c.batch_a, c.batch_b, 1});
  Shape c_shape{c.M, c.N};
  if (c.batch_a > 0 || c.batch_b > 0) c_shape.insert(c_shape.begin(), batch);
  const auto a = uniform(element_count(a_shape), -1, 1, name(c) + "a");
  const auto b = uniform(element_count(b_shape), -1, 1, name(c) + "b");
  const auto dc = uniform(element_count(c_shape), -1, 1, name(c) + "dc");
  const auto da0 = uniform(element_count(a_shape), -1, 1, name(c) + "da");
  const auto db0 = uniform(element_count(b_shape), -1, 1, name(c) + "db");
  auto want_da = da0, want_db = db0;
  reference::matmul_backward(want_da.data(), want_db.data(), dc.data(), a.data(), b.data(), batch, c.M, c.N, c.K,
                             c.trans_a, c.trans_b, c.batch_a > 0, c.batch_b > 0);

  const auto da = want_a ? Tensor<Space>::from_host(a_shape, da0) : Tensor<Space>();
  const auto db = want_b ? Tensor<Space>::from_host(b_shape, db0) : Tensor<Space>();
  ops::matmul_backward<Space, Tune>(da, db, Tensor<Space>::from_host(c_shape, dc), Tensor<Space>::from_host(a_shape, a),
                       Tensor<Space>::from_host(b_shape, b), c.trans_a, c.trans_b);
  // A broadcast operand's gradient sums over the batch too.
  const std::int64_t da_len = c.N * (c.batch_a == 0 ? batch : 1), db_len = c.M * (c.batch_b == 0 ? batch : 1);
  if (want_a)
    EXPECT_TRUE(all_close(da.to_vector(), want_da, a_shape, tolerance::matmul_backward(da_len))) << Space::name() << " dA";
  if (want_b)
    EXPECT_TRUE(all_close(db.to_vector(), want_db, b_shape, tolerance::matmul_backward(db_len))) << Space::name() << " dB";
}

class MatmulBackwardParity : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulBackwardParity, Backward) {
  for_each_space([&](auto space) { check_matmul_backward<typename decltype(space)::type, typename decltype(space)::tune>(GetParam(), true, true); });
}

INSTANTIATE_TEST_SUITE_P(Sweep, MatmulBackwardParity, ::testing::ValuesIn(kBackwardCases),
                         [](const auto& info) { return name(info.param); });

// An undefined dA or dB is "not wanted": the other gradient is still computed, and nothing is written for it.
TEST(MatmulBackward, OneGradientOnly) {
  for (const auto& c : std::vector<MatmulCase>{{4, 0, 33, 129, 17, false, true}, {0, 3, 5, 7, 513, true, false}})
    for_each_space([&](auto space) {
      using Space = typename decltype(space)::type;
      using Tune = typename decltype(space)::tune;
      check_matmul_backward<Space, Tune>(c, true, false);
      check_matmul_backward<Space, Tune>(c, false, true);
    });
}

// The same inputs give bitwise the same gradients on every run.
TEST(MatmulBackward, Deterministic) {
  const MatmulCase c{6, 0, 513, 17, 33, false, false};
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    const auto A = Tensor<Space>::from_host({6, 513, 33}, uniform(6 * 513 * 33, -1, 1, "det-a"));
    const auto B = Tensor<Space>::from_host({33, 17}, uniform(33 * 17, -1, 1, "det-b"));
    const auto dC = Tensor<Space>::from_host({6, 513, 17}, uniform(6 * 513 * 17, -1, 1, "det-c"));
    std::vector<float> first_a, first_b;
    for (int run = 0; run < 3; ++run) {
      Tensor<Space> dA({6, 513, 33}), dB({33, 17});
      ops::matmul_backward<Space, Tune>(dA, dB, dC, A, B, c.trans_a, c.trans_b);
      if (run == 0) first_a = dA.to_vector(), first_b = dB.to_vector();
      EXPECT_EQ(dA.to_vector(), first_a) << Space::name();
      EXPECT_EQ(dB.to_vector(), first_b) << Space::name();
    }
  });
}

TEST(MatmulBackward, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::matmul_backward(Tensor<S>({3, 2}), Tensor<S>({2, 5}), Tensor<S>({2, 5}), Tensor<S>({2, 3}), Tensor<S>({3, 5}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "matmul_backward: dA has shape [3, 2] but A has shape [2, 3]");
  }
  try {
    ops::matmul_backward(Tensor<S>(), Tensor<S>({3, 5}), Tensor<S>({4, 2, 5}), Tensor<S>({2, 3}), Tensor<S>({3, 5}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "matmul_backward: dC has shape [4, 2, 5], op(A) · op(B) has [2, 5]");
  }
  EXPECT_THROW(ops::matmul_backward(Tensor<S>(), Tensor<S>(), Tensor<S>({2, 5}), Tensor<S>({2, 4}), Tensor<S>({3, 5})),
               Error);
}

template <class Space>
std::string matmul_error(const Shape& a, const Shape& b, bool ta = false, bool tb = false) {
  try {
    ops::matmul(Tensor<Space>(a), Tensor<Space>(b), ta, tb);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(MatmulErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  EXPECT_EQ(matmul_error<S>({2, 3}, {4, 5}),
            "matmul: inner dimensions differ: op(A) has K=3 and op(B) has K=4 for A [2, 3] (trans_a=0), B [4, 5] "
            "(trans_b=0)");
  EXPECT_EQ(matmul_error<S>({3, 2}, {3, 5}, true, false), "no error");
  EXPECT_EQ(matmul_error<S>({2, 3, 4}, {3, 4, 5}),
            "matmul: batch sizes differ for A [2, 3, 4] (trans_a=0), B [3, 4, 5] (trans_b=0)");
  EXPECT_EQ(matmul_error<S>({2, 2, 3, 4}, {4, 5}), "matmul: A must have rank 2..3, got shape [2, 2, 3, 4]");
  EXPECT_EQ(matmul_error<S>({4}, {4, 5}), "matmul: A must have rank 2..3, got shape [4]");
  EXPECT_THROW(ops::matmul(Tensor<S>(), Tensor<S>({4, 5})), Error);
  EXPECT_THROW(ops::matmul_accumulate(Tensor<S>({2, 4}), Tensor<S>({2, 3}), Tensor<S>({3, 5})), Error);
}

}  // namespace
}  // namespace ptk::test
