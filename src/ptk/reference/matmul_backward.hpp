// Shapes: as matmul_forward: dC[batch,M,N]; A[M,K] (stored [K,M] when trans_a), B[K,N] (stored [N,K] when trans_b);
//         dA and dB have their operand's stored shape (2-D when that operand was broadcast over the batch).
// Math:   d op(A) = dC · op(B)ᵀ, d op(B) = op(A)ᵀ · dC, accumulated into dA, dB (+=) in their stored layout;
//         a broadcast operand's gradient is summed over the batch. Sums in double, one rounding per element.
#pragma once

#include <cstdint>

namespace ptk {
namespace reference {

// da or db may be nullptr (that gradient is not wanted).
template <class T>
inline void matmul_backward(T* da, T* db, const T* dc, const T* a, const T* b, std::int64_t batch, std::int64_t M,
                            std::int64_t N, std::int64_t K, bool trans_a, bool trans_b, bool a_batched, bool b_batched) {
    // op(A)[m,k] and op(B)[k,n] of batch bi, read from storage.
    const auto opa = [&](std::int64_t bi, std::int64_t m, std::int64_t k) {
        const T* ab = a + (a_batched ? bi * M * K : 0);
        return static_cast<double>(trans_a ? ab[k * M + m] : ab[m * K + k]);
    };
    const auto opb = [&](std::int64_t bi, std::int64_t k, std::int64_t n) {
        const T* bb = b + (b_batched ? bi * K * N : 0);
        return static_cast<double>(trans_b ? bb[n * K + k] : bb[k * N + n]);
    };
    if (da) {
        const std::int64_t copies = a_batched ? batch : 1;
        for (std::int64_t ci = 0; ci < copies; ++ci) {
            for (std::int64_t m = 0; m < M; ++m) {
                for (std::int64_t k = 0; k < K; ++k) {
                    double acc = 0.0;
                    // A batched operand gets its own batch; a broadcast one the sum over all of them.
                    for (std::int64_t bi = a_batched ? ci : 0; bi < (a_batched ? ci + 1 : batch); ++bi)
                        for (std::int64_t n = 0; n < N; ++n)
                            acc += static_cast<double>(dc[(bi * M + m) * N + n]) * opb(bi, k, n);
                    T& dst = da[ci * M * K + (trans_a ? k * M + m : m * K + k)];
                    dst = static_cast<T>(static_cast<double>(dst) + acc);
                }
            }
        }
    }
    if (db) {
        const std::int64_t copies = b_batched ? batch : 1;
        for (std::int64_t ci = 0; ci < copies; ++ci) {
            for (std::int64_t k = 0; k < K; ++k) {
                for (std::int64_t n = 0; n < N; ++n) {
                    double acc = 0.0;
                    for (std::int64_t bi = b_batched ? ci : 0; bi < (b_batched ? ci + 1 : batch); ++bi)
                        for (std::int64_t m = 0; m < M; ++m)
                            acc += opa(bi, m, k) * static_cast<double>(dc[(bi * M + m) * N + n]);
                    T& dst = db[ci * K * N + (trans_b ? n * K + k : k * N + n)];
                    dst = static_cast<T>(static_cast<double>(dst) + acc);
                }
            }
        }
    }
}


}  // namespace reference
}  // namespace ptk
