#pragma once
// attention_forward: out[B,H,T,D] = att · v with att[B,H,T,S] = softmax(scale · q kᵀ, causal),
// q[B,H,T,D], k[B,H,S,D], v[B,H,S,D]; att is saved for the backward pass. Causal needs T == S.
#include <Kokkos_Core.hpp>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/matmul.hpp"
#include "ptk/kernels/softmax.hpp"

namespace ptk::kernels {

// Composed from the batched matmul and the softmax kernels over (B*H) independent heads; the
// Views are [B*H, T, ·] reshapes of the contiguous [B,H,T,·] buffers.
template <class Space>
void attention_forward(const Tensor3<Space>& out, const Tensor3<Space>& att, const ConstTensor3<Space>& q,
                       const ConstTensor3<Space>& k, const ConstTensor3<Space>& v, float scale, bool causal,
                       MatmulImpl impl = MatmulImpl::portable) {
  matmul_forward<Space>(att, q, k, false, true, impl);
  const Matrix<Space> att_rows(att.data(), att.extent(0) * att.extent(1), att.extent(2));
  softmax_forward<Space>(att_rows, att_rows, scale, causal);
  matmul_forward<Space>(out, att, v, false, false, impl);
}

}  // namespace ptk::kernels
