// matmul sweep: ptk's portable kernel against KokkosBlas::gemm (OpenBLAS / cuBLAS TPL), OpenBLAS
// cblas_sgemm and oneDNN matmul, on square sizes and GPT-2-small linear-layer shapes.
#include <cblas.h>

#include <array>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "bench_common.hpp"
#include "ptk/core/vendor_blas.hpp"
#include "ptk/kernels/matmul_stored.hpp"
#include "ptk/ops/convert.hpp"

namespace ptk::bench {

namespace {

// C[M,N] = A[M,K] · B[K,N] in host memory, for the CPU libraries.
struct HostOperands {
  std::vector<float> a, b, c;
  HostOperands(std::int64_t M, std::int64_t N, std::int64_t K)
      : a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * N)), c(static_cast<std::size_t>(M * N)) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 13) / 13.0f - 0.5f;
  }
};

// oneDNN's matmul of a[M,K] by b, in host memory: b[K,N] (b_tag ab) or a weight stored [N,K] and read as its
// transpose (ba).
std::function<std::function<void()>()> onednn_setup(std::int64_t M, std::int64_t N, std::int64_t K,
                                                    dnnl::memory::format_tag b_tag) {
  return [=] {
    using dnnl::memory;
    auto host = std::make_shared<HostOperands>(M, N, K);
    auto engine = std::make_shared<dnnl::engine>(dnnl::engine::kind::cpu, 0);
    auto stream = std::make_shared<dnnl::stream>(*engine);
    const memory::desc a_md({M, K}, memory::data_type::f32, memory::format_tag::ab);
    const memory::desc b_md({K, N}, memory::data_type::f32, b_tag);
    const memory::desc c_md({M, N}, memory::data_type::f32, memory::format_tag::ab);
    auto matmul =
        std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), *engine));
    const memory a(a_md, *engine, host->a.data()), b(b_md, *engine, host->b.data()), c(c_md, *engine, host->c.data());
    return std::function<void()>([=] {
      matmul->execute(*stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
      stream->wait();
      (void)host;
    });
  };
}

void register_shape(std::int64_t M, std::int64_t N, std::int64_t K) {
  const auto shape = "M=" + std::to_string(M) + ",N=" + std::to_string(N) + ",K=" + std::to_string(K);
  const double flops = 2.0 * M * N * K;
  const auto device_gemm = [=](kernels::MatmulImpl impl) {
    return [=] {
      const auto a = random_tensor({1, M, K}, 1), b = random_tensor({1, K, N}, 2);
      const Tensor<Space> c({1, M, N});
      return std::function<void()>([=] {
        kernels::matmul_forward<Space>(c.batched_matrices(), a.batched_matrices(), b.batched_matrices(), false, false,
                                       impl);
      });
    };
  };
  add("matmul", "ptk", shape, Rate::gflops, flops, device_gemm(kernels::MatmulImpl::portable));
  add("matmul", "kokkos_blas", shape, Rate::gflops, flops, device_gemm(kernels::MatmulImpl::kokkos_blas));
  add("matmul", "openblas", shape, Rate::gflops, flops, [=] {
    auto host = std::make_shared<HostOperands>(M, N, K);
    return std::function<void()>([=] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, host->a.data(), K, host->b.data(), N,
                  0.0f, host->c.data(), N);
    });
  });
  add("matmul", "onednn", shape, Rate::gflops, flops, onednn_setup(M, N, K, dnnl::memory::format_tag::ab));
}

// On a GPU: ptk's GEMM with K never split (tuning.hpp, GpuMatmul::fill_blocks), beside `ptk`, which splits K where the
// blocks fill little of the GPU: what the split buys at each shape.
template <class S>
std::function<std::function<void()>()> unsplit_linear(std::int64_t M, std::int64_t N, std::int64_t K) {
  if constexpr (is_host_space_v<S>) {
    return {};  // the host's GEMM never splits K
  } else {
    return [=] {
      const auto x = random_tensor({1, M, K}, 1), w = random_tensor({1, N, K}, 2);
      const Tensor<S> c({1, M, N});
      return std::function<void()>([=] {
        kernels::matmul_register_tiled<S, kernels::Tuning<S>, float, float>(
            c.batched_matrices(), x.batched_matrices(), w.batched_matrices(), false, true, 1.0f, 0.0f,
            ConstVector<S>(), false);
      });
    };
  }
}

// A linear layer's product over M rows of activations against a shared weight stored [N, K] (PyTorch's and GGUF's
// layout): C[M,N] = X[M,K] · Wᵀ, the prefill's and training step's GEMM (shape key trans_b=1). M <= 8 is the decode
// kernel's; M from 9 up is the GEMM's. Each peer gets W in the same layout and the transposition flag it supports.
void register_linear(std::int64_t M, std::int64_t N, std::int64_t K) {
  const auto shape =
      "M=" + std::to_string(M) + ",N=" + std::to_string(N) + ",K=" + std::to_string(K) + ",trans_b=1";
  const double flops = 2.0 * M * N * K;
  add("matmul", "ptk", shape, Rate::gflops, flops, [=] {
    const auto x = random_tensor({1, M, K}, 1), w = random_tensor({1, N, K}, 2);
    const Tensor<Space> c({1, M, N});
    return std::function<void()>([=] {
      kernels::matmul_forward<Space>(c.batched_matrices(), x.batched_matrices(), w.batched_matrices(), false, true);
    });
  });
  add("matmul", "openblas", shape, Rate::gflops, flops, [=] {
    auto host = std::make_shared<HostOperands>(M, N, K);  // b holds W[N,K]
    return std::function<void()>([=] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, host->a.data(), K, host->b.data(), K, 0.0f,
                  host->c.data(), N);
    });
  });
  add("matmul", "onednn", shape, Rate::gflops, flops, onednn_setup(M, N, K, dnnl::memory::format_tag::ba));
  if constexpr (!is_host_space_v<Space>)
    add("matmul", "ptk_unsplit", shape, Rate::gflops, flops, unsplit_linear<Space>(M, N, K));
}

// The same product with A and B stored as E (bf16 or f16; fp32 accumulation and C): shape key dtype=, beside the
// f32 shape's entry for the ratio. On a GPU "ptk" is the vendor GEMM where one loads (tuning.hpp, vendor_gemm16), and
// "ptk_portable" ptk's own kernel beside it (the route turned off around each call).
template <class E>
void register_stored(std::int64_t M, std::int64_t N, std::int64_t K) {
  const auto shape = "M=" + std::to_string(M) + ",N=" + std::to_string(N) + ",K=" + std::to_string(K) +
                     ",dtype=" + dtype_name(Element<E>::dtype);
  const auto product = [=](bool portable) {
    return [=] {
      const auto a = ops::convert<E>(random_tensor({1, M, K}, 1)), b = ops::convert<E>(random_tensor({1, K, N}, 2));
      const Tensor<Space> c({1, M, N});
      return std::function<void()>([=] {
        const bool was = portable ? vendor::enable_gemm16(false) : false;
        kernels::matmul_forward<Space, kernels::Tuning<Space>, E, E>(c.batched_matrices(), a.batched_matrices(),
                                                                     b.batched_matrices(), false, false, 1.0f, 0.0f);
        if (portable) vendor::enable_gemm16(was);
      });
    };
  };
  add("matmul", "ptk", shape, Rate::gflops, 2.0 * M * N * K, product(false));
  if constexpr (!is_host_space_v<Space>) add("matmul", "ptk_portable", shape, Rate::gflops, 2.0 * M * N * K, product(true));
}

// Attention-like batched products (per head: QKᵀ with trans_b, then P·V): many small matrices.
void register_batched(std::int64_t B, std::int64_t M, std::int64_t N, std::int64_t K, bool trans_b) {
  const auto shape = "B=" + std::to_string(B) + ",M=" + std::to_string(M) + ",N=" + std::to_string(N) +
                     ",K=" + std::to_string(K) + ",trans_b=" + std::to_string(int(trans_b));
  const double flops = 2.0 * B * M * N * K;
  add("matmul", "ptk", shape, Rate::gflops, flops, [=] {
    const auto a = random_tensor({B, M, K}, 1);
    const auto b = random_tensor(trans_b ? Shape{B, N, K} : Shape{B, K, N}, 2);
    const Tensor<Space> c({B, M, N});
    return std::function<void()>([=] {
      kernels::matmul_forward<Space>(c.batched_matrices(), a.batched_matrices(), b.batched_matrices(), false, trans_b);
    });
  });
  add("matmul", "openblas", shape, Rate::gflops, flops, [=] {
    auto host = std::make_shared<HostOperands>(B * M, N, K);  // a and c: B stacked matrices
    host->b.resize(static_cast<std::size_t>(B * K * N));
    for (std::size_t i = 0; i < host->b.size(); ++i) host->b[i] = static_cast<float>(i % 13) / 13.0f - 0.5f;
    return std::function<void()>([=] {
      for (std::int64_t i = 0; i < B; ++i)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f,
                    host->a.data() + i * M * K, K, host->b.data() + i * K * N, trans_b ? K : N, 0.0f,
                    host->c.data() + i * M * N, N);
    });
  });
}

// matmul_backward of C[M,N] = A[M,K] · B[K,N]: dA += dC · Bᵀ and dB += Aᵀ · dC, 4·M·N·K FLOPs; ptk's op (two
// accumulating portable GEMMs) against the same two cblas_sgemm calls with beta = 1. `linear`: a linear layer's
// backward as the training step runs it (ag::linear), family linear_backward: dX += dY · W and dW += dYᵀ · X for
// X[M,K] and a weight W[N,K] (matmul_backward with trans_b).
void register_backward(std::int64_t M, std::int64_t N, std::int64_t K, bool linear = false) {
  const auto shape =
      "M=" + std::to_string(M) + ",N=" + std::to_string(N) + ",K=" + std::to_string(K) + (linear ? ",trans_b=1" : "");
  const char* family = linear ? "linear_backward" : "matmul_backward";
  const double flops = 4.0 * M * N * K;
  const Shape b_shape = linear ? Shape{1, N, K} : Shape{1, K, N};
  add(family, "ptk", shape, Rate::gflops, flops, [=] {
    const auto a = random_tensor({1, M, K}, 1), b = random_tensor(b_shape, 2), dc = random_tensor({1, M, N}, 3);
    const Tensor<Space> da({1, M, K}), db(b_shape);
    return std::function<void()>([=] {
      kernels::matmul_backward<Space>(da.batched_matrices(), db.batched_matrices(), dc.batched_matrices(),
                                      a.batched_matrices(), b.batched_matrices(), false, linear);
    });
  });
  add(family, "openblas", shape, Rate::gflops, flops, [=] {
    auto host = std::make_shared<HostOperands>(M, N, K);  // c serves as dC; b is W[N,K] for a linear layer
    auto grads = std::make_shared<std::vector<float>>(static_cast<std::size_t>(M * K + K * N), 0.0f);
    for (std::size_t i = 0; i < host->c.size(); ++i) host->c[i] = static_cast<float>(i % 11) / 11.0f - 0.5f;
    return std::function<void()>([=] {
      float* da = grads->data();
      float* db = da + M * K;
      const float* dc = host->c.data();
      if (linear) {  // dX = dY · W, dW += dYᵀ · X
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, N, 1.0f, dc, N, host->b.data(), K, 1.0f, da, K);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, M, 1.0f, dc, N, host->a.data(), K, 1.0f, db, K);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, N, 1.0f, dc, N, host->b.data(), N, 1.0f, da, K);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, N, M, 1.0f, host->a.data(), K, dc, N, 1.0f, db, N);
      }
    });
  });
}

}  // namespace

void register_matmul() {
  std::vector<std::int64_t> square{128, 256, 512, 1024};
  if (!sweep().quick) square.push_back(2048);
  for (auto n : square) register_shape(n, n, n);
  // GPT-2 small (d=768) linear layers on B*T tokens: qkv, attention projection, MLP up and down.
  const std::int64_t tokens = sweep().quick ? 1024 : 4096;
  for (auto [N, K] : std::vector<std::array<std::int64_t, 2>>{{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}}) {
    register_shape(tokens, N, K);
    register_stored<bf16>(tokens, N, K);
    register_stored<f16>(tokens, N, K);
  }
  // Prefill and training rows against Llama-7B (4096 x 4096, 11008 x 4096, 4096 x 11008) and TinyLlama (5632 x 2048)
  // weights [N, K]; the quick sweep keeps M = 16 and 128 of the first.
  if (sweep().quick) {
    for (std::int64_t M : {16, 128}) register_linear(M, 4096, 4096);
  } else {
    for (auto [N, K] : std::vector<std::array<std::int64_t, 2>>{{4096, 4096}, {11008, 4096}, {4096, 11008}, {5632, 2048}})
      for (std::int64_t M : {16, 32, 64, 128, 512}) register_linear(M, N, K);
  }
  // Ragged edges: TinyLlama's fused q, k, v projection (2048 + 2 x 256 columns: a 16-wide last panel) over prompts of
  // 17 and 100 tokens (a last row panel of 1 and 4 rows) and 512.
  if (!sweep().quick)
    for (std::int64_t M : {17, 100, 512}) register_linear(M, 2560, 2048);
  // A GPT-2 training step's linear layers (scripts/train_speed.sh's larger model: 2048 tokens, width 384): qkv,
  // attention projection, MLP up and down, forward and backward.
  if (!sweep().quick)
    for (auto [N, K] : std::vector<std::array<std::int64_t, 2>>{{1152, 384}, {384, 384}, {1536, 384}, {384, 1536}}) {
      register_linear(2048, N, K);
      register_backward(2048, N, K, true);
    }
  // GPT-2 small attention heads (T = 256, D = 64) over B·H = 48: scores QKᵀ and P·V.
  register_batched(48, 256, 256, 64, true);
  register_batched(48, 256, 64, 256, false);
  // Backward of the GPT-2 linear layers (dA and dB); the quick sweep adds the attention projection only.
  if (sweep().quick) {
    register_backward(tokens, 768, 768);
  } else {
    for (auto NK : std::vector<std::array<std::int64_t, 2>>{{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}})
      register_backward(tokens, NK[0], NK[1]);
  }
}

}  // namespace ptk::bench
