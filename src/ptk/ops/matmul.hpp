#pragma once
// matmul: C = op(A) · op(B) for A[M,K] or [B,M,K] and B[K,N] or [B,K,N] (transposed storage with
// trans_a / trans_b); a rank-2 operand is broadcast over the other's batch. C is [M,N] or [B,M,N].
#include "ptk/kernels/matmul.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

using kernels::MatmulImpl;

template <class Space>
Tensor<Space> matmul(const Tensor<Space>& a, const Tensor<Space>& b, bool trans_a = false, bool trans_b = false,
                     MatmulImpl impl = MatmulImpl::portable) {
  check_tensor("matmul", "A", a, 2, 3);
  check_tensor("matmul", "B", b, 2, 3);
  const auto M = a.dim(trans_a ? -1 : -2), Ka = a.dim(trans_a ? -2 : -1);
  const auto Kb = b.dim(trans_b ? -1 : -2), N = b.dim(trans_b ? -2 : -1);
  const auto describe = [&] {
    return "A " + to_string(a.shape()) + " (trans_a=" + std::to_string(trans_a) + "), B " + to_string(b.shape()) +
           " (trans_b=" + std::to_string(trans_b) + ")";
  };
  require(Ka == Kb, "matmul: inner dimensions differ: op(A) has K=", Ka, " and op(B) has K=", Kb, " for ", describe());
  require(a.rank() == 2 || b.rank() == 2 || a.dim(0) == b.dim(0), "matmul: batch sizes differ for ", describe());
  Shape c_shape{M, N};
  if (a.rank() == 3 || b.rank() == 3) c_shape.insert(c_shape.begin(), a.rank() == 3 ? a.dim(0) : b.dim(0));
  check_output_shape("matmul", "C", c_shape);
  Tensor<Space> c(c_shape, "ptk::matmul");
  kernels::matmul_forward<Space>(c.batched_matrices(), a.batched_matrices(), b.batched_matrices(), trans_a, trans_b,
                                 impl);
  return c;
}

}  // namespace ptk::ops
