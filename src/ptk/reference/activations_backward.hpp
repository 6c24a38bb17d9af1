// Shapes: X[n], dY[n] -> dX[n] (+=), elementwise.
// Math:   gelu (tanh form): Y = x s, s = σ(2u) = 1/(1 + exp(-2u)), u = c (x + 0.044715 x³), c = sqrt(2/π);
//           dY/dx = s + x · 2u' · s (1 - s), u' = c (1 + 3·0.044715 x²).
//         silu: Y = x σ(x);  dY/dx = σ(x) (1 + x (1 - σ(x))).
//         σ and 1 - σ are formed as 1/(1+e) and e/(1+e) with e = exp(-z), so neither cancels; e = inf gives σ = 0, 1 - σ = 1.
#pragma once

#include <cmath>
#include <cstdint>

namespace ptk {
namespace reference {

namespace detail {
// σ(z) and 1 - σ(z), both without cancellation.
inline void sigmoid_pair(double z, double& s, double& one_minus_s) {
    const double e = std::exp(-z);
    if (std::isinf(e)) {
        s = 0.0;
        one_minus_s = 1.0;
        return;
    }
    s = 1.0 / (1.0 + e);
    one_minus_s = e / (1.0 + e);
}
}  // namespace detail

template <class T>
inline void gelu_backward(T* dx, const T* inp, const T* dy, std::int64_t n) {
    const double kPi = 3.14159265358979323846264338327950288;
    const double c = std::sqrt(2.0 / kPi);
    for (std::int64_t i = 0; i < n; ++i) {
        const double x = static_cast<double>(inp[i]);
        const double u = c * (x + 0.044715 * x * x * x);
        const double du = c * (1.0 + 3.0 * 0.044715 * x * x);
        double s, s1;
        detail::sigmoid_pair(2.0 * u, s, s1);
        const double d = s + x * 2.0 * du * s * s1;
        dx[i] = static_cast<T>(static_cast<double>(dx[i]) + d * static_cast<double>(dy[i]));
    }
}

template <class T>
inline void silu_backward(T* dx, const T* inp, const T* dy, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
        const double x = static_cast<double>(inp[i]);
        double s, s1;
        detail::sigmoid_pair(x, s, s1);
        const double d = s * (1.0 + x * s1);
        dx[i] = static_cast<T>(static_cast<double>(dx[i]) + d * static_cast<double>(dy[i]));
    }
}

}  // namespace reference
}  // namespace ptk
