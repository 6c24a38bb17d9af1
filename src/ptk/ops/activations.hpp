#pragma once
// gelu (tanh form) and silu, elementwise over a tensor of any shape.
#include "ptk/kernels/gelu.hpp"
#include "ptk/kernels/silu.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

template <class Space>
Tensor<Space> gelu(const Tensor<Space>& x) {
  check_tensor("gelu", "X", x, 0, INT_MAX);
  Tensor<Space> y(x.shape(), "ptk::gelu");
  kernels::gelu_forward<Space>(y.flat(), x.flat());
  return y;
}

template <class Space>
Tensor<Space> silu(const Tensor<Space>& x) {
  check_tensor("silu", "X", x, 0, INT_MAX);
  Tensor<Space> y(x.shape(), "ptk::silu");
  kernels::silu_forward<Space>(y.flat(), x.flat());
  return y;
}

}  // namespace ptk::ops
