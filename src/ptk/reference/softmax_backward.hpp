// Shapes: Y[rows,cols] (softmax_forward's output), dY[rows,cols] -> dX[rows,cols] (+=).
// Math:   Y = softmax(scale X) per row, so dX[r,j] += scale · Y[r,j] (dY[r,j] - Σ_i Y[r,i] dY[r,i]).
//         Causal masking needs no argument: masked entries have Y = 0 and so get dX = 0.
#pragma once

#include <cstdint>

namespace ptk {
namespace reference {

template <class T>
inline void softmax_backward(T* dx, const T* y, const T* dy, std::int64_t rows, std::int64_t cols, float scale) {
    const double sc = static_cast<double>(scale);
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* yr = y + r * cols;
        const T* gr = dy + r * cols;
        T* dr = dx + r * cols;
        double dot = 0.0;
        for (std::int64_t j = 0; j < cols; ++j) dot += static_cast<double>(yr[j]) * static_cast<double>(gr[j]);
        for (std::int64_t j = 0; j < cols; ++j) {
            const double g = sc * static_cast<double>(yr[j]) * (static_cast<double>(gr[j]) - dot);
            dr[j] = static_cast<T>(static_cast<double>(dr[j]) + g);
        }
    }
}

}  // namespace reference
}  // namespace ptk
