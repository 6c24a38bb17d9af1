#pragma once
// matmul: C = op(A) · op(B) for A[M,K] or [B,M,K] and B[K,N] or [B,K,N] (transposed storage with
// trans_a / trans_b); a rank-2 operand is broadcast over the other's batch. C is [M,N] or [B,M,N].
// matmul_accumulate: C = alpha · op(A) · op(B) + beta · C in place (defaults: C += op(A) · op(B)).
// matmul_backward: dA += dC · op(B)ᵀ and dB += op(A)ᵀ · dC, each in its operand's stored layout; a rank-2
// operand used against a rank-3 one gets its gradient summed over the batch.
// matmul and matmul_accumulate take A and B stored as f32, or B as bf16/f16 (a stored weight), or both as bf16 or
// both as f16 (kernels/matmul_stored.hpp); C and the accumulation are f32. The backward is f32.
#include "ptk/kernels/matmul.hpp"
#include "ptk/kernels/matmul_stored.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

using kernels::MatmulImpl;

namespace detail {

// Checks A and B (and their agreement) and returns C's shape.
template <class Space, class EA = float, class EB = float>
Shape matmul_shape(const char* op, const Tensor<Space, EA>& a, const Tensor<Space, EB>& b, bool trans_a, bool trans_b) {
  check_tensor(op, "A", a, 2, 3);
  check_tensor(op, "B", b, 2, 3);
  const auto M = a.dim(trans_a ? -1 : -2), Ka = a.dim(trans_a ? -2 : -1);
  const auto Kb = b.dim(trans_b ? -1 : -2), N = b.dim(trans_b ? -2 : -1);
  const auto describe = lazy([&] {
    return "A " + to_string(a.shape()) + " (trans_a=" + std::to_string(trans_a) + "), B " + to_string(b.shape()) +
           " (trans_b=" + std::to_string(trans_b) + ")";
  });
  require(Ka == Kb, op, ": inner dimensions differ: op(A) has K=", Ka, " and op(B) has K=", Kb, " for ", describe);
  require(a.rank() == 2 || b.rank() == 2 || a.dim(0) == b.dim(0), op, ": batch sizes differ for ", describe);
  Shape c_shape{M, N};
  if (a.rank() == 3 || b.rank() == 3) c_shape.insert(c_shape.begin(), a.rank() == 3 ? a.dim(0) : b.dim(0));
  check_output_shape(op, "C", c_shape);
  return c_shape;
}

}  // namespace detail

// The element type pairs the GEMM is built for (kernels/matmul_stored.hpp).
template <class EA, class EB>
inline constexpr bool gemm_pair_v = (std::is_same_v<EA, float> && Element<EB>::block == 1) ||
                                    (std::is_same_v<EA, EB> && Element<EA>::block == 1);

template <class Space, class Tune = kernels::Tuning<Space>, class EA = float, class EB = float>
Tensor<Space> matmul(const Tensor<Space, EA>& a, const Tensor<Space, EB>& b, bool trans_a = false, bool trans_b = false,
                     MatmulImpl impl = MatmulImpl::portable) {
  static_assert(gemm_pair_v<EA, EB>, "matmul: A and B are f32, B alone bf16 or f16, or both bf16 or both f16");
  auto c = Tensor<Space>::uninitialized(detail::matmul_shape("matmul", a, b, trans_a, trans_b), "ptk::matmul");
  kernels::matmul_forward<Space, Tune, EA, EB>(c.batched_matrices(), a.batched_matrices(), b.batched_matrices(), trans_a,
                                               trans_b, 1.0f, 0.0f, impl);
  return c;
}

// In place: C = alpha · op(A) · op(B) + beta · C, C shaped as matmul(A, B) would return it. The
// defaults accumulate (C += op(A) · op(B)), as a backward pass adds into a gradient.
template <class Space, class Tune = kernels::Tuning<Space>, class EA = float, class EB = float>
void matmul_accumulate(const Tensor<Space>& c, const Tensor<Space, EA>& a, const Tensor<Space, EB>& b,
                       bool trans_a = false, bool trans_b = false, float alpha = 1.0f, float beta = 1.0f,
                       MatmulImpl impl = MatmulImpl::portable) {
  static_assert(gemm_pair_v<EA, EB>, "matmul_accumulate: A and B are f32, B alone bf16 or f16, or both bf16 or both f16");
  const Shape c_shape = detail::matmul_shape("matmul_accumulate", a, b, trans_a, trans_b);
  check_tensor("matmul_accumulate", "C", c, 2, 3);
  require(c.shape() == c_shape, "matmul_accumulate: C has shape ", c.shape(), ", op(A) · op(B) has ",
          c_shape);
  kernels::matmul_forward<Space, Tune, EA, EB>(c.batched_matrices(), a.batched_matrices(), b.batched_matrices(), trans_a,
                                               trans_b, alpha, beta, impl);
}

// Gradients of C = op(A) · op(B), accumulated: dA (shaped as A) += the gradient of A, dB (shaped as B) +=
// the gradient of B, for dC shaped as C. An undefined (default-constructed) dA or dB is not computed.
// Deterministic: every product is the portable GEMM with beta = 1 (ptk::kernels::matmul_backward).
template <class Space, class Tune = kernels::Tuning<Space>>
void matmul_backward(const Tensor<Space>& da, const Tensor<Space>& db, const Tensor<Space>& dc, const Tensor<Space>& a,
                     const Tensor<Space>& b, bool trans_a = false, bool trans_b = false) {
  const Shape c_shape = detail::matmul_shape("matmul_backward", a, b, trans_a, trans_b);
  check_tensor("matmul_backward", "dC", dc, 2, 3);
  require(dc.shape() == c_shape, "matmul_backward: dC has shape ", dc.shape(), ", op(A) · op(B) has ",
          c_shape);
  if (da.defined())
    require(da.shape() == a.shape(), "matmul_backward: dA has shape ", da.shape(), " but A has shape ",
            a.shape());
  if (db.defined())
    require(db.shape() == b.shape(), "matmul_backward: dB has shape ", db.shape(), " but B has shape ",
            b.shape());
  kernels::matmul_backward<Space, Tune>(da.defined() ? da.batched_matrices() : Tensor3<Space>(),
                                  db.defined() ? db.batched_matrices() : Tensor3<Space>(), dc.batched_matrices(),
                                  a.batched_matrices(), b.batched_matrices(), trans_a, trans_b);
}

}  // namespace ptk::ops
