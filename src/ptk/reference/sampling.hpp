// Shapes: logits[V] (one row), u in [0, 1) -> token, probs[V].
// Math:   p_i = exp((l_i - max l) / T); keep the k largest (ties at the k-th kept), then the smallest set of largest p
//         whose mass is >= top_p of the kept mass (ties kept); token = first i with cumsum_{j<=i} kept p_j > u * Σ kept p.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace ptk {
namespace reference {

// Everything in double, by sorting. probs receives the kept distribution, normalized. temperature 0: the first
// index of the largest logit, probs one-hot.
inline int sample(double* probs, const float* logits, std::int64_t V, double temperature, std::int64_t top_k,
                  double top_p, double u) {
    const double mx = *std::max_element(logits, logits + V);
    if (temperature == 0.0) {
        const auto first = std::find(logits, logits + V, static_cast<float>(mx)) - logits;
        for (std::int64_t i = 0; i < V; ++i) probs[i] = i == first ? 1.0 : 0.0;
        return static_cast<int>(first);
    }
    std::vector<double> p(static_cast<std::size_t>(V));
    for (std::int64_t i = 0; i < V; ++i) p[static_cast<std::size_t>(i)] = std::exp((logits[i] - mx) / temperature);
    std::vector<double> sorted(p);
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    double threshold = 0.0;
    if (top_k > 0 && top_k < V) threshold = sorted[static_cast<std::size_t>(top_k - 1)];
    if (top_p < 1.0) {
        double kept = 0.0;
        for (double x : sorted) kept += x >= threshold ? x : 0.0;
        double mass = 0.0;
        for (double x : sorted) {
            if (x < threshold) break;
            mass += x;
            if (mass >= top_p * kept) {
                threshold = x;
                break;
            }
        }
    }
    double total = 0.0;
    for (auto& x : p) total += (x = x >= threshold ? x : 0.0);
    int token = -1;
    double run = 0.0;
    for (std::int64_t i = 0; i < V && token < 0; ++i) {
        run += p[static_cast<std::size_t>(i)];
        if (run > u * total && p[static_cast<std::size_t>(i)] > 0.0) token = static_cast<int>(i);
    }
    for (std::int64_t i = 0; i < V; ++i) probs[i] = p[static_cast<std::size_t>(i)] / total;
    return token;
}

}  // namespace reference
}  // namespace ptk
