#pragma once
// gelu (tanh form), silu and swiglu (silu(gate) · up), elementwise over tensors of any shape; their backward
// passes accumulate dX += dY · f'(X). E (f32, bf16, f16): the element type of every tensor; the arithmetic is fp32,
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
void gelu_backward(const Tensor<Space, E>& dx, const Tensor<Space, E>& x, const Tensor<Space, E>& dy,
                   bool accumulate = true) {
  check_tensor("gelu_backward", "X", x, 0, INT_MAX);
  check_same_shape("gelu_backward", "dY", dy, "X", x);
  check_same_shape("gelu_backward", "dX", dx, "X", x);
  kernels::gelu_backward<Space, Tune>(dx.flat(), x.flat(), dy.flat(), accumulate);
}

template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
void silu_backward(const Tensor<Space, E>& dx, const Tensor<Space, E>& x, const Tensor<Space, E>& dy) {
  check_tensor("silu_backward", "X", x, 0, INT_MAX);
  check_same_shape("silu_backward", "dY", dy, "X", x);
  check_same_shape("silu_backward", "dX", dx, "X", x);
  kernels::silu_backward<Space, Tune>(dx.flat(), x.flat(), dy.flat());
}

// swiglu: silu(gate) · up elementwise (the gated MLP), one pass: the bits of silu then a product. Its backward
// accumulates dgate += dY · up · silu'(gate) and dup += dY · silu(gate); an undefined dgate or dup is not wanted.
template <class Space, class Tune = kernels::Tuning<Space>>
Tensor<Space> swiglu(const Tensor<Space>& gate, const Tensor<Space>& up) {
  check_tensor("swiglu", "gate", gate, 0, INT_MAX);
  check_same_shape("swiglu", "up", up, "gate", gate);
  auto y = Tensor<Space>::uninitialized(gate.shape(), "ptk::swiglu");
  kernels::swiglu_forward<Space, Tune>(y.flat(), gate.flat(), up.flat());
  return y;
}

template <class Space, class Tune = kernels::Tuning<Space>>
void swiglu_backward(const Tensor<Space>& dgate, const Tensor<Space>& dup, const Tensor<Space>& gate,
                     const Tensor<Space>& up, const Tensor<Space>& dy) {
  check_tensor("swiglu_backward", "gate", gate, 0, INT_MAX);
  check_same_shape("swiglu_backward", "up", up, "gate", gate);
  check_same_shape("swiglu_backward", "dY", dy, "gate", gate);
  if (dgate.defined()) check_same_shape("swiglu_backward", "dgate", dgate, "gate", gate);
  if (dup.defined()) check_same_shape("swiglu_backward", "dup", dup, "gate", gate);
  kernels::swiglu_backward<Space, Tune>(dgate.defined() ? dgate.flat() : Vector<Space>(),
                                        dup.defined() ? dup.flat() : Vector<Space>(), gate.flat(), up.flat(), dy.flat());
}

}  // namespace ptk::ops
