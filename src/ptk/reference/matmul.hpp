// Shapes: C[batch,M,N]; A[M,K] (stored [K,M] when trans_a), B[K,N] (stored [N,K] when trans_b); a 2-D operand (not batched) is broadcast over batch.
// Math:   C[b,m,n] = sum_k op(A)[b,m,k] * op(B)[b,k,n], accumulated in double, rounded to float once on store.
#pragma once

#include <cstdint>

namespace ptk {
namespace reference {

// C[batch,M,N] = op(A) · op(B); op(A) is A[M,K] (A stored as [K,M] when trans_a), op(B) is B[K,N] (stored [N,K] when trans_b).
// a_batched/b_batched false means that operand is 2-D and broadcast over the batch.
template <class T>
inline void matmul_forward(T* c, const T* a, const T* b, std::int64_t batch, std::int64_t M, std::int64_t N,
                           std::int64_t K, bool trans_a, bool trans_b, bool a_batched, bool b_batched) {
    for (std::int64_t bi = 0; bi < batch; ++bi) {
        const T* ab = a + (a_batched ? bi * M * K : 0);
        const T* bb = b + (b_batched ? bi * K * N : 0);
        T* cb = c + bi * M * N;
        for (std::int64_t m = 0; m < M; ++m) {
            for (std::int64_t n = 0; n < N; ++n) {
                double acc = 0.0;
                for (std::int64_t k = 0; k < K; ++k) {
                    // op(A)[m,k]: A[m,k] at m*K+k, or A stored [K,M] at k*M+m.
                    const double av = static_cast<double>(trans_a ? ab[k * M + m] : ab[m * K + k]);
                    // op(B)[k,n]: B[k,n] at k*N+n, or B stored [N,K] at n*K+k.
                    const double bv = static_cast<double>(trans_b ? bb[n * K + k] : bb[k * N + n]);
                    acc += av * bv;
                }
                cb[m * N + n] = static_cast<T>(acc);
            }
        }
    }
}

}  // namespace reference
}  // namespace ptk
