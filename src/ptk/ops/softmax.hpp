#pragma once
// softmax: Y[...,N] = softmax(scale * X) over the last dim; causal masks the upper triangle of the
// last two dims, which must be square.
#include "ptk/kernels/softmax.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

template <class Space>
Tensor<Space> softmax(const Tensor<Space>& x, float scale = 1.0f, bool causal = false) {
  check_tensor("softmax", "X", x, causal ? 2 : 1, INT_MAX);
  require(!causal || x.dim(-1) == x.dim(-2), "softmax: causal needs the last two dimensions square, got shape ",
          to_string(x.shape()));
  Tensor<Space> y(x.shape(), "ptk::softmax");
  kernels::softmax_forward<Space>(y.rows(), x.rows(), scale, causal);
  return y;
}

}  // namespace ptk::ops
