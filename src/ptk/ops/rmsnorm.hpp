#pragma once
// rmsnorm: Y[...,N] = X * rstd * weight[N] over the last dim; rstd (X.shape[:-1]) is returned.
#include "ptk/kernels/rmsnorm.hpp"
#include "ptk/ops/checks.hpp"
#include "ptk/ops/layernorm.hpp"

namespace ptk::ops {

template <class Space>
struct RmsnormOutputs {
  Tensor<Space> out, rstd;
};

template <class Space>
RmsnormOutputs<Space> rmsnorm(const Tensor<Space>& x, const Tensor<Space>& weight, float eps = 1e-5f) {
  check_tensor("rmsnorm", "X", x, 1, INT_MAX);
  check_feature_vector("rmsnorm", "weight", weight, x);
  RmsnormOutputs<Space> r{Tensor<Space>(x.shape(), "ptk::rmsnorm"), Tensor<Space>(row_shape(x.shape()))};
  kernels::rmsnorm_forward<Space>(r.out.rows(), r.rstd.flat(), x.rows(), weight.flat(), eps);
  return r;
}

}  // namespace ptk::ops
