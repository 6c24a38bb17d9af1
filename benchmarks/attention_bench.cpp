// attention sweep over T (B=1, H=12, D=64 as GPT-2 small; S = T), causal and not:
//   ptk          the fused flash-style kernel (kernels/attention.hpp), O(B·H·T·D) memory;
//   ptk_composed ptk's own batched matmul (q·kᵀ) + softmax kernel + matmul (·v), storing [B·H,T,T];
//   openblas     the same composition with OpenBLAS cblas_sgemm for both products and a softmax that
//                uses ptk's vectorizable fast_exp over all cores (std::thread, so no OpenMP pool
//                competes with OpenBLAS' own threads).
// FLOPs are the useful ones: 4·B·H·T·S·D, half of it when causal. The compositions compute the
// masked half too; that is their cost, not useful work.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "ptk/kernels/attention.hpp"
#include "ptk/kernels/fast_exp.hpp"
#include "ptk/kernels/matmul.hpp"
#include "ptk/kernels/softmax.hpp"

namespace ptk::bench {

namespace {

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
          kernels::attention_forward<Space>(out.batched_matrices(), lse.rows(),
                                            q.batched_matrices(), k.batched_matrices(), v.batched_matrices(), scale,
                                            causal);
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
}

}  // namespace ptk::bench
