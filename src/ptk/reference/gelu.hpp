// Shapes: X[n] -> Y[n], elementwise.
// Math:   Y = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)   (GPT-2 / PyTorch approximate='tanh').
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace ptk {
namespace reference {

// Y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//
// Evaluated in double through the exact identity 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)), i.e. Y = x / (1 + exp(-2u)).
// This avoids the cancellation in 1 + tanh(u) for very negative u (the naive form returns 0 where the true value
// is a tiny nonzero float), and is overflow-safe: exp(-2u) -> inf gives -0, exp(-2u) -> 0 gives x.
// For float inputs |x| <= 3.4e38 so x^3 <= 4e115 fits in double. Special values: gelu(+inf) = +inf,
// gelu(-inf) = -0 (handled explicitly; x / inf would be NaN), gelu(NaN) = NaN.
template <class T>
inline void gelu_forward(T* out, const T* inp, std::int64_t n) {
    const double kPi = 3.14159265358979323846264338327950288;
    const double c = std::sqrt(2.0 / kPi);
    for (std::int64_t i = 0; i < n; ++i) {
        const double x = static_cast<double>(inp[i]);
        double y;
        if (x == -std::numeric_limits<double>::infinity()) {
            y = -0.0;
        } else {
            const double u = c * (x + 0.044715 * x * x * x);
            y = x / (1.0 + std::exp(-2.0 * u));
        }
        out[i] = static_cast<T>(y);
    }
}

}  // namespace reference
}  // namespace ptk
