// attention sweep over T (B=1, H=12, D=64 as GPT-2 small; S = T), causal and not:
//   ptk          the fused flash-style kernel (kernels/attention.hpp), O(B·H·T·D) memory;
//   ptk_bf16     the same kernel over Q, K, V and O stored as bf16 (fp32 inside); the backward's likewise;
//   ptk_composed ptk's own batched matmul (q·kᵀ) + softmax kernel + matmul (·v), storing [B·H,T,T];
//   openblas     the same composition with OpenBLAS cblas_sgemm for both products and a softmax that
//                uses ptk's vectorizable fast_exp over all cores (std::thread, so no OpenMP pool
//                competes with OpenBLAS' own threads).
// FLOPs are the useful ones: 4·B·H·T·S·D, half of it when causal. The compositions compute the
// masked half too; that is their cost, not useful work.
//
// attention_backward (same shapes; dQ, dK, dV from Q, K, V, dO and the forward's O and lse):
//   ptk          the fused flash-style backward (two kernels, P rebuilt from lse, no [T,S] storage);
//   ptk_composed ptk's batched matmul for the four products over the forward's stored P [B·H,T,T] (kept
//                from the forward, as a composed autograd keeps it), plus a row kernel for dS;
//   openblas     the same composition with cblas_sgemm and the dS rows on std::threads.
// FLOPs are counted as 2.5× the forward's useful FLOPs (10·B·H·T·S·D, half when causal): the four
// products a backward needs given P. ptk's kernels recompute QKᵀ and dO·Vᵀ twice (14·B·H·T·S·D
// executed); the compositions execute 8·B·H·T·S·D over the full square matrix even when causal.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "ptk/kernels/attention.hpp"
#include "ptk/kernels/detail/fast_exp.hpp"
#include "ptk/kernels/matmul.hpp"
#include "ptk/kernels/softmax.hpp"

namespace ptk::bench {

namespace {

// A [B·H, T, D] tensor (B = 1 here) as the attention kernels' [1, B·H, T, D] heads.
template <class E>
kernels::HeadsOf<Space, E> heads(const Tensor<Space, E>& t) {
  return kernels::heads_of(Tensor4Of<Space, E>(t.data(), 1, t.dim(0), t.dim(1), t.dim(2)));
}

// The heads as a model holds them ("ptk_rows"): q, k and v the H heads of D at columns 0, H·D and 2·H·D of one
// [1, T, 3·H·D] projection (GPT-2's qkv), the output (and dO) a [1, T, H·D] tensor, read and written in place.
struct RowsLayout {
  Tensor<Space> qkv, y;
  int T, H, D;
  kernels::Heads<Space> at(const Tensor<Space>& rows, int part) const {
    return kernels::heads_of<Space>(rows.data(), 1, T, static_cast<int>(rows.dim(2)), part * H * D, H, D);
  }
  kernels::Heads<Space> q() const { return at(qkv, 0); }
  kernels::Heads<Space> k() const { return at(qkv, 1); }
  kernels::Heads<Space> v() const { return at(qkv, 2); }
  kernels::Heads<Space> out() const { return at(y, 0); }
};
RowsLayout rows_layout(std::int64_t T, std::int64_t H, std::int64_t D) {
  return {random_tensor({1, T, 3 * H * D}, 9), Tensor<Space>({1, T, H * D}), static_cast<int>(T), static_cast<int>(H),
          static_cast<int>(D)};
}

struct HostAttention {
  std::int64_t heads, T, D;
  std::vector<float> q, k, v, att, out;
  HostAttention(std::int64_t heads, std::int64_t T, std::int64_t D)
      : heads(heads), T(T), D(D), q(static_cast<std::size_t>(heads * T * D)), k(q.size()), v(q.size()),
        att(static_cast<std::size_t>(heads * T * T)), out(q.size()) {
    for (std::size_t i = 0; i < q.size(); ++i) {
      q[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
      k[i] = static_cast<float>(i % 13) / 13.0f - 0.5f;
      v[i] = static_cast<float>(i % 11) / 11.0f - 0.5f;
    }
  }
};

// Rows [r0, r1) of the [heads·T, T] score matrix, already scaled: in-place softmax, causal masked.
// The max and the sum run over kLanes independent partials so that the compiler vectorizes them
// (a single running max or sum is a dependency chain it may not reorder): the baseline at its best.
void host_softmax_rows(float* att, std::int64_t T, std::int64_t r0, std::int64_t r1, bool causal) {
  constexpr int kLanes = 32;
  for (std::int64_t r = r0; r < r1; ++r) {
    float* row = att + r * T;
    const std::int64_t n = causal ? r % T + 1 : T;
    const std::int64_t full = n / kLanes * kLanes;
    float lane_max[kLanes], lane_sum[kLanes];
    for (int l = 0; l < kLanes; ++l) lane_max[l] = -HUGE_VALF, lane_sum[l] = 0.0f;
    for (std::int64_t j = 0; j < full; j += kLanes)
      for (int l = 0; l < kLanes; ++l) lane_max[l] = row[j + l] > lane_max[l] ? row[j + l] : lane_max[l];
    float mx = -HUGE_VALF;
    for (int l = 0; l < kLanes; ++l) mx = lane_max[l] > mx ? lane_max[l] : mx;
    for (std::int64_t j = full; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
    for (std::int64_t j = 0; j < full; j += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        row[j + l] = kernels::fast_exp(row[j + l] - mx);
        lane_sum[l] += row[j + l];
      }
    float sum = 0;
    for (int l = 0; l < kLanes; ++l) sum += lane_sum[l];
    for (std::int64_t j = full; j < n; ++j) {
      row[j] = kernels::fast_exp(row[j] - mx);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
    for (std::int64_t j = 0; j < n; ++j) row[j] *= inv;
    for (std::int64_t j = n; j < T; ++j) row[j] = 0.0f;
  }
}

void openblas_attention(HostAttention& h, float scale, bool causal) {
  const auto T = static_cast<int>(h.T), D = static_cast<int>(h.D);
  for (std::int64_t b = 0; b < h.heads; ++b)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D, scale, h.q.data() + b * T * D, D,
                h.k.data() + b * T * D, D, 0.0f, h.att.data() + b * T * T, T);
  const std::int64_t rows = h.heads * h.T;
  const int workers = std::max(1, openblas_get_num_threads());  // as many as OpenBLAS uses
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back(host_softmax_rows, h.att.data(), h.T, rows * w / workers, rows * (w + 1) / workers, causal);
  for (auto& t : pool) t.join();
  for (std::int64_t b = 0; b < h.heads; ++b)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, D, T, 1.0f, h.att.data() + b * T * T, T,
                h.v.data() + b * T * D, D, 0.0f, h.out.data() + b * T * D, D);
}

// The backward's composition over a stored P: dV = Pᵀ dO, dP = dO Vᵀ, dS = P ∘ (dP − rowsum(P ∘ dP)),
// dQ = scale dS K, dK = scale dSᵀ Q.
struct HostAttentionBackward : HostAttention {
  std::vector<float> dout, dp, dq, dk, dv;
  HostAttentionBackward(std::int64_t heads, std::int64_t T, std::int64_t D, float scale, bool causal)
      : HostAttention(heads, T, D), dout(q.size()), dp(att.size()), dq(q.size()), dk(q.size()), dv(q.size()) {
    for (std::size_t i = 0; i < dout.size(); ++i) dout[i] = static_cast<float>(i % 7) / 7.0f - 0.5f;
    openblas_attention(*this, scale, causal);  // att holds P from here on
  }
};

// Rows [r0, r1): dS = P ∘ (dP − Σ_j P·dP), in place over dp.
void host_softmax_backward_rows(const float* p, float* dp, std::int64_t T, std::int64_t r0, std::int64_t r1) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* pr = p + r * T;
    float* g = dp + r * T;
    float dot = 0.0f;
    for (std::int64_t j = 0; j < T; ++j) dot += pr[j] * g[j];
    for (std::int64_t j = 0; j < T; ++j) g[j] = pr[j] * (g[j] - dot);
  }
}

void openblas_attention_backward(HostAttentionBackward& h, float scale) {
  const auto T = static_cast<int>(h.T), D = static_cast<int>(h.D);
  for (std::int64_t b = 0; b < h.heads; ++b) {
    const float* p = h.att.data() + b * T * T;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, T, 1.0f, p, T, h.dout.data() + b * T * D, D, 0.0f,
                h.dv.data() + b * T * D, D);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D, 1.0f, h.dout.data() + b * T * D, D,
                h.v.data() + b * T * D, D, 0.0f, h.dp.data() + b * T * T, T);
  }
  const std::int64_t rows = h.heads * h.T;
  const int workers = std::max(1, openblas_get_num_threads());
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back(host_softmax_backward_rows, h.att.data(), h.dp.data(), h.T, rows * w / workers,
                      rows * (w + 1) / workers);
  for (auto& t : pool) t.join();
  for (std::int64_t b = 0; b < h.heads; ++b) {
    const float* ds = h.dp.data() + b * T * T;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, D, T, scale, ds, T, h.k.data() + b * T * D, D, 0.0f,
                h.dq.data() + b * T * D, D);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, T, scale, ds, T, h.q.data() + b * T * D, D, 0.0f,
                h.dk.data() + b * T * D, D);
  }
}

// The same dS rows for ptk's composition, one row per work item (a functor: nvcc allows no device
// lambda inside the benchmark's setup lambda).
struct SoftmaxBackwardRows {
  Matrix<Space> p, dp;
  int n;
  KOKKOS_INLINE_FUNCTION void operator()(const int r) const {
    float dot = 0.0f;
    for (int j = 0; j < n; ++j) dot += p(r, j) * dp(r, j);
    for (int j = 0; j < n; ++j) dp(r, j) = p(r, j) * (dp(r, j) - dot);
  }
};

void register_attention_backward(std::int64_t T, bool causal) {
  const std::int64_t B = 1, H = 12, D = 64;
  const float scale = 0.125f;
  const auto shape = "B=1,H=12,T=" + std::to_string(T) + ",D=64,causal=" + (causal ? "1" : "0");
  const double flops = 2.5 * 4.0 * B * H * T * T * D * (causal ? 0.5 : 1.0);
  // The fused backward over Q, K, V, dO (and O, the gradients) stored as E, its forward run once in setup.
  const auto fused = [=](auto tag) {
    using E = typename decltype(tag)::type;
    const auto random = [](Shape shape, std::uint32_t seed) {
      if constexpr (std::is_same_v<E, float>) return random_tensor(std::move(shape), seed);
      else return random_bf16(std::move(shape), seed);
    };
    const auto q = random({B * H, T, D}, 9), k = random({B * H, T, D}, 10), v = random({B * H, T, D}, 11),
               dout = random({B * H, T, D}, 12);
    const Tensor<Space, E> out({B * H, T, D}), dq({B * H, T, D}), dk({B * H, T, D}), dv({B * H, T, D});
    const Tensor<Space> lse({B * H, T});
    kernels::attention_forward<Space>(heads(out), lse.rows(), heads(q), heads(k), heads(v), scale, causal);
    return std::function<void()>([=] {
      kernels::attention_backward<Space>(heads(dq), heads(dk), heads(dv), heads(dout), heads(q), heads(k), heads(v),
                                         heads(out), lse.rows(), scale, causal);
    });
  };
  add("attention_backward", "ptk", shape, Rate::gflops, flops, [=] { return fused(TypeTag<float>{}); });
  add("attention_backward", "ptk_bf16", shape, Rate::gflops, flops, [=] { return fused(TypeTag<bf16>{}); });
  add("attention_backward", "ptk_rows", shape, Rate::gflops, flops, [=] {
    const RowsLayout x = rows_layout(T, H, D);
    const Tensor<Space> lse({B * H, T}), dy = random_tensor({1, T, H * D}, 12), dqkv({1, T, 3 * H * D});
    kernels::attention_forward<Space>(x.out(), lse.rows(), x.q(), x.k(), x.v(), scale, causal);
    return std::function<void()>([=] {
      kernels::attention_backward<Space>(x.at(dqkv, 0), x.at(dqkv, 1), x.at(dqkv, 2), x.at(dy, 0), x.q(), x.k(), x.v(),
                                         x.out(), lse.rows(), scale, causal);
    });
  });
  add("attention_backward", "ptk_composed", shape, Rate::gflops, flops, [=] {
    const auto q = random_tensor({B * H, T, D}, 9), k = random_tensor({B * H, T, D}, 10),
               v = random_tensor({B * H, T, D}, 11), dout = random_tensor({B * H, T, D}, 12);
    const Tensor<Space> p({B * H, T, T}), dp({B * H, T, T}), dq({B * H, T, D}), dk({B * H, T, D}), dv({B * H, T, D});
    kernels::matmul_forward<Space>(p.batched_matrices(), q.batched_matrices(), k.batched_matrices(), false, true);
    kernels::softmax_forward<Space>(p.rows(), p.rows(), scale, causal);
    return std::function<void()>([=] {
      kernels::matmul_forward<Space>(dv.batched_matrices(), p.batched_matrices(), dout.batched_matrices(), true, false);
      kernels::matmul_forward<Space>(dp.batched_matrices(), dout.batched_matrices(), v.batched_matrices(), false, true);
      Kokkos::parallel_for("ptk::bench::softmax_backward_rows",
                           Kokkos::RangePolicy<Space>(0, static_cast<int>(B * H * T)),
                           SoftmaxBackwardRows{p.rows(), dp.rows(), static_cast<int>(T)});
      kernels::matmul_forward<Space>(dq.batched_matrices(), dp.batched_matrices(), k.batched_matrices(), false, false,
                                     scale, 0.0f);
      kernels::matmul_forward<Space>(dk.batched_matrices(), dp.batched_matrices(), q.batched_matrices(), true, false,
                                     scale, 0.0f);
    });
  });
  add("attention_backward", "openblas", shape, Rate::gflops, flops, [=] {
    auto host = std::make_shared<HostAttentionBackward>(B * H, T, D, scale, causal);
    return std::function<void()>([=] { openblas_attention_backward(*host, scale); });
  });
}

}  // namespace

void register_attention() {
  std::vector<std::int64_t> lengths{128, 256, 512, 1024};
  if (!sweep().quick) lengths.push_back(2048);
  const std::int64_t B = 1, H = 12, D = 64;
  const float scale = 0.125f;
  for (auto T : lengths) {
    for (bool causal : {false, true}) {
      const auto shape = "B=1,H=12,T=" + std::to_string(T) + ",D=64,causal=" + (causal ? "1" : "0");
      const double flops = 4.0 * B * H * T * T * D * (causal ? 0.5 : 1.0);
      add("attention", "ptk", shape, Rate::gflops, flops, [=] {
        const auto q = random_tensor({B * H, T, D}, 9), k = random_tensor({B * H, T, D}, 10),
                   v = random_tensor({B * H, T, D}, 11);
        const Tensor<Space> out({B * H, T, D}), lse({B * H, T});
        return std::function<void()>([=] {
          kernels::attention_forward<Space>(heads(out), lse.rows(), heads(q), heads(k), heads(v), scale, causal);
        });
      });
      add("attention", "ptk_rows", shape, Rate::gflops, flops, [=] {
        const RowsLayout x = rows_layout(T, H, D);
        const Tensor<Space> lse({B * H, T});
        return std::function<void()>([=] {
          kernels::attention_forward<Space>(x.out(), lse.rows(), x.q(), x.k(), x.v(), scale, causal);
        });
      });
      add("attention", "ptk_bf16", shape, Rate::gflops, flops, [=] {
        const auto q = random_bf16({B * H, T, D}, 9), k = random_bf16({B * H, T, D}, 10),
                   v = random_bf16({B * H, T, D}, 11);
        const Tensor<Space, bf16> out({B * H, T, D});
        const Tensor<Space> lse({B * H, T});
        return std::function<void()>([=] {
          kernels::attention_forward<Space>(heads(out), lse.rows(), heads(q), heads(k), heads(v), scale, causal);
        });
      });
      add("attention", "ptk_composed", shape, Rate::gflops, flops, [=] {
        const auto q = random_tensor({B * H, T, D}, 9), k = random_tensor({B * H, T, D}, 10),
                   v = random_tensor({B * H, T, D}, 11);
        const Tensor<Space> out({B * H, T, D}), att({B * H, T, T});
        return std::function<void()>([=] {
          kernels::matmul_forward<Space>(att.batched_matrices(), q.batched_matrices(), k.batched_matrices(), false,
                                         true);
          kernels::softmax_forward<Space>(att.rows(), att.rows(), scale, causal);
          kernels::matmul_forward<Space>(out.batched_matrices(), att.batched_matrices(), v.batched_matrices(), false,
                                         false);
        });
      });
      add("attention", "openblas", shape, Rate::gflops, flops, [=] {
        auto host = std::make_shared<HostAttention>(B * H, T, D);
        return std::function<void()>([=] { openblas_attention(*host, scale, causal); });
      });
    }
  }
  // Backward: the quick sweep adds T = 256 only.
  std::vector<std::int64_t> backward_lengths{256};
  if (!sweep().quick) backward_lengths = {128, 256, 512, 1024, 2048};
  for (auto T : backward_lengths)
    for (bool causal : {false, true}) register_attention_backward(T, causal);
}

}  // namespace ptk::bench
