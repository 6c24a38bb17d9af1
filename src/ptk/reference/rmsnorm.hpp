// Shapes: X[rows,cols], weight[cols] -> Y[rows,cols], rstd[rows].
// Math:   rstd = 1/sqrt(sum_j X^2/cols + eps); Y = X * rstd * weight.
#pragma once

#include <cmath>
#include <cstdint>

#include "ptk/reference/common.hpp"

namespace ptk {
namespace reference {

// Y = X * rstd * weight, rstd[rows] = 1/sqrt(mean(X^2) + eps) over the last dim.
// Y is computed from the double rstd (not from the float value stored in rstd[]). rstd may be nullptr (not stored).
template <class T>
inline void rmsnorm_forward(T* out, NonDeduced<T>* rstd, const T* inp, const T* weight, std::int64_t rows, std::int64_t cols,
                            float eps) {
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* x = inp + r * cols;
        T* y = out + r * cols;

        double sq = 0.0;
        for (std::int64_t j = 0; j < cols; ++j) {
            const double v = static_cast<double>(x[j]);
            sq += v * v;
        }
        const double rs = 1.0 / std::sqrt(sq / static_cast<double>(cols) + static_cast<double>(eps));

        for (std::int64_t j = 0; j < cols; ++j) {
            y[j] = static_cast<T>(static_cast<double>(x[j]) * rs * static_cast<double>(weight[j]));
        }
        if (rstd) rstd[r] = static_cast<T>(rs);
    }
}

}  // namespace reference
}  // namespace ptk
