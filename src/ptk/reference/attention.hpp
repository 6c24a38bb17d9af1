// Shapes: Q[B,H,T,D], K[B,H,S,D], V[B,H,S,D] -> O[B,H,T,D], lse[B,H,T]; causal requires T == S.
// Math:   O[b,h,t,:] = sum_j P[t,j] V[b,h,j,:], P[t,:] = softmax_j(scale * Q[b,h,t,:]·K[b,h,j,:]) over j (causal: j <= t);
//         lse[b,h,t] = log sum_j exp(scale * Q[b,h,t,:]·K[b,h,j,:]) over the same j.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace ptk {
namespace reference {

// O[B,H,T,D] = softmax(scale · Q Kᵀ, causal) V, per (batch, head); Q[B,H,T,D], K[B,H,S,D], V[B,H,S,D].
// causal requires T == S: query t attends to keys j <= t.
//
// Everything (scores, max, exp, normalisation, weighted sum) is in double; only O is rounded to float.
// Special values mirror softmax_forward: if any attended score is NaN the whole output row O[b,h,t,:] is NaN;
// if every attended score is -inf (or S == 0) the output row is 0; +inf is not special-cased (double arithmetic
// is followed). NaN/inf in V propagate through the weighted sum as double arithmetic dictates (0 * NaN = NaN).
// lse (may be null) is NaN for a NaN row, -inf for a row whose attended scores are all -inf, else max + log(sum of exp(s - max)).
inline void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, std::int64_t B, std::int64_t H,
                              std::int64_t T, std::int64_t S, std::int64_t D, float scale, bool causal) {
    const double sc = static_cast<double>(scale);
    const float qnan = std::numeric_limits<float>::quiet_NaN();
    std::vector<double> p(static_cast<std::size_t>(S > 0 ? S : 0));
    std::vector<double> acc(static_cast<std::size_t>(D > 0 ? D : 0));

    for (std::int64_t bh = 0; bh < B * H; ++bh) {
        const float* qb = q + bh * T * D;
        const float* kb = k + bh * S * D;
        const float* vb = v + bh * S * D;
        float* ob = out + bh * T * D;

        for (std::int64_t t = 0; t < T; ++t) {
            const float* qr = qb + t * D;
            float* orow = ob + t * D;
            // Attended keys are [0, valid).
            const std::int64_t valid = causal ? (t + 1 < S ? t + 1 : S) : S;

            bool has_nan = false;
            double mx = -std::numeric_limits<double>::infinity();
            for (std::int64_t j = 0; j < valid; ++j) {
                const float* kr = kb + j * D;
                double dot = 0.0;
                for (std::int64_t d = 0; d < D; ++d) dot += static_cast<double>(qr[d]) * static_cast<double>(kr[d]);
                const double s = sc * dot;
                p[static_cast<std::size_t>(j)] = s;
                if (std::isnan(s)) has_nan = true;
                else if (s > mx) mx = s;
            }

            float* lrow = lse ? lse + bh * T + t : nullptr;
            if (has_nan) {
                for (std::int64_t d = 0; d < D; ++d) orow[d] = qnan;
                if (lrow) *lrow = qnan;
                continue;
            }
            if (mx == -std::numeric_limits<double>::infinity()) {
                for (std::int64_t d = 0; d < D; ++d) orow[d] = 0.0f;
                if (lrow) *lrow = -std::numeric_limits<float>::infinity();
                continue;
            }

            double sum = 0.0;
            for (std::int64_t j = 0; j < valid; ++j) {
                const double e = std::exp(p[static_cast<std::size_t>(j)] - mx);
                p[static_cast<std::size_t>(j)] = e;
                sum += e;
            }
            if (lrow) *lrow = static_cast<float>(mx + std::log(sum));

            for (std::int64_t d = 0; d < D; ++d) acc[static_cast<std::size_t>(d)] = 0.0;
            for (std::int64_t j = 0; j < valid; ++j) {
                const double w = p[static_cast<std::size_t>(j)] / sum;
                const float* vr = vb + j * D;
                for (std::int64_t d = 0; d < D; ++d) acc[static_cast<std::size_t>(d)] += w * static_cast<double>(vr[d]);
            }
            for (std::int64_t d = 0; d < D; ++d) orow[d] = static_cast<float>(acc[static_cast<std::size_t>(d)]);
        }
    }
}

}  // namespace reference
}  // namespace ptk
