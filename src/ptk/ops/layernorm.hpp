#pragma once
// layernorm: Y[...,N] = (X - mean) * rstd * gamma[N] + beta[N] over the last dim; mean and rstd
// (shape X.shape[:-1], or [1] for a rank-1 X) are returned for the backward pass.
// layernorm_backward accumulates dX, dgamma and dbeta (+=), deterministically (no atomics).
// E (f32, bf16, f16): the element type of X, Y, dY and dX; gamma, beta, the statistics and their gradients are fp32.
#include "ptk/kernels/layernorm.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

template <class Space, class E = float>
struct LayernormOutputs {
  Tensor<Space, E> out;
  Tensor<Space> mean, rstd;
};

// The shape of per-row statistics: X's leading dims.
inline Shape row_shape(const Shape& x) {
  Shape rows(x.begin(), x.end() - 1);
  if (rows.empty()) rows.push_back(1);
  return rows;
}

template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
LayernormOutputs<Space, E> layernorm(const Tensor<Space, E>& x, const Tensor<Space>& gamma, const Tensor<Space>& beta,
                                     float eps = 1e-5f) {
  check_tensor("layernorm", "X", x, 1, INT_MAX);
  check_feature_vector("layernorm", "gamma", gamma, x);
  check_feature_vector("layernorm", "beta", beta, x);
  LayernormOutputs<Space, E> r{Tensor<Space, E>::uninitialized(x.shape(), "ptk::layernorm"),
                            Tensor<Space>::uninitialized(row_shape(x.shape()), "ptk::layernorm_mean"),
                            Tensor<Space>::uninitialized(row_shape(x.shape()), "ptk::layernorm_rstd")};
  kernels::layernorm_forward<Space, Tune>(r.out.rows(), r.mean.flat(), r.rstd.flat(), x.rows(), gamma.flat(), beta.flat(),
                                    eps);
  return r;
}

// dX (shaped as X) += and dgamma, dbeta ([N]) += the gradients of a loss whose gradient at Y is dY;
// mean and rstd are the ones ops::layernorm returned for X (one value per row, any shape).
template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
void layernorm_backward(const Tensor<Space, E>& dx, const Tensor<Space>& dgamma, const Tensor<Space>& dbeta,
                        const Tensor<Space, E>& dy, const Tensor<Space, E>& x, const Tensor<Space>& gamma,
                        const Tensor<Space>& mean, const Tensor<Space>& rstd) {
  const char* op = "layernorm_backward";
  check_tensor(op, "X", x, 1, INT_MAX);
  check_same_shape(op, "dY", dy, "X", x);
  check_same_shape(op, "dX", dx, "X", x);
  check_feature_vector(op, "gamma", gamma, x);
  check_feature_vector(op, "dgamma", dgamma, x);
  check_feature_vector(op, "dbeta", dbeta, x);
  check_row_statistic(op, "mean", mean, x);
  check_row_statistic(op, "rstd", rstd, x);
  kernels::layernorm_backward<Space, Tune>(dx.rows(), dgamma.flat(), dbeta.flat(), dy.rows(), x.rows(), gamma.flat(),
                                     mean.flat(), rstd.flat());
}

}  // namespace ptk::ops
