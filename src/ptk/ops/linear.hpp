#pragma once
// linear: Y[rows, N] = X[rows, K] · W[N, K]ᵀ + b[N] (b optional: an undefined tensor), PyTorch's Linear on rows;
// linear_accumulate: Y += the same, in place. The bias is added as the product is stored, one launch: by the decode
// kernel for a few rows against W (a decode step: kernels::decode_applies), else by the GEMM.
// W may be stored as any element type (dtype.hpp; see the overload below).
#include <algorithm>
#include <vector>

#include "ptk/kernels/add.hpp"
#include "ptk/kernels/matmul_quantized_panel.hpp"
#include "ptk/kernels/quantize_activations.hpp"
#include "ptk/ops/checks.hpp"
#include "ptk/ops/convert.hpp"
#include "ptk/ops/matmul.hpp"

namespace ptk::ops {

namespace detail {
template <class Space, class Tune = kernels::Tuning<Space>>
void linear_into(const char* op, const Tensor<Space>& y, const Tensor<Space>& x, const Tensor<Space>& w,
                 const Tensor<Space>& b, bool accumulate) {
  check_tensor(op, "X", x, 2, 2);
  check_tensor(op, "Y", y, 2, 2);
  const Shape y_shape = matmul_shape(op, x, w, false, true);
  require(y.shape() == y_shape, op, ": Y has shape ", y.shape(), ", X · Wᵀ has ", y_shape);
  if (b.defined()) {
    check_tensor(op, "b", b, 1, 1);
    require(b.dim(0) == w.dim(0), op, ": b has shape ", b.shape(), " for W ", w.shape(), "; it must be [", w.dim(0), "]");
  }
  kernels::matmul_forward<Space, Tune>(y.batched_matrices(), x.batched_matrices(), w.batched_matrices(), false, true,
                                       1.0f, accumulate ? 1.0f : 0.0f, kernels::MatmulImpl::portable,
                                       b.defined() ? ConstVector<Space>(b.flat()) : ConstVector<Space>());
}
}  // namespace detail

template <class Space, class Tune = kernels::Tuning<Space>>
Tensor<Space> linear(const Tensor<Space>& x, const Tensor<Space>& w, const Tensor<Space>& b = Tensor<Space>()) {
  auto y = Tensor<Space>::uninitialized(detail::matmul_shape("linear", x, w, false, true), "ptk::linear");
  detail::linear_into<Space, Tune>("linear", y, x, w, b, false);
  return y;
}

template <class Space, class Tune = kernels::Tuning<Space>>
void linear_accumulate(const Tensor<Space>& y, const Tensor<Space>& x, const Tensor<Space>& w,
                       const Tensor<Space>& b = Tensor<Space>()) {
  detail::linear_into<Space, Tune>("linear_accumulate", y, x, w, b, true);
}

// W stored as E (bf16, f16, q8_0, q4_0: dtype.hpp). A decode product reads W as stored (the decode kernel over E; for
// q8_0 and q4_0 also up to Tune::decode::quantized_rows rows, 8 at a time, multiplied as integers); on the host, q8_0
// and q4_0 products of Tune::decode::panel_from_rows rows or more take the panel kernel (integers, x's rows in SIMD
// lanes: kernels/matmul_quantized_panel.hpp); other products take the GEMM over W as stored (kernels/matmul_stored.hpp:
// q8_0 and q4_0 blocks widened as the host's GEMM packs them), or, on a GPU, the f32 GEMM on q8_0 and q4_0 W converted
// for the call. Against q8_0 and q4_0, x is rounded to int8 blocks on every path (kernels/quantize_activations.hpp),
// as llama.cpp rounds it.
namespace detail {
// Which kernel a product of M rows of x with W stored as E takes: for q8_0 and q4_0 from Tune::decode::panel_from_rows
// rows on, the panel kernel (x's rows in SIMD lanes); otherwise up to decode_max_rows rows (q8_0, q4_0: up to
// Tune::decode::quantized_rows) the decode kernel, 8 rows at a time; otherwise the GEMM.
enum class StoredRoute { decode, panel, gemm };
template <class Tune, class E>
StoredRoute stored_route(std::int64_t M) {
  constexpr int panel_from = Tune::decode::panel_from_rows;
  if (is_quantized_v<E> && panel_from > 0 && M >= panel_from) return StoredRoute::panel;
  if (M <= kernels::decode_max_rows || (is_quantized_v<E> && M <= Tune::decode::quantized_rows)) return StoredRoute::decode;
  return StoredRoute::gemm;
}

template <class Space, class Tune, class E>
void stored_linear_into(const char* op, const Tensor<Space>& y, const Tensor<Space>& x, const Tensor<Space, E>& w,
                        const Tensor<Space>& b, bool accumulate) {
  static_assert(!std::is_same_v<E, float>, "f32 weights take linear_into");
  check_tensor(op, "X", x, 2, 2);
  check_tensor(op, "W", w, 2, 2);
  require(x.dim(1) == w.dim(1), op, ": X has shape ", x.shape(), " and W ", w.shape(), "; W must be [N, ", x.dim(1), "]");
  require(y.shape() == Shape{x.dim(0), w.dim(0)}, op, ": Y has shape ", y.shape(), ", X · Wᵀ has [", x.dim(0), ", ",
          w.dim(0), "]");
  if (b.defined())
    require(b.shape() == Shape{w.dim(0)}, op, ": b has shape ", b.shape(), " for W ", w.shape(), "; it must be [",
            w.dim(0), "]");
  const int M = static_cast<int>(x.dim(0)), N = static_cast<int>(w.dim(0)), K = static_cast<int>(x.dim(1));
  const ConstVector<Space> bias = b.defined() ? ConstVector<Space>(b.flat()) : ConstVector<Space>();
  const StoredRoute route = stored_route<Tune, E>(M);
  if constexpr (is_quantized_v<E>) {
    if (route == StoredRoute::panel) {
      kernels::matmul_quantized_panel<Space, Tune, E>(y.rows(), x.rows(), w.rows(), 1.0f, accumulate ? 1.0f : 0.0f);
      if (b.defined()) kernels::bias_forward<Space>(y.rows(), y.rows(), b.flat());
      return;
    }
  }
  if (route == StoredRoute::gemm) {
    if constexpr (is_row_tile_v<E>) {  // the GEMM reads GGUF's blocks (a tuning that tiles takes panels)
      return stored_linear_into<Space, Tune, typename E::block_type>(op, y, x, untile(w), b, accumulate);
    } else if constexpr (is_quantized_v<E>) {
      // x rounded to its int8 blocks first, as the decode kernel rounds it: every path multiplies the same values.
      const auto xq = Tensor<Space>::uninitialized(x.shape(), "ptk::linear_x_int8");
      kernels::quantize_activations<Space>(xq.rows(), x.rows());
      if constexpr (Tune::matmul::register_tiled) {
        return linear_into<Space, Tune>(op, y, xq, to_f32(w), b, accumulate);
      } else {
        kernels::matmul_quantized_weight<Space, Tune, E>(y.batched_matrices(), xq.batched_matrices(),
                                                         w.batched_matrices(), 1.0f, accumulate ? 1.0f : 0.0f);
        if (b.defined()) kernels::bias_forward<Space>(y.rows(), y.rows(), b.flat());
        return;
      }
    } else {
      kernels::matmul_forward<Space, Tune, float, E>(y.batched_matrices(), x.batched_matrices(), w.batched_matrices(),
                                                     false, true, 1.0f, accumulate ? 1.0f : 0.0f,
                                                     kernels::MatmulImpl::portable, bias);
      return;
    }
  }
  // The decode kernel, 8 rows of x (and y) at a time: each chunk reads W once.
  for (int r = 0; r < M; r += kernels::decode_max_rows) {
    const int rows = std::min(kernels::decode_max_rows, M - r);
    const std::size_t at = static_cast<std::size_t>(r);
    kernels::matmul_decode<Space, Tune, E>(Matrix<Space>(y.rows().data() + at * N, rows, N),
                                           ConstMatrix<Space>(x.rows().data() + at * K, rows, K), w.rows(), 1.0f,
                                           accumulate ? 1.0f : 0.0f, bias);
  }
}
}  // namespace detail

template <class Space, class Tune = kernels::Tuning<Space>, class E>
Tensor<Space> linear(const Tensor<Space>& x, const Tensor<Space, E>& w, const Tensor<Space>& b = Tensor<Space>()) {
  check_tensor("linear", "X", x, 2, 2);
  check_tensor("linear", "W", w, 2, 2);
  auto y = Tensor<Space>::uninitialized({x.dim(0), w.dim(0)}, "ptk::linear");
  detail::stored_linear_into<Space, Tune>("linear", y, x, w, b, false);
  return y;
}

template <class Space, class Tune = kernels::Tuning<Space>, class E>
void linear_accumulate(const Tensor<Space>& y, const Tensor<Space>& x, const Tensor<Space, E>& w,
                       const Tensor<Space>& b = Tensor<Space>()) {
  detail::stored_linear_into<Space, Tune>("linear_accumulate", y, x, w, b, true);
}

// ys[p] = x · ws[p]ᵀ for up to kernels::decode_group_max weights of one element type and in-dimension (a layer's
// q, k and v, or gate and up): where x has a decode product's few rows (as linear takes the decode kernel for them),
// one launch for all, x rounded to int8 once for q8_0 and q4_0 (kernels::matmul_decode_group); otherwise a linear
// each. Each ys[p] is the bits linear(x, ws[p]) gives.
template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
std::vector<Tensor<Space>> linear_group(const Tensor<Space>& x, const std::vector<Tensor<Space, E>>& ws) {
  check_tensor("linear_group", "X", x, 2, 2);
  require(!ws.empty() && ws.size() <= static_cast<std::size_t>(kernels::decode_group_max), "linear_group: ",
          ws.size(), " weights; a group has 1 to ", kernels::decode_group_max);
  for (const auto& w : ws) {
    check_tensor("linear_group", "W", w, 2, 2);
    require(w.dim(1) == x.dim(1), "linear_group: X has shape ", x.shape(), " and W ", w.shape(), "; W must be [N, ",
            x.dim(1), "]");
  }
  const int M = static_cast<int>(x.dim(0)), K = static_cast<int>(x.dim(1));
  std::vector<Tensor<Space>> ys;
  if (ws.size() == 1 || detail::stored_route<Tune, E>(M) != detail::StoredRoute::decode) {
    for (const auto& w : ws) ys.push_back(linear<Space, Tune>(x, w));
    return ys;
  }
  for (const auto& w : ws) ys.push_back(Tensor<Space>::uninitialized({x.dim(0), w.dim(0)}, "ptk::linear"));
  for (int r = 0; r < M; r += kernels::decode_max_rows) {  // as stored_linear_into: 8 rows of x at a time
    const int rows = std::min(kernels::decode_max_rows, M - r);
    const std::size_t at = static_cast<std::size_t>(r);
    kernels::DecodeGroup<Space, E> group;
    for (std::size_t p = 0; p < ws.size(); ++p) {
      const std::size_t N = static_cast<std::size_t>(ws[p].dim(0));
      group.part[p] = {Matrix<Space>(ys[p].rows().data() + at * N, rows, N), ws[p].rows(), ConstVector<Space>()};
    }
    group.count = static_cast<int>(ws.size());
    kernels::matmul_decode_group<Space, Tune, E>(group, ConstMatrix<Space>(x.rows().data() + at * K, rows, K));
  }
  return ys;
}

}  // namespace ptk::ops
