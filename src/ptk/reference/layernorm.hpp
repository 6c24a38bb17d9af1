// Shapes: X[rows,cols], weight[cols], bias[cols] -> Y[rows,cols], mean[rows], rstd[rows].
// Math:   mean = sum_j X/cols; var = sum_j (X-mean)^2/cols (biased, two-pass); rstd = 1/sqrt(var+eps); Y = (X-mean)*rstd*weight + bias.
#pragma once

#include <cmath>
#include <cstdint>

#include "ptk/reference/common.hpp"

namespace ptk {
namespace reference {

// Y = (X - mean) * rstd * weight + bias over the last dim; mean[rows], rstd[rows] = 1/sqrt(var + eps) with the biased (1/N) variance, as PyTorch.
// Y is computed from the double mean/rstd (not from the float values stored in mean[]/rstd[]).
// mean and rstd may be nullptr, in which case they are not stored.
template <class T>
inline void layernorm_forward(T* out, NonDeduced<T>* mean, NonDeduced<T>* rstd, const T* inp, const T* weight, const T* bias,
                              std::int64_t rows, std::int64_t cols, float eps) {
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* x = inp + r * cols;
        T* y = out + r * cols;

        double sum = 0.0;
        for (std::int64_t j = 0; j < cols; ++j) sum += static_cast<double>(x[j]);
        const double mu = sum / static_cast<double>(cols);

        double sq = 0.0;
        for (std::int64_t j = 0; j < cols; ++j) {
            const double d = static_cast<double>(x[j]) - mu;
            sq += d * d;
        }
        const double var = sq / static_cast<double>(cols);
        const double rs = 1.0 / std::sqrt(var + static_cast<double>(eps));

        for (std::int64_t j = 0; j < cols; ++j) {
            const double xhat = (static_cast<double>(x[j]) - mu) * rs;
            y[j] = static_cast<T>(xhat * static_cast<double>(weight[j]) + static_cast<double>(bias[j]));
        }
        if (mean) mean[r] = static_cast<T>(mu);
        if (rstd) rstd[r] = static_cast<T>(rs);
    }
}

}  // namespace reference
}  // namespace ptk
