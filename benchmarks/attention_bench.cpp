// attention sweep over T (B=1, H=12, D=64, causal, as GPT-2 small): the composed kernel with the
// portable matmul (ptk) against the same composition with its two GEMMs through KokkosBlas::gemm
// (kokkos_blas: OpenBLAS / cuBLAS), which shows what the vendor GEMM buys inside attention.
// FLOPs are counted as the dense 4·B·H·T·T·D that the composed kernel computes.
#include <cmath>
#include <vector>

#include "bench_common.hpp"
#include "ptk/kernels/attention.hpp"

namespace ptk::bench {

void register_attention() {
  std::vector<std::int64_t> lengths{128, 256, 512, 1024};
  if (!sweep().quick) lengths.push_back(2048);
  const std::int64_t B = 1, H = 12, D = 64;
  for (auto T : lengths) {
    const auto shape = "B=1,H=12,T=" + std::to_string(T) + ",D=64";
    for (auto impl : {kernels::MatmulImpl::portable, kernels::MatmulImpl::kokkos_blas}) {
      add("attention", impl == kernels::MatmulImpl::portable ? "ptk" : "kokkos_blas", shape, Rate::gflops,
          4.0 * B * H * T * T * D, [=] {
            const auto q = random_tensor({B * H, T, D}, 9), k = random_tensor({B * H, T, D}, 10),
                       v = random_tensor({B * H, T, D}, 11);
            const Tensor<Space> out({B * H, T, D}), att({B * H, T, T});
            return std::function<void()>([=] {
              kernels::attention_forward<Space>(out.batched_matrices(), att.batched_matrices(), q.batched_matrices(),
                                                k.batched_matrices(), v.batched_matrices(), 0.125f, true, impl);
            });
          });
    }
  }
}

}  // namespace ptk::bench
