// Shapes: dY, X [rows,cols]; weight[cols]; rstd[rows] (as saved by rmsnorm_forward) -> dX[rows,cols], dweight[cols] (+=).
// Math:   Y = X rstd w, rstd = (mean(X²) + eps)^(-1/2), g = dY · w:
//         dX += rstd g - X rstd³ mean_j(g X);  dweight += Σ_rows dY X rstd. Sums in double.
#pragma once

#include <cstdint>
#include <vector>

namespace ptk {
namespace reference {

// dx or dweight may be nullptr (that gradient is not wanted).
template <class T>
inline void rmsnorm_backward(T* dx, T* dweight, const T* dy, const T* inp, const T* weight, const T* rstd,
                             std::int64_t rows, std::int64_t cols) {
    std::vector<double> dw(static_cast<std::size_t>(cols), 0.0);
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* x = inp + r * cols;
        const T* gy = dy + r * cols;
        const double rs = static_cast<double>(rstd[r]);
        double sum_gx = 0.0;
        for (std::int64_t j = 0; j < cols; ++j) {
            const double xv = static_cast<double>(x[j]);
            sum_gx += static_cast<double>(gy[j]) * static_cast<double>(weight[j]) * xv;
            dw[static_cast<std::size_t>(j)] += static_cast<double>(gy[j]) * xv * rs;
        }
        const double mean_gx = sum_gx / static_cast<double>(cols);
        if (dx) {
            T* d = dx + r * cols;
            for (std::int64_t j = 0; j < cols; ++j) {
                const double g = static_cast<double>(gy[j]) * static_cast<double>(weight[j]);
                d[j] = static_cast<T>(static_cast<double>(d[j]) + rs * g - static_cast<double>(x[j]) * rs * rs * rs * mean_gx);
            }
        }
    }
    if (dweight)
        for (std::int64_t j = 0; j < cols; ++j)
            dweight[j] = static_cast<T>(static_cast<double>(dweight[j]) + dw[static_cast<std::size_t>(j)]);
}

}  // namespace reference
}  // namespace ptk
