// Shapes: logits[N,V], targets[N] (in [0, V) or ignore_index) -> loss (scalar), losses[N], lse[N];
//         backward: dloss (scalar) -> dlogits[N,V] (+=).
// Math:   lse[n] = log Σ_v exp(logits[n,v]); losses[n] = lse[n] - logits[n, targets[n]], or 0 (and lse[n] = 0) when
//         targets[n] == ignore_index; loss = Σ_n losses[n] / #counted (NaN when no row counts, as PyTorch).
//         dlogits[n,v] += dloss (softmax[n,v] - [v = targets[n]]) / #counted on counted rows; ignored rows get nothing.
//         Everything in double (the max is subtracted before exp).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace ptk {
namespace reference {

// loss, losses or lse may be nullptr. Returns the number of counted rows.
template <class T, class Id>
inline std::int64_t cross_entropy_forward(T* loss, T* losses, T* lse, const T* logits, const Id* targets, std::int64_t N,
                                          std::int64_t V, std::int64_t ignore_index) {
    double total = 0.0;
    std::int64_t counted = 0;
    for (std::int64_t n = 0; n < N; ++n) {
        const T* row = logits + n * V;
        const auto target = static_cast<std::int64_t>(targets[n]);
        if (target == ignore_index) {
            if (losses) losses[n] = T(0);
            if (lse) lse[n] = T(0);
            continue;
        }
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t v = 0; v < V; ++v) mx = std::fmax(mx, static_cast<double>(row[v]));
        double sum = 0.0;
        for (std::int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v]) - mx);
        const double l = mx + std::log(sum);
        const double ln = l - static_cast<double>(row[target]);
        if (losses) losses[n] = static_cast<T>(ln);
        if (lse) lse[n] = static_cast<T>(l);
        total += ln;
        ++counted;
    }
    if (loss) *loss = static_cast<T>(counted > 0 ? total / static_cast<double>(counted) : std::numeric_limits<double>::quiet_NaN());
    return counted;
}

// The softmax is recomputed in double from the logits (the oracle does not rely on a saved lse).
template <class T, class Id>
inline void cross_entropy_backward(T* dlogits, double dloss, const T* logits, const Id* targets, std::int64_t N,
                                   std::int64_t V, std::int64_t ignore_index) {
    std::int64_t counted = 0;
    for (std::int64_t n = 0; n < N; ++n) counted += static_cast<std::int64_t>(targets[n]) != ignore_index ? 1 : 0;
    if (counted == 0) return;
    const double w = dloss / static_cast<double>(counted);
    for (std::int64_t n = 0; n < N; ++n) {
        const auto target = static_cast<std::int64_t>(targets[n]);
        if (target == ignore_index) continue;
        const T* row = logits + n * V;
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t v = 0; v < V; ++v) mx = std::fmax(mx, static_cast<double>(row[v]));
        double sum = 0.0;
        for (std::int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v]) - mx);
        T* d = dlogits + n * V;
        for (std::int64_t v = 0; v < V; ++v) {
            const double p = std::exp(static_cast<double>(row[v]) - mx) / sum;
            d[v] = static_cast<T>(static_cast<double>(d[v]) + w * (v == target ? p - 1.0 : p));
        }
    }
}

}  // namespace reference
}  // namespace ptk
