// Shapes: X[n] -> Y[n], elementwise.
// Math:   Y = x * sigmoid(x) = x / (1 + exp(-x)).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace ptk {
namespace reference {

// Y = x * sigmoid(x) = x / (1 + exp(-x))
//
// Evaluated in double as x / (1 + exp(-x)), which is overflow-safe for finite x: silu(-1000) = -1000 / inf = -0,
// silu(1000) = 1000. Special values: silu(+inf) = +inf (falls out), silu(-inf) = -0 (handled explicitly;
// -inf / inf would be NaN), silu(NaN) = NaN.
template <class T>
inline void silu_forward(T* out, const T* inp, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
        const double x = static_cast<double>(inp[i]);
        double y;
        if (x == -std::numeric_limits<double>::infinity()) {
            y = -0.0;
        } else {
            y = x / (1.0 + std::exp(-x));
        }
        out[i] = static_cast<T>(y);
    }
}

}  // namespace reference
}  // namespace ptk
