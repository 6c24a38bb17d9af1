// softmax sweep (rows x cols): ptk against oneDNN softmax and a memcpy of the same bytes; the same
// for softmax_backward (oneDNN's softmax backward), on the forward's full shapes and two quick ones.
// The forwards also run over bf16 X and Y (impl ptk_bf16, credited with f32's bytes: its ratio is the speedup).
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "bench_common.hpp"
#include "ptk/kernels/softmax.hpp"

namespace ptk::bench {

void register_softmax() {
  std::vector<std::array<std::int64_t, 2>> shapes{{4096, 128}, {4096, 512}, {4096, 1024}, {1024, 4096}, {32768, 768}};
  // Out of cache: 32768x768 (96 MiB a tensor) in every sweep, 8192x4096 (128 MiB) in the full one.
  if (!sweep().quick) shapes.insert(shapes.end(), {{8192, 4096}, {16384, 1024}, {64, 50257}});
  for (const auto& rows_cols : shapes) {
    const std::int64_t rows = rows_cols[0], cols = rows_cols[1];  // named copies: lambdas below capture them
    const auto shape = "rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols);
    const double bytes = 2.0 * rows * cols * sizeof(float);
    add("softmax", "ptk", shape, Rate::gbytes, bytes, [=] {
      const auto x = random_tensor({rows, cols}, 3, -4, 4);
      const Tensor<Space> y({rows, cols});
      return std::function<void()>([=] { kernels::softmax_forward<Space>(y.rows(), x.rows(), 1.0f, false); });
    });
    add("softmax", "ptk_bf16", shape, Rate::gbytes, bytes, [=] {  // f32's bytes: bench_common.hpp
      const auto x = random_bf16({rows, cols}, 3, -4, 4);
      const Tensor<Space, bf16> y({rows, cols});
      return std::function<void()>([=] { kernels::softmax_forward<Space>(y.rows(), x.rows(), 1.0f, false); });
    });
    add("softmax", "onednn", shape, Rate::gbytes, bytes, [=] {
      using dnnl::memory;
      auto data = std::make_shared<std::vector<float>>(static_cast<std::size_t>(2 * rows * cols), 0.5f);
      auto engine = std::make_shared<dnnl::engine>(dnnl::engine::kind::cpu, 0);
      auto stream = std::make_shared<dnnl::stream>(*engine);
      const memory::desc md({rows, cols}, memory::data_type::f32, memory::format_tag::ab);
      auto softmax = std::make_shared<dnnl::softmax_forward>(dnnl::softmax_forward::primitive_desc(
          dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, md, 1), *engine));
      const memory src(md, *engine, data->data()), dst(md, *engine, data->data() + rows * cols);
      return std::function<void()>([=] {
        softmax->execute(*stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
        stream->wait();
        (void)data;
      });
    });
    add_memcpy("softmax", shape, bytes);
  }

  // softmax_backward: ptk reads Y, dY and dX and writes dX (it accumulates); oneDNN writes dX without
  // reading it. Every impl is credited with ptk's 4 tensors, so the GB/s ratios are time ratios.
  std::vector<std::array<std::int64_t, 2>> backward_shapes{{4096, 1024}};  // quick: one shape
  if (!sweep().quick)
    backward_shapes = {{4096, 128}, {4096, 512}, {4096, 1024}, {1024, 4096}, {32768, 768},
                       {8192, 4096}, {16384, 1024}, {64, 50257}};
  for (const auto& rows_cols : backward_shapes) {
    const std::int64_t rows = rows_cols[0], cols = rows_cols[1];
    const auto shape = "rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols);
    const double bytes = 4.0 * rows * cols * sizeof(float);
    add("softmax_backward", "ptk", shape, Rate::gbytes, bytes, [=] {
      const auto y = random_tensor({rows, cols}, 13, 0, 2.0f / cols), dy = random_tensor({rows, cols}, 14);
      const Tensor<Space> dx({rows, cols});
      return std::function<void()>([=] { kernels::softmax_backward<Space>(dx.rows(), y.rows(), dy.rows(), 1.0f); });
    });
    add("softmax_backward", "onednn", shape, Rate::gbytes, bytes, [=] {
      using dnnl::memory;
      const auto n = static_cast<std::size_t>(rows * cols);
      auto data = std::make_shared<std::vector<float>>(3 * n, 0.5f);
      auto engine = std::make_shared<dnnl::engine>(dnnl::engine::kind::cpu, 0);
      auto stream = std::make_shared<dnnl::stream>(*engine);
      const memory::desc md({rows, cols}, memory::data_type::f32, memory::format_tag::ab);
      const dnnl::softmax_forward::primitive_desc hint(
          dnnl::softmax_forward::desc(dnnl::prop_kind::forward_training, md, 1), *engine);
      auto softmax = std::make_shared<dnnl::softmax_backward>(
          dnnl::softmax_backward::primitive_desc(dnnl::softmax_backward::desc(md, md, 1), *engine, hint));
      float* p = data->data();
      const memory dst(md, *engine, p), diff_dst(md, *engine, p + n), diff_src(md, *engine, p + 2 * n);
      return std::function<void()>([=] {
        softmax->execute(*stream, {{DNNL_ARG_DST, dst}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}});
        stream->wait();
        (void)data;
      });
    });
    add_memcpy("softmax_backward", shape, bytes);
  }
}

}  // namespace ptk::bench
