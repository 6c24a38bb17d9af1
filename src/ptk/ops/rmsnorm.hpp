#pragma once
// rmsnorm: Y[...,N] = X * rstd * weight[N] over the last dim; rstd (X.shape[:-1]) is returned.
// rmsnorm_backward accumulates dX and dweight (+=), deterministically (no atomics).
// E (f32, bf16, f16): the element type of X, Y, dY and dX; weight, rstd and dweight are fp32.
#include "ptk/kernels/rmsnorm.hpp"
#include "ptk/ops/checks.hpp"
#include "ptk/ops/layernorm.hpp"

namespace ptk::ops {

template <class Space, class E = float>
struct RmsnormOutputs {
  Tensor<Space, E> out;
  Tensor<Space> rstd;
};

template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
RmsnormOutputs<Space, E> rmsnorm(const Tensor<Space, E>& x, const Tensor<Space>& weight, float eps = 1e-5f) {
  check_tensor("rmsnorm", "X", x, 1, INT_MAX);
  check_feature_vector("rmsnorm", "weight", weight, x);
  RmsnormOutputs<Space, E> r{Tensor<Space, E>::uninitialized(x.shape(), "ptk::rmsnorm"),
                          Tensor<Space>::uninitialized(row_shape(x.shape()), "ptk::rmsnorm_rstd")};
  kernels::rmsnorm_forward<Space, Tune>(r.out.rows(), r.rstd.flat(), x.rows(), weight.flat(), eps);
  return r;
}

// dX (shaped as X) += and dweight ([N]) += the gradients of a loss whose gradient at Y is dY; rstd is
// the one ops::rmsnorm returned for X (one value per row, any shape).
template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
void rmsnorm_backward(const Tensor<Space, E>& dx, const Tensor<Space>& dweight, const Tensor<Space, E>& dy,
                      const Tensor<Space, E>& x, const Tensor<Space>& weight, const Tensor<Space>& rstd) {
  const char* op = "rmsnorm_backward";
  check_tensor(op, "X", x, 1, INT_MAX);
  check_same_shape(op, "dY", dy, "X", x);
  check_same_shape(op, "dX", dx, "X", x);
  check_feature_vector(op, "weight", weight, x);
  check_feature_vector(op, "dweight", dweight, x);
  check_row_statistic(op, "rstd", rstd, x);
  kernels::rmsnorm_backward<Space, Tune>(dx.rows(), dweight.flat(), dy.rows(), x.rows(), weight.flat(), rstd.flat());
}

}  // namespace ptk::ops
