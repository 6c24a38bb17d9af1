// Shapes: Q[B,H,T,D], K[B,H,S,D], V[B,H,S,D], dO[B,H,T,D], lse[B,H,T] -> dQ, dK, dV (+=), shaped as Q, K, V.
// Math:   s[t,j] = scale Q[t]·K[j] (causal: j <= t), lse[t] = log Σ_j exp(s[t,j]) (natural log of the scaled scores),
//         P[t,j] = exp(s[t,j] - lse[t]); dV[j] += Σ_t P[t,j] dO[t]; dP[t,j] = dO[t]·V[j];
//         dS[t,j] = P[t,j] (dP[t,j] - Σ_i P[t,i] dP[t,i]); dQ[t] += scale Σ_j dS[t,j] K[j]; dK[j] += scale Σ_t dS[t,j] Q[t].
//         P is rebuilt from the saved lse (as a fused kernel does); a row with lse = -inf (nothing attended) has P = 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace ptk {
namespace reference {

// The attention forward of attention.hpp, for any element type, also writing lse[B,H,T] (may be nullptr):
// the saved state attention_backward needs. Finite inputs only (no NaN/inf special-casing).
template <class T>
inline void attention_forward_lse(T* out, T* lse, const T* q, const T* k, const T* v, std::int64_t B, std::int64_t H,
                                  std::int64_t Tq, std::int64_t S, std::int64_t D, float scale, bool causal) {
    const double sc = static_cast<double>(scale);
    std::vector<double> p(static_cast<std::size_t>(S > 0 ? S : 0)), acc(static_cast<std::size_t>(D > 0 ? D : 0));
    for (std::int64_t bh = 0; bh < B * H; ++bh) {
        for (std::int64_t t = 0; t < Tq; ++t) {
            const T* qr = q + (bh * Tq + t) * D;
            const std::int64_t valid = causal ? (t + 1 < S ? t + 1 : S) : S;
            double mx = -std::numeric_limits<double>::infinity();
            for (std::int64_t j = 0; j < valid; ++j) {
                const T* kr = k + (bh * S + j) * D;
                double dot = 0.0;
                for (std::int64_t d = 0; d < D; ++d) dot += static_cast<double>(qr[d]) * static_cast<double>(kr[d]);
                p[static_cast<std::size_t>(j)] = sc * dot;
                if (sc * dot > mx) mx = sc * dot;
            }
            double sum = 0.0;
            for (std::int64_t j = 0; j < valid; ++j) sum += std::exp(p[static_cast<std::size_t>(j)] - mx);
            for (std::int64_t d = 0; d < D; ++d) acc[static_cast<std::size_t>(d)] = 0.0;
            for (std::int64_t j = 0; j < valid; ++j) {
                const double w = std::exp(p[static_cast<std::size_t>(j)] - mx) / sum;
                const T* vr = v + (bh * S + j) * D;
                for (std::int64_t d = 0; d < D; ++d) acc[static_cast<std::size_t>(d)] += w * static_cast<double>(vr[d]);
            }
            T* orow = out + (bh * Tq + t) * D;
            for (std::int64_t d = 0; d < D; ++d) orow[d] = valid > 0 ? static_cast<T>(acc[static_cast<std::size_t>(d)]) : T(0);
            if (lse) lse[bh * Tq + t] = static_cast<T>(valid > 0 ? mx + std::log(sum) : -std::numeric_limits<double>::infinity());
        }
    }
}

// dq, dk or dv may be nullptr (that gradient is not wanted).
template <class T>
inline void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const T* lse,
                               std::int64_t B, std::int64_t H, std::int64_t Tq, std::int64_t S, std::int64_t D, float scale,
                               bool causal) {
    const double sc = static_cast<double>(scale);
    const auto n_s = static_cast<std::size_t>(S > 0 ? S : 0), n_d = static_cast<std::size_t>(D > 0 ? D : 0);
    for (std::int64_t bh = 0; bh < B * H; ++bh) {
        // Per-(b,h) accumulators in double, added once into dK, dV.
        std::vector<double> gk(n_s * n_d, 0.0), gv(n_s * n_d, 0.0), p(n_s), dp(n_s);
        for (std::int64_t t = 0; t < Tq; ++t) {
            const T* qr = q + (bh * Tq + t) * D;
            const T* gr = dout + (bh * Tq + t) * D;
            const double l = static_cast<double>(lse[bh * Tq + t]);
            if (l == -std::numeric_limits<double>::infinity()) continue;
            const std::int64_t valid = causal ? (t + 1 < S ? t + 1 : S) : S;
            double pdp = 0.0;
            for (std::int64_t j = 0; j < valid; ++j) {
                const T* kr = k + (bh * S + j) * D;
                const T* vr = v + (bh * S + j) * D;
                double dot = 0.0, dov = 0.0;
                for (std::int64_t d = 0; d < D; ++d) {
                    dot += static_cast<double>(qr[d]) * static_cast<double>(kr[d]);
                    dov += static_cast<double>(gr[d]) * static_cast<double>(vr[d]);
                }
                const auto js = static_cast<std::size_t>(j);
                p[js] = std::exp(sc * dot - l);
                dp[js] = dov;
                pdp += p[js] * dov;
            }
            std::vector<double> gq(n_d, 0.0);
            for (std::int64_t j = 0; j < valid; ++j) {
                const auto js = static_cast<std::size_t>(j);
                const double ds = p[js] * (dp[js] - pdp);
                const T* kr = k + (bh * S + j) * D;
                for (std::int64_t d = 0; d < D; ++d) {
                    const auto ds_ = static_cast<std::size_t>(d);
                    gv[js * n_d + ds_] += p[js] * static_cast<double>(gr[d]);
                    gk[js * n_d + ds_] += sc * ds * static_cast<double>(qr[d]);
                    gq[ds_] += sc * ds * static_cast<double>(kr[d]);
                }
            }
            if (dq) {
                T* d = dq + (bh * Tq + t) * D;
                for (std::int64_t i = 0; i < D; ++i) d[i] = static_cast<T>(static_cast<double>(d[i]) + gq[static_cast<std::size_t>(i)]);
            }
        }
        for (std::size_t i = 0; i < n_s * n_d; ++i) {
            const std::int64_t at = bh * S * D + static_cast<std::int64_t>(i);
            if (dk) dk[at] = static_cast<T>(static_cast<double>(dk[at]) + gk[i]);
            if (dv) dv[at] = static_cast<T>(static_cast<double>(dv[at]) + gv[i]);
        }
    }
}

}  // namespace reference
}  // namespace ptk
