// layernorm sweep (rows x cols): ptk against oneDNN layer normalization (training mode: it saves
// mean and variance, as ptk saves mean and rstd) and a memcpy of the same bytes; the same for
// layernorm_backward (oneDNN's layer normalization backward with scale and shift).
// The forwards also run over bf16 X and Y (impl ptk_bf16, credited with f32's bytes: its ratio is the speedup).
#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <vector>

#include "bench_common.hpp"
#include "ptk/kernels/layernorm.hpp"

namespace ptk::bench {

void register_layernorm() {
  std::vector<std::array<std::int64_t, 2>> shapes{{4096, 768}, {4096, 1024}, {1024, 4096}, {16384, 128}, {32768, 768}};
  // Out of cache: 32768x768 (96 MiB a tensor) in every sweep, 8192x4096 (128 MiB) in the full one.
  if (!sweep().quick) shapes.insert(shapes.end(), {{8192, 4096}, {16384, 768}, {4096, 8192}});
  for (const auto& rows_cols : shapes) {
    const std::int64_t rows = rows_cols[0], cols = rows_cols[1];  // named copies: lambdas below capture them
    const auto shape = "rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols);
    const double bytes = (2.0 * rows * cols + 2.0 * cols + 2.0 * rows) * sizeof(float);
    add("layernorm", "ptk", shape, Rate::gbytes, bytes, [=] {
      const auto x = random_tensor({rows, cols}, 4, -2, 2), gamma = random_tensor({cols}, 5), beta = random_tensor({cols}, 6);
      const Tensor<Space> y({rows, cols}), mean({rows}), rstd({rows});
      return std::function<void()>([=] {
        kernels::layernorm_forward<Space>(y.rows(), mean.flat(), rstd.flat(), x.rows(), gamma.flat(), beta.flat(), 1e-5f);
      });
    });
    add("layernorm", "ptk_bf16", shape, Rate::gbytes, bytes, [=] {  // f32's bytes: bench_common.hpp
      const auto x = random_bf16({rows, cols}, 4, -2, 2);
      const auto gamma = random_tensor({cols}, 5), beta = random_tensor({cols}, 6);
      const Tensor<Space, bf16> y({rows, cols});
      const Tensor<Space> mean({rows}), rstd({rows});
      return std::function<void()>([=] {
        kernels::layernorm_forward<Space>(y.rows(), mean.flat(), rstd.flat(), x.rows(), gamma.flat(), beta.flat(), 1e-5f);
      });
    });
    add("layernorm", "onednn", shape, Rate::gbytes, bytes, [=] {
      using dnnl::memory;
      const auto n = static_cast<std::size_t>(rows * cols);
      auto data = std::make_shared<std::vector<float>>(2 * n + 2 * static_cast<std::size_t>(cols + rows), 0.5f);
      auto engine = std::make_shared<dnnl::engine>(dnnl::engine::kind::cpu, 0);
      auto stream = std::make_shared<dnnl::stream>(*engine);
      const memory::desc md({rows, cols}, memory::data_type::f32, memory::format_tag::ab);
      const memory::desc param_md({cols}, memory::data_type::f32, memory::format_tag::a);
      const memory::desc stat_md({rows}, memory::data_type::f32, memory::format_tag::a);
      auto norm = std::make_shared<dnnl::layer_normalization_forward>(dnnl::layer_normalization_forward::primitive_desc(
          dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_training, md, 1e-5f,
                                                  dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift),
          *engine));
      float* p = data->data();
      const memory src(md, *engine, p), dst(md, *engine, p + n), scale(param_md, *engine, p + 2 * n),
          shift(param_md, *engine, p + 2 * n + cols);
      const memory mean(stat_md, *engine), variance(stat_md, *engine);
      return std::function<void()>([=] {
        norm->execute(*stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCALE, scale},
                                {DNNL_ARG_SHIFT, shift}, {DNNL_ARG_MEAN, mean}, {DNNL_ARG_VARIANCE, variance}});
        stream->wait();
        (void)data;
      });
    });
    add_memcpy("layernorm", shape, bytes);
  }

  // layernorm_backward: ptk reads X, dY, dX and writes dX (it accumulates), plus the per-row and
  // per-column vectors; oneDNN writes dX without reading it. Every impl is credited with ptk's bytes,
  // so the GB/s ratios are time ratios.
  std::vector<std::array<std::int64_t, 2>> backward_shapes{{4096, 1024}};  // quick: one shape
  if (!sweep().quick)
    backward_shapes = {{4096, 768}, {4096, 1024}, {1024, 4096}, {16384, 128}, {32768, 768},
                       {8192, 4096}, {16384, 768}, {4096, 8192}};
  for (const auto& rows_cols : backward_shapes) {
    const std::int64_t rows = rows_cols[0], cols = rows_cols[1];
    const auto shape = "rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols);
    const double bytes = (4.0 * rows * cols + 5.0 * cols + 2.0 * rows) * sizeof(float);
    add("layernorm_backward", "ptk", shape, Rate::gbytes, bytes, [=] {
      const auto x = random_tensor({rows, cols}, 4, -2, 2), dy = random_tensor({rows, cols}, 9);
      const auto gamma = random_tensor({cols}, 5), beta = random_tensor({cols}, 6);
      const Tensor<Space> y({rows, cols}), mean({rows}), rstd({rows}), dx({rows, cols}), dgamma({cols}), dbeta({cols});
      kernels::layernorm_forward<Space>(y.rows(), mean.flat(), rstd.flat(), x.rows(), gamma.flat(), beta.flat(), 1e-5f);
      return std::function<void()>([=] {
        kernels::layernorm_backward<Space>(dx.rows(), dgamma.flat(), dbeta.flat(), dy.rows(), x.rows(), gamma.flat(),
                                           mean.flat(), rstd.flat());
      });
    });
    add("layernorm_backward", "onednn", shape, Rate::gbytes, bytes, [=] {
      using dnnl::memory;
      const auto n = static_cast<std::size_t>(rows * cols);
      auto data = std::make_shared<std::vector<float>>(3 * n + 4 * static_cast<std::size_t>(cols), 0.5f);
      auto engine = std::make_shared<dnnl::engine>(dnnl::engine::kind::cpu, 0);
      auto stream = std::make_shared<dnnl::stream>(*engine);
      const memory::desc md({rows, cols}, memory::data_type::f32, memory::format_tag::ab);
      const memory::desc param_md({cols}, memory::data_type::f32, memory::format_tag::a);
      const memory::desc stat_md({rows}, memory::data_type::f32, memory::format_tag::a);
      // oneDNN 2.6 refuses to execute the backward pass unless the shift is among its arguments.
      const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
      const dnnl::layer_normalization_forward::primitive_desc hint(
          dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_training, md, 1e-5f, flags), *engine);
      auto norm = std::make_shared<dnnl::layer_normalization_backward>(dnnl::layer_normalization_backward::primitive_desc(
          dnnl::layer_normalization_backward::desc(dnnl::prop_kind::backward, md, md, stat_md, 1e-5f, flags), *engine,
          hint));
      float* p = data->data();
      const memory src(md, *engine, p), diff_dst(md, *engine, p + n), diff_src(md, *engine, p + 2 * n),
          scale(param_md, *engine, p + 3 * n), diff_scale(param_md, *engine, p + 3 * n + cols),
          diff_shift(param_md, *engine, p + 3 * n + 2 * cols), shift(param_md, *engine, p + 3 * n + 3 * cols);
      const memory mean(stat_md, *engine), variance(stat_md, *engine);
      std::fill_n(static_cast<float*>(variance.get_data_handle()), rows, 1.0f);
      std::fill_n(static_cast<float*>(mean.get_data_handle()), rows, 0.0f);
      return std::function<void()>([=] {
        norm->execute(*stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_MEAN, mean},
                                {DNNL_ARG_VARIANCE, variance}, {DNNL_ARG_SCALE, scale}, {DNNL_ARG_SHIFT, shift},
                                {DNNL_ARG_DIFF_SRC, diff_src},
                                {DNNL_ARG_DIFF_SCALE, diff_scale}, {DNNL_ARG_DIFF_SHIFT, diff_shift}});
        stream->wait();
        (void)data;
      });
    });
    add_memcpy("layernorm_backward", shape, bytes);
  }
}

}  // namespace ptk::bench
