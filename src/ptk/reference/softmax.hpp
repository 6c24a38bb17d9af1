// Shapes: X[rows,cols] -> Y[rows,cols]; when causal, X is [..., T, T] with cols == T and row r is query t = r % cols.
// Math:   Y[r,j] = exp(s_j - max_i s_i) / sum_i exp(s_i - max_i s_i), s_j = scale * X[r,j] (in double), over unmasked j (causal: j <= t).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace ptk {
namespace reference {

// Y[rows,cols] = softmax(scale * X) over the last dim, subtracting the row max (in double).
// causal: the input is [..., T, T] with cols == T; row r is query position t = r % cols and columns j > t are masked (treated as -inf).
// A row whose every (unmasked) entry is -inf, or fully masked, yields all zeros. A NaN anywhere in a row makes that whole row NaN (only that row).
//
// Special values, precisely:
//  * Masked columns (causal, j > t) are never read and output exactly 0 (except in a NaN row, see below).
//  * NaN: if any unmasked scaled value s_j = scale * X[r,j] is NaN (a NaN input, or e.g. scale == 0 with an
//    infinite input), the whole row, masked columns included (as PyTorch's masked_fill(-inf) + softmax would give),
//    is NaN. NaN in a masked column is ignored.
//  * If every unmasked s_j is -inf (or there is none), the row is all zeros.
//  * +inf is NOT special-cased: plain double arithmetic is followed, so a row whose max is +inf gets
//    exp(inf - inf) = NaN for the +inf entries, NaN for the sum, hence NaN for every unmasked entry.
template <class T>
inline void softmax_forward(T* out, const T* inp, std::int64_t rows, std::int64_t cols, float scale, bool causal) {
    if (cols <= 0) return;  // nothing to write; also avoids r % 0 below
    const double sc = static_cast<double>(scale);
    const T qnan = std::numeric_limits<T>::quiet_NaN();
    for (std::int64_t r = 0; r < rows; ++r) {
        const T* x = inp + r * cols;
        T* y = out + r * cols;
        // Unmasked columns are [0, valid).
        const std::int64_t valid = causal ? (r % cols) + 1 : cols;

        bool has_nan = false;
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < valid; ++j) {
            const double s = sc * static_cast<double>(x[j]);
            if (std::isnan(s)) has_nan = true;
            else if (s > mx) mx = s;
        }

        if (has_nan) {
            for (std::int64_t j = 0; j < cols; ++j) y[j] = qnan;
            continue;
        }
        if (mx == -std::numeric_limits<double>::infinity()) {
            for (std::int64_t j = 0; j < cols; ++j) y[j] = 0.0f;
            continue;
        }

        double sum = 0.0;
        for (std::int64_t j = 0; j < valid; ++j) {
            sum += std::exp(sc * static_cast<double>(x[j]) - mx);
        }
        for (std::int64_t j = 0; j < valid; ++j) {
            y[j] = static_cast<T>(std::exp(sc * static_cast<double>(x[j]) - mx) / sum);
        }
        for (std::int64_t j = valid; j < cols; ++j) y[j] = 0.0f;
    }
}

}  // namespace reference
}  // namespace ptk
