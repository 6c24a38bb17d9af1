// layernorm sweep (rows x cols): ptk against oneDNN layer normalization (training mode: it saves
// mean and variance, as ptk saves mean and rstd) and a memcpy of the same bytes.
#include <oneapi/dnnl/dnnl.hpp>
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
}

}  // namespace ptk::bench
