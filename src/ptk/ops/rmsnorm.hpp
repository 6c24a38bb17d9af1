#pragma once
// rmsnorm: Y[...,N] = X * rstd * weight[N] over the last dim; rstd (X.shape[:-1]) is returned.
// rmsnorm_backward accumulates dX and dweight (+=), deterministically (no atomics).
#include "ptk/kernels/rmsnorm.hpp"
#include "ptk/ops/checks.hpp"
#include "ptk/ops/layernorm.hpp"

namespace ptk::ops {

template <class Space>
struct RmsnormOutputs {
  Tensor<Space> out, rstd;
};

template <class Space, class Tune = kernels::Tuning<Space>>
RmsnormOutputs<Space> rmsnorm(const Tensor<Space>& x, const Tensor<Space>& weight, float eps = 1e-5f) {
  check_tensor("rmsnorm", "X", x, 1, INT_MAX);
  check_feature_vector("rmsnorm", "weight", weight, x);
  RmsnormOutputs<Space> r{Tensor<Space>::uninitialized(x.shape(), "ptk::rmsnorm"),
                          Tensor<Space>::uninitialized(row_shape(x.shape()), "ptk::rmsnorm_rstd")};
  kernels::rmsnorm_forward<Space, Tune>(r.out.rows(), r.rstd.flat(), x.rows(), weight.flat(), eps);
  return r;
}

// dX (shaped as X) += and dweight ([N]) += the gradients of a loss whose gradient at Y is dY; rstd is
// the one ops::rmsnorm returned for X (one value per row, any shape).
template <class Space, class Tune = kernels::Tuning<Space>>
void rmsnorm_backward(const Tensor<Space>& dx, const Tensor<Space>& dweight, const Tensor<Space>& dy,
                      const Tensor<Space>& x, const Tensor<Space>& weight, const Tensor<Space>& rstd) {
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
