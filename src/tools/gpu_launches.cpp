// ptk_gpu_launches: the launch configuration of every hot kernel under the GPU tuning (tuning.hpp,
// GpuTuning<1024>), read from the same constants and scratch layouts the kernels use, at the shapes
// of a GPT-2-small layer (D = 64 heads; D = 128 for attention too). scripts/gpu_report.py joins it
// with the registers, stack and shared memory that cuobjdump reads from a CUDA build, for the
// occupancy table in docs/design.md. Host-only: it launches nothing and needs no GPU.
//
// Output: CSV, one line per kernel: name, symbol (a substring of the demangled kernel name, quoted),
// threads per block (0: Kokkos chooses, for occupancy), level-0 and level-1 scratch bytes per block.
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdio>
#include <string>

#include "ptk/kernels/attention_backward.hpp"
#include "ptk/kernels/attention_forward.hpp"
#include "ptk/kernels/matmul_register_tiled.hpp"
#include "ptk/kernels/detail/scratch.hpp"
#include "ptk/kernels/tuning.hpp"

namespace {

using Host = Kokkos::DefaultHostExecutionSpace;  // scratch sizes do not depend on the space
using Gpu = ptk::kernels::GpuTuning<1024>;

void line(const std::string& name, const std::string& symbol, int threads, std::size_t level0 = 0,
          std::size_t level1 = 0) {
  std::printf("%s,\"%s\",%d,%zu,%zu\n", name.c_str(), symbol.c_str(), threads, level0, level1);
}

// Attention's scratch goes to level 0 when it fits Tune::attention::level0_bytes, as the launch decides;
// heads wider than level0_head_dim run with the wide tiles (WideHeads<Gpu>).
template <class Kernel>
void attention_line(const std::string& name, const std::string& symbol, int D) {
  const int Dp = (D + Kernel::NR - 1) / Kernel::NR * Kernel::NR;
  const std::size_t bytes = ptk::kernels::scratch_bytes<Kernel>(Dp);
  const bool level0 = bytes <= static_cast<std::size_t>(Gpu::attention::level0_bytes);
  line(name + " D=" + std::to_string(D), symbol, Gpu::attention::team_size, level0 ? bytes : 0, level0 ? 0 : bytes);
}

}  // namespace

int main() {
  using namespace ptk::kernels;
  constexpr int row_threads = Gpu::rows::team_size * Gpu::rows::vector_length;
  std::printf("kernel,symbol,threads,level0_bytes,level1_bytes\n");
  using Gemm = MatmulRegisterTiled<Host, Gpu>;
  line("matmul", "MatmulRegisterTiled", Gemm::threads, Gemm::scratch_bytes());
  using Wide = WideHeads<Gpu>;
  static_assert(Gpu::attention::level0_head_dim == 64, "the D = 64 lines below assume the narrow tiles");
  const std::string narrow = "<Kokkos::Cuda, ptk::kernels::GpuTuning", wide = "<Kokkos::Cuda, ptk::kernels::WideHeads";
  attention_line<AttentionForward<Host, Gpu>>("attention_forward", "AttentionForward" + narrow, 64);
  attention_line<AttentionBackwardKV<Host, Gpu>>("attention_backward_kv", "AttentionBackwardKV" + narrow, 64);
  attention_line<AttentionBackwardQ<Host, Gpu>>("attention_backward_q", "AttentionBackwardQ" + narrow, 64);
  attention_line<AttentionForward<Host, Wide>>("attention_forward (wide tiles)", "AttentionForward" + wide, 128);
  attention_line<AttentionBackwardKV<Host, Wide>>("attention_backward_kv (wide tiles)", "AttentionBackwardKV" + wide, 128);
  attention_line<AttentionBackwardQ<Host, Wide>>("attention_backward_q (wide tiles)", "AttentionBackwardQ" + wide, 128);
  line("attention_backward_rows", "AttentionBackwardRows", 0);
  line("softmax_forward", "SoftmaxForward", row_threads);
  line("softmax_backward", "SoftmaxBackward", row_threads);
  line("layernorm_forward", "LayernormForward", row_threads);
  line("layernorm_backward", "LayernormBackward", row_threads);
  line("rmsnorm_forward", "RmsnormForward", row_threads);
  line("rmsnorm_backward", "RmsnormBackward", row_threads);
  line("column_sums", "add_column_sums", 0);
  line("bias_backward", "BiasPartials", row_threads);
  line("gelu_forward", "gelu_forward", 0);
  line("gelu_backward", "gelu_backward", 0);
  line("silu_forward", "silu_forward", 0);
  line("silu_backward", "silu_backward", 0);
  line("adamw_update", "adamw_update", 0);
  line("global_norm", "global_norm", 0);
  line("embedding_forward", "embedding_forward", 0);
  line("embedding_backward", "embedding_backward", 0);
  line("cross_entropy_forward", "CrossEntropyForward", 0);
  line("cross_entropy_backward", "cross_entropy_backward", 0);
  return 0;
}
