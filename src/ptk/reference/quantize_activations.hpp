// Shapes: X[rows,K] -> X̂[rows,K], K a multiple of 32 (blocks of 32 along each row).
// Math:   per block, d = max|x| / 127 (in float), q = round(x / d) (x / d in float, halves away from zero, within
//         ±127), x̂ = q · d in double (exact); a block of zeros gives zeros. What the decode matmul multiplies W's
//         integers by for q8_0 and q4_0 weights (llama.cpp's q8 activations with a float scale).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ptk {
namespace reference {

inline std::vector<double> quantize_activations(const float* x, std::int64_t rows, std::int64_t K) {
    std::vector<double> out(static_cast<std::size_t>(rows * K));
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t k0 = 0; k0 < K; k0 += 32) {
            const float* b = x + r * K + k0;
            float amax = 0.0f;
            for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(b[i]));
            const float d = amax / 127.0f;
            for (int i = 0; i < 32; ++i) {
                const double q = d > 0.0f ? std::clamp<double>(std::round(b[i] / d), -127.0, 127.0) : 0.0;
                out[static_cast<std::size_t>(r * K + k0 + i)] = q * static_cast<double>(d);
            }
        }
    return out;
}

}  // namespace reference
}  // namespace ptk
