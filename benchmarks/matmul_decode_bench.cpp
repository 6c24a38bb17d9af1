// Decode matmul sweep: y[M,N] = x[M,K] · W[N,K]ᵀ for a decode step's few rows (M = 1, 2, 4, 8) against
// linear-layer weights, bound by reading W. Rate: GB/s of weight bytes (N·K·4 per product; x and y
// are at most 1 % of them), with GFLOP/s as an extra "GFLOPs" counter (not a rate the report reads).
// Beside it the bandwidth ceiling: Kokkos::deep_copy of a 256 MiB buffer, counted STREAM-copy style
// as read + write (512 MiB a copy), and OpenBLAS sgemv (M = 1) and sgemm (W transposed) on the same
// shapes, with the threads OpenBLAS is given (OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS).
// W stored as bf16, f16, q8_0 or q4_0 (shape key dtype=...): the same kernel on fewer bytes, at M = 1, each beside a
// copy of its own weight bytes (matmul_decode/copy/bytes=...), the ceiling the issue measures it against. Those
// weights fit this machine's 260 MiB cache; `from=memory` shapes cycle through 1 GiB of copies, as a model's step does.
#include <cblas.h>

#include <array>
#include <memory>
#include <set>
#include <vector>

#include "bench_common.hpp"
#include "ptk/kernels/matmul.hpp"
#include "ptk/ops/convert.hpp"

namespace ptk::bench {

namespace {

void register_decode(std::int64_t M, std::int64_t N, std::int64_t K) {
  const auto shape = "M=" + std::to_string(M) + ",N=" + std::to_string(N) + ",K=" + std::to_string(K);
  const double weight_bytes = 4.0 * N * K, flops = 2.0 * M * N * K;
  add("matmul_decode", "ptk", shape, Rate::gbytes, weight_bytes, [=] {
    const auto x = random_tensor({1, M, K}, 1), w = random_tensor({1, N, K}, 2);
    const Tensor<Space> y({1, M, N});
    return std::function<void()>([=] {
      kernels::matmul_forward<Space>(y.batched_matrices(), x.batched_matrices(), w.batched_matrices(), false, true);
    });
  }, flops);
  struct Host {
    std::vector<float> x, w, y;
  };
  const auto host_operands = [=] {
    auto h = std::make_shared<Host>();
    h->x.resize(static_cast<std::size_t>(M * K));
    h->w.resize(static_cast<std::size_t>(N * K));
    h->y.resize(static_cast<std::size_t>(M * N));
    for (std::size_t i = 0; i < h->x.size(); ++i) h->x[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
    for (std::size_t i = 0; i < h->w.size(); ++i) h->w[i] = static_cast<float>(i % 13) / 13.0f - 0.5f;
    return h;
  };
  if (M == 1)
    add("matmul_decode", "openblas_sgemv", shape, Rate::gbytes, weight_bytes, [=] {
      auto h = host_operands();
      return std::function<void()>([=] {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.0f, h->w.data(), K, h->x.data(), 1, 0.0f, h->y.data(), 1);
      });
    }, flops);
  add("matmul_decode", "openblas_sgemm", shape, Rate::gbytes, weight_bytes, [=] {
    auto h = host_operands();
    return std::function<void()>([=] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, h->x.data(), K, h->w.data(), K, 0.0f,
                  h->y.data(), N);
    });
  }, flops);
}

// A copy of `bytes` (read + write counted), once per size (bf16 and f16 weights have the same bytes).
void copy_of(std::int64_t bytes) {
  static std::set<std::int64_t> done;
  if (done.insert(bytes).second) add_memcpy("matmul_decode", "bytes=" + std::to_string(bytes), 2.0 * bytes);
}

// W as E: converted, and for row tiles (as the host stores a q8_0 or q4_0 weight) then tiled.
template <class E>
Tensor<Space, E> stored(const Tensor<Space>& w) {
  if constexpr (std::is_same_v<E, float>) return w;
  else if constexpr (is_row_tile_v<E>) return ops::tile(ops::convert<typename E::block_type>(w));
  else return ops::convert<E>(w);
}

// E's key in a benchmark name: its dtype, with "_tiles" for row tiles.
template <class E>
std::string type_key() {
  return std::string(dtype_name(Element<E>::dtype)) + (item_rows_v<E> > 1 ? "_tiles" : "");
}

// y[1,N] = x · Wᵀ with W stored as E; rate: GB/s of E's weight bytes.
template <class E>
void register_stored(std::int64_t N, std::int64_t K) {
  const auto shape = "M=1,N=" + std::to_string(N) + ",K=" + std::to_string(K) + ",dtype=" + type_key<E>();
  const double bytes = static_cast<double>(dtype_bytes(Element<E>::dtype, N * K));
  add("matmul_decode", "ptk", shape, Rate::gbytes, bytes, [=] {
    const auto x = random_tensor({1, K}, 1);
    const auto w = stored<E>(random_tensor({N, K}, 2));
    const Tensor<Space> y({1, N});
    return std::function<void()>([=] { kernels::matmul_decode<Space, kernels::Tuning<Space>, E>(y.rows(), x.rows(), w.rows()); });
  }, 2.0 * N * K);
  copy_of(static_cast<std::int64_t>(bytes));
}

// The same product with W coming from memory, as in a model's decode step (whose weights exceed any cache): each
// call takes the next of as many copies of W as fill 1 GiB, four times the largest last-level cache measured on
// (260 MiB), so no copy is still cached when its turn comes again. Rate: GB/s of E's weight bytes read.
template <class E>
void register_from_memory(std::int64_t N, std::int64_t K) {
  constexpr double ring_bytes = 1024.0 * (1 << 20);
  const auto shape = "M=1,N=" + std::to_string(N) + ",K=" + std::to_string(K) + ",dtype=" + type_key<E>() +
                     ",from=memory";
  const double bytes = static_cast<double>(dtype_bytes(Element<E>::dtype, N * K));
  add("matmul_decode", "ptk", shape, Rate::gbytes, bytes, [=] {
    const auto x = random_tensor({1, K}, 1);
    const auto w = stored<E>(random_tensor({N, K}, 2));
    auto ring = std::make_shared<std::vector<Tensor<Space, E>>>();
    for (double b = 0; b < ring_bytes; b += bytes) {
      ring->push_back(Tensor<Space, E>::persistent(w.shape(), "ptk::bench::ring"));
      Kokkos::deep_copy(ring->back().storage(), w.storage());
    }
    auto next = std::make_shared<std::size_t>(0);
    const Tensor<Space> y({1, N});
    return std::function<void()>([=] {
      const auto& wi = (*ring)[(*next)++ % ring->size()];
      kernels::matmul_decode<Space, kernels::Tuning<Space>, E>(y.rows(), x.rows(), wi.rows());
    });
  }, 2.0 * N * K);
}

}  // namespace

void register_matmul_decode() {
  add_memcpy("matmul_decode", "copy_256MiB", 2.0 * (std::size_t(256) << 20));
  // Square layers (d = 1024, 4096) and a Llama-7B MLP down projection (in 11008, out 4096).
  for (auto NK : std::vector<std::array<std::int64_t, 2>>{{1024, 1024}, {4096, 4096}, {4096, 11008}})
    for (std::int64_t M : {1, 2, 4, 8}) register_decode(M, NK[0], NK[1]);
  for (auto NK : std::vector<std::array<std::int64_t, 2>>{{4096, 4096}, {4096, 11008}}) {
    copy_of(4 * NK[0] * NK[1]);
    register_stored<bf16>(NK[0], NK[1]);
    register_stored<f16>(NK[0], NK[1]);
    register_stored<q8_0>(NK[0], NK[1]);
    register_stored<q4_0>(NK[0], NK[1]);
    register_stored<q8_0x16>(NK[0], NK[1]);
    register_stored<q4_0x16>(NK[0], NK[1]);
  }
  // TinyLlama's MLP gate and up projections (out 5632, in 2048), from memory: a decode step's regime;
  register_from_memory<float>(5632, 2048);
  register_from_memory<bf16>(5632, 2048);
  register_from_memory<q8_0x16>(5632, 2048);
  register_from_memory<q4_0x16>(5632, 2048);
  // and its down projection (out 2048, in 5632): rows of 11-22 KB.
  register_from_memory<float>(2048, 5632);
  register_from_memory<bf16>(2048, 5632);
}

}  // namespace ptk::bench
