#pragma once
// gelu (tanh form) and silu, elementwise over a tensor of any shape; their backward passes
// accumulate dX += dY · f'(X).
#include "ptk/kernels/gelu.hpp"
#include "ptk/kernels/silu.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

template <class Space, class Tune = kernels::Tuning<Space>>
Tensor<Space> gelu(const Tensor<Space>& x) {
  check_tensor("gelu", "X", x, 0, INT_MAX);
  auto y = Tensor<Space>::uninitialized(x.shape(), "ptk::gelu");
  kernels::gelu_forward<Space, Tune>(y.flat(), x.flat());
  return y;
}

template <class Space, class Tune = kernels::Tuning<Space>>
Tensor<Space> silu(const Tensor<Space>& x) {
  check_tensor("silu", "X", x, 0, INT_MAX);
  auto y = Tensor<Space>::uninitialized(x.shape(), "ptk::silu");
  kernels::silu_forward<Space, Tune>(y.flat(), x.flat());
  return y;
}

template <class Space, class Tune = kernels::Tuning<Space>>
void gelu_backward(const Tensor<Space>& dx, const Tensor<Space>& x, const Tensor<Space>& dy) {
  check_tensor("gelu_backward", "X", x, 0, INT_MAX);
  check_same_shape("gelu_backward", "dY", dy, "X", x);
  check_same_shape("gelu_backward", "dX", dx, "X", x);
  kernels::gelu_backward<Space, Tune>(dx.flat(), x.flat(), dy.flat());
}

template <class Space, class Tune = kernels::Tuning<Space>>
void silu_backward(const Tensor<Space>& dx, const Tensor<Space>& x, const Tensor<Space>& dy) {
  check_tensor("silu_backward", "X", x, 0, INT_MAX);
  check_same_shape("silu_backward", "dY", dy, "X", x);
  check_same_shape("silu_backward", "dX", dx, "X", x);
  kernels::silu_backward<Space, Tune>(dx.flat(), x.flat(), dy.flat());
}

}  // namespace ptk::ops
