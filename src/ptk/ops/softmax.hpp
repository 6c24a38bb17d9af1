#pragma once
// softmax: Y[...,N] = softmax(scale * X) over the last dim; causal masks the upper triangle of the
// last two dims, which must be square. softmax_backward accumulates dX += scale · Y ∘ (dY - Σ_row Y dY).
// E (f32, bf16, f16): the element type of X, Y, dY and dX; the arithmetic is fp32, each output rounded once.
#include "ptk/kernels/softmax.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
Tensor<Space, E> softmax(const Tensor<Space, E>& x, float scale = 1.0f, bool causal = false) {
  check_tensor("softmax", "X", x, causal ? 2 : 1, INT_MAX);
  require(!causal || x.dim(-1) == x.dim(-2), "softmax: causal needs the last two dimensions square, got shape ",
          x.shape());
  auto y = Tensor<Space, E>::uninitialized(x.shape(), "ptk::softmax");
  kernels::softmax_forward<Space, Tune>(y.rows(), x.rows(), scale, causal);
  return y;
}

// dX (shaped as Y) += the gradient through Y = softmax(scale · X) of a loss whose gradient at Y is
// dY. Y is the forward's output; causal needs no argument (masked entries of Y are 0).
template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
void softmax_backward(const Tensor<Space, E>& dx, const Tensor<Space, E>& y, const Tensor<Space, E>& dy,
                      float scale = 1.0f) {
  check_tensor("softmax_backward", "Y", y, 1, INT_MAX);
  check_same_shape("softmax_backward", "dY", dy, "Y", y);
  check_same_shape("softmax_backward", "dX", dx, "Y", y);
  kernels::softmax_backward<Space, Tune>(dx.rows(), y.rows(), dy.rows(), scale);
}

}  // namespace ptk::ops
