// gelu and silu sweeps over n: ptk against a memcpy of the same bytes. The full sweep adds the
// out-of-cache row-op shapes 8192x4096 and 32768x768, flattened (n=33554432, n=25165824).
// gelu_backward and silu_backward: the same sizes (quick: two of them), reading X, dY and dX and
// writing dX (they accumulate).
// The forwards also run over bf16 X and Y (impl ptk_bf16, credited with f32's bytes: its ratio is the speedup).
#include <vector>

#include "bench_common.hpp"
#include "ptk/kernels/gelu.hpp"
#include "ptk/kernels/silu.hpp"

namespace ptk::bench {

void register_activations() {
  std::vector<std::int64_t> sizes{1 << 16, 1 << 20, 4096 * 3072};
  if (!sweep().quick) sizes.insert(sizes.end(), {16384 * 3072, 8192 * 4096, 32768 * 768});
  for (const char* family : {"gelu", "silu"})
    for (auto n : sizes) {
      const auto shape = "n=" + std::to_string(n);
      const double bytes = 2.0 * n * sizeof(float);
      const bool gelu = family == std::string("gelu");
      add(family, "ptk", shape, Rate::gbytes, bytes, [=] {
        const auto x = random_tensor({n}, 12, -6, 6);
        const Tensor<Space> y({n});
        return std::function<void()>([=] {
          if (gelu) kernels::gelu_forward<Space>(y.flat(), x.flat());
          else kernels::silu_forward<Space>(y.flat(), x.flat());
        });
      });
      add(family, "ptk_bf16", shape, Rate::gbytes, bytes, [=] {  // f32's bytes: bench_common.hpp
        const auto x = random_bf16({n}, 12, -6, 6);
        const Tensor<Space, bf16> y({n});
        return std::function<void()>([=] {
          if (gelu) kernels::gelu_forward<Space>(y.flat(), x.flat());
          else kernels::silu_forward<Space>(y.flat(), x.flat());
        });
      });
      add_memcpy(family, shape, bytes);
    }

  std::vector<std::int64_t> backward_sizes{1 << 20};  // quick: one size
  if (!sweep().quick) backward_sizes = {1 << 16, 1 << 20, 4096 * 3072, 16384 * 3072, 8192 * 4096, 32768 * 768};
  for (const char* family : {"gelu_backward", "silu_backward"})
    for (auto n : backward_sizes) {
      const auto shape = "n=" + std::to_string(n);
      const double bytes = 4.0 * n * sizeof(float);
      const bool gelu = family == std::string("gelu_backward");
      add(family, "ptk", shape, Rate::gbytes, bytes, [=] {
        const auto x = random_tensor({n}, 12, -6, 6), dy = random_tensor({n}, 15);
        const Tensor<Space> dx({n});
        return std::function<void()>([=] {
          if (gelu) kernels::gelu_backward<Space>(dx.flat(), x.flat(), dy.flat());
          else kernels::silu_backward<Space>(dx.flat(), x.flat(), dy.flat());
        });
      });
      add_memcpy(family, shape, bytes);
    }
}

}  // namespace ptk::bench
