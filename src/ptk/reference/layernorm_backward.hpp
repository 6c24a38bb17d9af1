// Shapes: dY, X [rows,cols]; gamma[cols]; mean, rstd [rows] (as saved by layernorm_forward)
//         -> dX[rows,cols], dgamma[cols], dbeta[cols], all accumulated (+=).
// Math:   x̂ = (x - mean) rstd, g = dY · gamma;  dX += rstd (g - mean_j(g) - x̂ mean_j(g x̂));
//         dgamma += Σ_rows dY x̂;  dbeta += Σ_rows dY. Sums in double.
#pragma once

#include <cstdint>
#include <vector>

namespace ptk {
namespace reference {

// dx, dgamma or dbeta may be nullptr (that gradient is not wanted).
template <class T>
inline void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* inp, const T* gamma, const T* mean,
                               const T* rstd, std::int64_t rows, std::int64_t cols) {
    std::vector<double> dg(static_cast<std::size_t>(cols), 0.0), db(static_cast<std::size_t>(cols), 0.0);
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* x = inp + r * cols;
        const T* gy = dy + r * cols;
        const double mu = static_cast<double>(mean[r]), rs = static_cast<double>(rstd[r]);
        double sum_g = 0.0, sum_gx = 0.0;
        for (std::int64_t j = 0; j < cols; ++j) {
            const double xhat = (static_cast<double>(x[j]) - mu) * rs;
            const double g = static_cast<double>(gy[j]) * static_cast<double>(gamma[j]);
            sum_g += g;
            sum_gx += g * xhat;
            dg[static_cast<std::size_t>(j)] += static_cast<double>(gy[j]) * xhat;
            db[static_cast<std::size_t>(j)] += static_cast<double>(gy[j]);
        }
        const double mean_g = sum_g / static_cast<double>(cols), mean_gx = sum_gx / static_cast<double>(cols);
        if (dx) {
            T* d = dx + r * cols;
            for (std::int64_t j = 0; j < cols; ++j) {
                const double xhat = (static_cast<double>(x[j]) - mu) * rs;
                const double g = static_cast<double>(gy[j]) * static_cast<double>(gamma[j]);
                d[j] = static_cast<T>(static_cast<double>(d[j]) + rs * (g - mean_g - xhat * mean_gx));
            }
        }
    }
    for (std::int64_t j = 0; j < cols; ++j) {
        if (dgamma) dgamma[j] = static_cast<T>(static_cast<double>(dgamma[j]) + dg[static_cast<std::size_t>(j)]);
        if (dbeta) dbeta[j] = static_cast<T>(static_cast<double>(dbeta[j]) + db[static_cast<std::size_t>(j)]);
    }
}

}  // namespace reference
}  // namespace ptk
