#pragma once
// gelu (tanh form) and silu, elementwise over a tensor of any shape; their backward passes
// accumulate dX += dY · f'(X). E (f32, bf16, f16): the element type of every tensor; the arithmetic is fp32,
// each output rounded once.
#include "ptk/kernels/gelu.hpp"
#include "ptk/kernels/silu.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
Tensor<Space, E> gelu(const Tensor<Space, E>& x) {
  check_tensor("gelu", "X", x, 0, INT_MAX);
  auto y = Tensor<Space, E>::uninitialized(x.shape(), "ptk::gelu");
  kernels::gelu_forward<Space, Tune>(y.flat(), x.flat());
  return y;
}

template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
Tensor<Space, E> silu(const Tensor<Space, E>& x) {
  check_tensor("silu", "X", x, 0, INT_MAX);
  auto y = Tensor<Space, E>::uninitialized(x.shape(), "ptk::silu");
  kernels::silu_forward<Space, Tune>(y.flat(), x.flat());
  return y;
}

template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
void gelu_backward(const Tensor<Space, E>& dx, const Tensor<Space, E>& x, const Tensor<Space, E>& dy) {
  check_tensor("gelu_backward", "X", x, 0, INT_MAX);
  check_same_shape("gelu_backward", "dY", dy, "X", x);
  check_same_shape("gelu_backward", "dX", dx, "X", x);
  kernels::gelu_backward<Space, Tune>(dx.flat(), x.flat(), dy.flat());
}

template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
void silu_backward(const Tensor<Space, E>& dx, const Tensor<Space, E>& x, const Tensor<Space, E>& dy) {
  check_tensor("silu_backward", "X", x, 0, INT_MAX);
  check_same_shape("silu_backward", "dY", dy, "X", x);
  check_same_shape("silu_backward", "dX", dx, "X", x);
  kernels::silu_backward<Space, Tune>(dx.flat(), x.flat(), dy.flat());
}

}  // namespace ptk::ops
