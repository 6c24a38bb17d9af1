// Shapes: ids[N] in [0, V), table[V,C] -> out[N,C]; backward: dout[N,C] -> dtable[V,C] (+=).
// Math:   out[n,:] = table[ids[n],:];  dtable[v,:] += Σ_{n : ids[n] = v} dout[n,:] (summed in double, in increasing n).
#pragma once

#include <cstdint>
#include <vector>

namespace ptk {
namespace reference {

template <class T, class Id>
inline void embedding_forward(T* out, const Id* ids, const T* table, std::int64_t N, std::int64_t C) {
    for (std::int64_t n = 0; n < N; ++n) {
        const T* row = table + static_cast<std::int64_t>(ids[n]) * C;
        for (std::int64_t c = 0; c < C; ++c) out[n * C + c] = row[c];
    }
}

template <class T, class Id>
inline void embedding_backward(T* dtable, const T* dout, const Id* ids, std::int64_t N, std::int64_t V, std::int64_t C) {
    std::vector<double> acc(static_cast<std::size_t>(V * C), 0.0);
    std::vector<bool> touched(static_cast<std::size_t>(V), false);
    for (std::int64_t n = 0; n < N; ++n) {
        const auto v = static_cast<std::int64_t>(ids[n]);
        touched[static_cast<std::size_t>(v)] = true;
        for (std::int64_t c = 0; c < C; ++c) acc[static_cast<std::size_t>(v * C + c)] += static_cast<double>(dout[n * C + c]);
    }
    for (std::int64_t v = 0; v < V; ++v) {
        if (!touched[static_cast<std::size_t>(v)]) continue;  // untouched rows keep their bits
        for (std::int64_t c = 0; c < C; ++c)
            dtable[v * C + c] = static_cast<T>(static_cast<double>(dtable[v * C + c]) + acc[static_cast<std::size_t>(v * C + c)]);
    }
}

}  // namespace reference
}  // namespace ptk
