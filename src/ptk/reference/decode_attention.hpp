// Shapes: Q[B,Hq,Tq,D]; K, V caches [B,Hkv,Tmax,D] filled to L -> O[B,Hq,Tq,D], lse[B,Hq,Tq].
// Math:   query i sits at position L - Tq + i and attends keys j <= L - Tq + i of kv head h / (Hq / Hkv):
//         O[b,h,i,:] = sum_j softmax_j(scale * Q[b,h,i,:]·K[b,g,j,:]) V[b,g,j,:], lse the log of its denominator.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace ptk {
namespace reference {

// Everything in double; only O and lse are rounded to float. Positions >= L of the caches are not read.
inline void decode_attention(float* out, float* lse, const float* q, const float* k_cache, const float* v_cache,
                             std::int64_t B, std::int64_t Hq, std::int64_t Hkv, std::int64_t Tq, std::int64_t Tmax,
                             std::int64_t D, std::int64_t L, float scale) {
    const std::int64_t group = Hq / Hkv;
    std::vector<double> p(static_cast<std::size_t>(L));
    std::vector<double> acc(static_cast<std::size_t>(D));
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < Hq; ++h) {
            const std::int64_t g = h / group;
            const float* kh = k_cache + (b * Hkv + g) * Tmax * D;
            const float* vh = v_cache + (b * Hkv + g) * Tmax * D;
            for (std::int64_t i = 0; i < Tq; ++i) {
                const float* qr = q + ((b * Hq + h) * Tq + i) * D;
                const std::int64_t keys = L - Tq + i + 1;
                double mx = -std::numeric_limits<double>::infinity();
                for (std::int64_t j = 0; j < keys; ++j) {
                    double dot = 0.0;
                    for (std::int64_t d = 0; d < D; ++d) dot += static_cast<double>(qr[d]) * kh[j * D + d];
                    p[static_cast<std::size_t>(j)] = static_cast<double>(scale) * dot;
                    mx = std::fmax(mx, p[static_cast<std::size_t>(j)]);
                }
                double sum = 0.0;
                for (std::int64_t j = 0; j < keys; ++j) sum += (p[static_cast<std::size_t>(j)] = std::exp(p[static_cast<std::size_t>(j)] - mx));
                for (auto& a : acc) a = 0.0;
                for (std::int64_t j = 0; j < keys; ++j)
                    for (std::int64_t d = 0; d < D; ++d)
                        acc[static_cast<std::size_t>(d)] += p[static_cast<std::size_t>(j)] / sum * vh[j * D + d];
                float* orow = out + ((b * Hq + h) * Tq + i) * D;
                for (std::int64_t d = 0; d < D; ++d) orow[d] = static_cast<float>(acc[static_cast<std::size_t>(d)]);
                if (lse) lse[(b * Hq + h) * Tq + i] = static_cast<float>(mx + std::log(sum));
            }
        }
}

}  // namespace reference
}  // namespace ptk
