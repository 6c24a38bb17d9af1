#pragma once
// adamw_update: g = grad·grad_scale; m = β1 m + (1-β1) g; v = β2 v + (1-β2) g²;
//               param -= lr (m / c1 / (sqrt(v / c2) + eps) + weight_decay · param), c1, c2 the bias corrections.
// (The global gradient norm for clipping is kernels::dot(g, g), add.hpp.)
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"

namespace ptk::kernels {

struct AdamwStep {
  float lr, beta1, beta2, eps, weight_decay;
  float correction1, correction2;  // 1 - β1^t, 1 - β2^t
  float grad_scale;                // gradient clipping: min(1, max_norm / norm)
};

template <class Space>
void adamw_update(const Vector<Space>& param, const Vector<Space>& m, const Vector<Space>& v,
                  const ConstVector<Space>& grad, const AdamwStep& s) {
  Kokkos::parallel_for(
      "ptk::adamw_update", Kokkos::RangePolicy<Space>(0, static_cast<int>(param.extent(0))), KOKKOS_LAMBDA(const int i) {
        const float g = grad(i) * s.grad_scale;
        const float mi = s.beta1 * m(i) + (1.0f - s.beta1) * g;
        const float vi = s.beta2 * v(i) + (1.0f - s.beta2) * g * g;
        m(i) = mi;
        v(i) = vi;
        const float update = (mi / s.correction1) / (compat::sqrt(vi / s.correction2) + s.eps);
        param(i) -= s.lr * (update + s.weight_decay * param(i));
      });
}

}  // namespace ptk::kernels
