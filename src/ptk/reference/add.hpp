// Shapes: A, B, Y [n] (residual add); X, Y [rows, cols], bias [cols] (a Linear layer's bias).
// Math:   Y = A + B, dA += dY, dB += dY;  Y = X + bias (per row), dbias += Σ_rows dY. Sums in double.
#pragma once

#include <cstdint>
#include <vector>

namespace ptk {
namespace reference {

// Residual add Y = A + B (same shape): dA += dY, dB += dY. Either may be nullptr.
template <class T>
inline void add_backward(T* da, T* db, const T* dy, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
        if (da) da[i] = static_cast<T>(static_cast<double>(da[i]) + static_cast<double>(dy[i]));
        if (db) db[i] = static_cast<T>(static_cast<double>(db[i]) + static_cast<double>(dy[i]));
    }
}

// Residual add forward, for completeness (and the gradient check): Y = A + B.
template <class T>
inline void add_forward(T* y, const T* a, const T* b, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(static_cast<double>(a[i]) + static_cast<double>(b[i]));
}

template <class T>
inline void bias_forward(T* y, const T* x, const T* bias, std::int64_t rows, std::int64_t cols) {
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            y[r * cols + c] = static_cast<T>(static_cast<double>(x[r * cols + c]) + static_cast<double>(bias[c]));
}

template <class T>
inline void bias_backward(T* dbias, const T* dy, std::int64_t rows, std::int64_t cols) {
    std::vector<double> sum(static_cast<std::size_t>(cols), 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) sum[static_cast<std::size_t>(c)] += static_cast<double>(dy[r * cols + c]);
    for (std::int64_t c = 0; c < cols; ++c)
        dbias[c] = static_cast<T>(static_cast<double>(dbias[c]) + sum[static_cast<std::size_t>(c)]);
}

}  // namespace reference
}  // namespace ptk
