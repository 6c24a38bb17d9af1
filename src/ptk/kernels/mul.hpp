#pragma once
// mul_forward:  out[n] = a[n] · b[n] (elementwise, the gated MLP's silu(gate) ∘ up);
// mul_backward: da[n] += dout[n] · b[n], db[n] += dout[n] · a[n] (either may be empty: not wanted).
#include <Kokkos_Core.hpp>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

template <class Space>
void mul_forward(const Vector<Space>& out, const ConstVector<Space>& a, const ConstVector<Space>& b) {
  Kokkos::parallel_for(
      "ptk::mul_forward", Kokkos::RangePolicy<Space>(0, static_cast<int>(out.extent(0))),
      KOKKOS_LAMBDA(const int i) { out(i) = a(i) * b(i); });
}

template <class Space>
void mul_backward(const Vector<Space>& da, const Vector<Space>& db, const ConstVector<Space>& dout,
                  const ConstVector<Space>& a, const ConstVector<Space>& b) {
  const bool want_a = da.extent(0) > 0, want_b = db.extent(0) > 0;
  Kokkos::parallel_for(
      "ptk::mul_backward", Kokkos::RangePolicy<Space>(0, static_cast<int>(dout.extent(0))), KOKKOS_LAMBDA(const int i) {
        if (want_a) da(i) += dout(i) * b(i);
        if (want_b) db(i) += dout(i) * a(i);
      });
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_MUL_SPACE_INSTANCES(EXT, Space) \
  EXT template void mul_forward<Space>(const Vector<Space>& out, const ConstVector<Space>& a, const ConstVector<Space>& b); \
  EXT template void mul_backward<Space>(const Vector<Space>& da, const Vector<Space>& db, const ConstVector<Space>& dout, const ConstVector<Space>& a, const ConstVector<Space>& b);
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_MUL_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
