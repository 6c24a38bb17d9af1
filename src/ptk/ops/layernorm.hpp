#pragma once
// layernorm: Y[...,N] = (X - mean) * rstd * gamma[N] + beta[N] over the last dim; mean and rstd
// (shape X.shape[:-1], or [1] for a rank-1 X) are returned for the backward pass.
#include "ptk/kernels/layernorm.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

template <class Space>
struct LayernormOutputs {
  Tensor<Space> out, mean, rstd;
};

// The shape of per-row statistics: X's leading dims.
inline Shape row_shape(const Shape& x) {
  Shape rows(x.begin(), x.end() - 1);
  if (rows.empty()) rows.push_back(1);
  return rows;
}

template <class Space>
LayernormOutputs<Space> layernorm(const Tensor<Space>& x, const Tensor<Space>& gamma, const Tensor<Space>& beta,
                                  float eps = 1e-5f) {
  check_tensor("layernorm", "X", x, 1, INT_MAX);
  check_feature_vector("layernorm", "gamma", gamma, x);
  check_feature_vector("layernorm", "beta", beta, x);
  LayernormOutputs<Space> r{Tensor<Space>(x.shape(), "ptk::layernorm"), Tensor<Space>(row_shape(x.shape())),
                            Tensor<Space>(row_shape(x.shape()))};
  kernels::layernorm_forward<Space>(r.out.rows(), r.mean.flat(), r.rstd.flat(), x.rows(), gamma.flat(), beta.flat(),
                                    eps);
  return r;
}

}  // namespace ptk::ops
