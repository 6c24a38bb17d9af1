// ptk_gpu_launches: the launch configuration of every hot kernel under the GPU tuning (tuning.hpp,
// GpuTuning<1024>), read from the same constants and scratch layouts the kernels use, at the shapes
// of a GPT-2-small layer (D = 64 heads; D = 128 for attention too). scripts/gpu_report.py joins it
// with the registers, stack and shared memory that cuobjdump reads from a CUDA build, for the
// occupancy table in docs/design.md. Host-only: it launches nothing and needs no GPU.
//
// Output: CSV, one line per kernel: name, symbol (a substring of the demangled kernel name, quoted),
// threads per block (0: Kokkos chooses, for occupancy), level-0 and level-1 scratch bytes per block.
// Which lines, in which order: the op table's (ptk/op_table.def, its launches column), then kNotOps.
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "ptk/kernels/attention_backward.hpp"
#include "ptk/kernels/attention_forward.hpp"
#include "ptk/kernels/decode_attention.hpp"
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

// One attention kernel's lines: its f32 instance at D = 64 (narrow tiles) and 128 (wide tiles), and its bf16 and f16
// instances at D = 64, each by its full instance name (the scratch is fp32 in every type, so one size serves).
template <class Narrow, class Wide>
void attention_lines(const std::string& name, const std::string& kernel) {
  const std::string narrow = kernel + "<Kokkos::Cuda, ptk::kernels::GpuTuning<(int)1024>, ",
                    wide = kernel + "<Kokkos::Cuda, ptk::kernels::WideHeads<ptk::kernels::GpuTuning<(int)1024>>, ";
  attention_line<Narrow>(name, narrow + "float>", 64);
  attention_line<Wide>(name + " (wide tiles)", wide + "float>", 128);
  for (const char* e : {"bf16", "f16"}) attention_line<Narrow>(name + " " + e, narrow + "ptk::" + e + ">", 64);
}

// Decode attention at its longest chunk (a long context): a team of team_size x vector_length threads per
// (batch, kv head, chunk), its query rows and scores in scratch at Tune::decode_attention::scratch_level.
// One line per cache type (f32, and f16 for the 16-bit caches: bf16's instance reads the same way).
void decode_attention_line(int D) {
  using Tiles = Gpu::decode_attention;
  const std::size_t bytes = ptk::kernels::scratch_bytes<ptk::kernels::DecodeAttentionPartial<Host, Gpu>>(D, Tiles::max_chunk);
  for (const char* cache : {"float", "ptk::f16"})
    line("decode_attention D=" + std::to_string(D) + (cache[0] == 'f' ? "" : " (f16 cache)"),
         std::string("DecodeAttentionPartial<Kokkos::Cuda, ptk::kernels::GpuTuning<(int)1024>, ") + cache + ">",
         Tiles::team_size * Tiles::vector_length, Tiles::scratch_level == 0 ? bytes : 0,
         Tiles::scratch_level == 0 ? 0 : bytes);
}

// Each line by the name the op table's launches column gives it (a kernel with two tile sets prints two lines).
std::map<std::string, std::function<void()>> launch_lines() {
  using namespace ptk::kernels;
  constexpr int row_threads = Gpu::rows::team_size * Gpu::rows::vector_length;
  using Gemm = MatmulRegisterTiled<Host, Gpu>;
  using Wide = WideHeads<Gpu>;
  static_assert(Gpu::attention::level0_head_dim == 64, "the D = 64 lines below assume the narrow tiles");
  const auto simple = [](const char* name, const char* symbol, int threads) {
    return [=] { line(name, symbol, threads); };
  };
  return {
      {"matmul",
       [] {  // f32, and the stored types' GEMMs (matmul_stored.hpp): both 16-bit, and an f32 A against a bf16 B
         const std::string gemm = "MatmulRegisterTiled<Kokkos::Cuda, ptk::kernels::GpuTuning<(int)1024>, ";
         line("matmul", gemm + "float, float>", Gemm::threads, Gemm::scratch_bytes());
         line("matmul bf16 x bf16", gemm + "ptk::bf16, ptk::bf16>", Gemm::threads, Gemm::scratch_bytes());
         line("matmul f32 x bf16", gemm + "float, ptk::bf16>", Gemm::threads, Gemm::scratch_bytes());
         line("split-K sum (matmul)", "MatmulSplitSum<Kokkos::Cuda>", 0);  // after a product whose K is split
       }},
      {"attention_forward",
       [] { attention_lines<AttentionForward<Host, Gpu>, AttentionForward<Host, Wide>>("attention_forward", "AttentionForward"); }},
      {"attention_backward_kv",
       [] {
         attention_lines<AttentionBackwardKV<Host, Gpu>, AttentionBackwardKV<Host, Wide>>("attention_backward_kv",
                                                                                          "AttentionBackwardKV");
       }},
      {"attention_backward_q",
       [] {
         attention_lines<AttentionBackwardQ<Host, Gpu>, AttentionBackwardQ<Host, Wide>>("attention_backward_q",
                                                                                        "AttentionBackwardQ");
       }},
      {"attention_backward_rows",
       simple("attention_backward_rows", "AttentionBackwardRows<Kokkos::Cuda, ptk::kernels::GpuTuning<(int)1024>, float>", 0)},
      {"decode_attention", [] { decode_attention_line(64); }},
      {"decode_attention_merge", simple("decode_attention_merge", "DecodeAttentionMerge<Kokkos::Cuda", 0)},
      {"softmax_forward", simple("softmax_forward", "SoftmaxForward", row_threads)},
      {"softmax_backward", simple("softmax_backward", "SoftmaxBackward", row_threads)},
      {"layernorm_forward", simple("layernorm_forward", "LayernormForward", row_threads)},
      {"layernorm_backward", simple("layernorm_backward", "LayernormBackward", row_threads)},
      {"rmsnorm_forward", simple("rmsnorm_forward", "RmsnormForward", row_threads)},
      {"rmsnorm_backward", simple("rmsnorm_backward", "RmsnormBackward", row_threads)},
      {"column_sums", simple("column_sums", "add_column_sums", 0)},
      {"bias_backward", simple("bias_backward", "BiasPartials", row_threads)},
      {"gelu_forward", simple("gelu_forward", "gelu_forward", 0)},
      {"gelu_backward", simple("gelu_backward", "gelu_backward", 0)},
      {"silu_forward", simple("silu_forward", "silu_forward", 0)},
      {"silu_backward", simple("silu_backward", "silu_backward", 0)},
      {"adamw_update", simple("adamw_update", "adamw_update", 0)},
      {"global_norm", simple("global_norm", "global_norm", 0)},
      {"embedding_forward", simple("embedding_forward", "embedding_forward", 0)},
      {"embedding_backward", simple("embedding_backward", "embedding_backward", 0)},
      {"cross_entropy_forward", simple("cross_entropy_forward", "CrossEntropyForward", 0)},
      {"cross_entropy_backward", simple("cross_entropy_backward", "cross_entropy_backward", 0)},
      {"rope", simple("rope", "Rope<Kokkos::Cuda", 0)},  // forward and backward: one functor, a bool apart
  };
}

// Kernels of no op in the table: the optimizer's, and linear's bias gradient (the model's, not a `ptk op`).
const char* const kNotOps[] = {"bias_backward", "adamw_update", "global_norm"};

}  // namespace

// The op table's rows in order, each row's lines, then the kernels of no op. Exit 1 when a row names a line this
// file cannot compute, or a line it computes belongs to no row (ctest op_table:gpu_launches runs it).
int main() {
  std::printf("kernel,symbol,threads,level0_bytes,level1_bytes\n");
  const auto lines = launch_lines();
  std::set<std::string> printed;
  int status = 0;
  const auto print = [&](const std::string& name) {
    const auto it = lines.find(name);
    if (it == lines.end()) {
      std::fprintf(stderr, "ptk_gpu_launches: the op table names a line '%s' that gpu_launches.cpp does not compute\n",
                   name.c_str());
      status = 1;
    } else if (printed.insert(name).second) {
      it->second();
    }
  };
  const auto print_all = [&](const std::string& names) {
    std::istringstream words(names);
    for (std::string name; words >> name;) print(name);
  };
#define PTK_OP(NAME, HEADER, BENCH, LAUNCHES, SUMMARY) print_all(LAUNCHES);
#include "ptk/op_table.def"
  for (const char* name : kNotOps) print(name);
  for (const auto& entry : lines)
    if (!printed.count(entry.first)) {
      std::fprintf(stderr, "ptk_gpu_launches: line '%s' belongs to no row of the op table (nor to kNotOps)\n",
                   entry.first.c_str());
      status = 1;
    }
  return status;
}
