// rmsnorm sweep (rows x cols): ptk against a memcpy of the same bytes (oneDNN 2.6 has no rmsnorm);
// the same for rmsnorm_backward.
// The forwards also run over bf16 X and Y (impl ptk_bf16, credited with f32's bytes: its ratio is the speedup).
#include <vector>

#include "bench_common.hpp"
#include "ptk/kernels/rmsnorm.hpp"

namespace ptk::bench {

void register_rmsnorm() {
  std::vector<std::array<std::int64_t, 2>> shapes{{4096, 768}, {4096, 1024}, {1024, 4096}, {32768, 768}};
  // Out of cache: 32768x768 (96 MiB a tensor) in every sweep, 8192x4096 (128 MiB) in the full one.
  if (!sweep().quick) shapes.insert(shapes.end(), {{8192, 4096}, {16384, 768}, {4096, 8192}});
  for (const auto& rows_cols : shapes) {
    const std::int64_t rows = rows_cols[0], cols = rows_cols[1];  // named copies: lambdas below capture them
    const auto shape = "rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols);
    const double bytes = (2.0 * rows * cols + cols + rows) * sizeof(float);
    add("rmsnorm", "ptk", shape, Rate::gbytes, bytes, [=] {
      const auto x = random_tensor({rows, cols}, 7, -2, 2), weight = random_tensor({cols}, 8);
      const Tensor<Space> y({rows, cols}), rstd({rows});
      return std::function<void()>(
          [=] { kernels::rmsnorm_forward<Space>(y.rows(), rstd.flat(), x.rows(), weight.flat(), 1e-5f); });
    });
    add("rmsnorm", "ptk_bf16", shape, Rate::gbytes, bytes, [=] {  // f32's bytes: bench_common.hpp
      const auto x = random_bf16({rows, cols}, 7, -2, 2);
      const auto weight = random_tensor({cols}, 8);
      const Tensor<Space, bf16> y({rows, cols});
      const Tensor<Space> rstd({rows});
      return std::function<void()>(
          [=] { kernels::rmsnorm_forward<Space>(y.rows(), rstd.flat(), x.rows(), weight.flat(), 1e-5f); });
    });
    add_memcpy("rmsnorm", shape, bytes);
  }

  // rmsnorm_backward: reads X, dY, dX and writes dX (it accumulates), plus rstd, weight and dweight.
  std::vector<std::array<std::int64_t, 2>> backward_shapes{{4096, 1024}};  // quick: one shape
  if (!sweep().quick)
    backward_shapes = {{4096, 768}, {4096, 1024}, {1024, 4096}, {32768, 768}, {8192, 4096}, {16384, 768}, {4096, 8192}};
  for (const auto& rows_cols : backward_shapes) {
    const std::int64_t rows = rows_cols[0], cols = rows_cols[1];
    const auto shape = "rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols);
    const double bytes = (4.0 * rows * cols + 3.0 * cols + rows) * sizeof(float);
    add("rmsnorm_backward", "ptk", shape, Rate::gbytes, bytes, [=] {
      const auto x = random_tensor({rows, cols}, 7, -2, 2), weight = random_tensor({cols}, 8);
      const auto dy = random_tensor({rows, cols}, 10);
      const Tensor<Space> y({rows, cols}), rstd({rows}), dx({rows, cols}), dweight({cols});
      kernels::rmsnorm_forward<Space>(y.rows(), rstd.flat(), x.rows(), weight.flat(), 1e-5f);
      return std::function<void()>([=] {
        kernels::rmsnorm_backward<Space>(dx.rows(), dweight.flat(), dy.rows(), x.rows(), weight.flat(), rstd.flat());
      });
    });
    add_memcpy("rmsnorm_backward", shape, bytes);
  }
}

}  // namespace ptk::bench
