#pragma once
// matmul_decode: y[R,N] = alpha · x[R,K] · W[N,K]ᵀ + beta · y for a few rows R <= decode_max_rows (a decode
// step: one token's activations a row of x, W a linear layer's weight [out, in]); beta = 0 only writes y.
#include <Kokkos_Core.hpp>

#include <cstddef>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/compensated.hpp"
#include "ptk/kernels/memory_hints.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

// Up to this many rows of x the product is bound by reading W, and matmul_forward takes this kernel.
constexpr int decode_max_rows = 8;

// The R dot products of one row of W, merged across vector lanes by Merge (compensated.hpp).
template <int R>
struct RowDots {
  float v[R] = {};
  KOKKOS_INLINE_FUNCTION void merge(const RowDots& o) {
    for (int r = 0; r < R; ++r) v[r] += o.v[r];
  }
};

// Σ_k x[r,k] · w[k] for every row r, over the k of vector lane v (Tune::decode in tuning.hpp): each
// block loads L values of w once and feeds them to all R rows' plain fp32 partial sums (R·L
// accumulators, independent FMA chains), which are then summed pairwise. x rows lie `ldx` apart.
template <int R, class Traits>
KOKKOS_INLINE_FUNCTION RowDots<R> lane_dots(const float* x, std::size_t ldx, const float* w, int K, int v) {
  constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V;
  float acc[R][L] = {};
  const int full = K / W * W;
  for (int b = 0; b < full; b += W) {
    prefetch_block<Traits, W>(w, nullptr, b, true);
    float wv[L];
    for (int l = 0; l < L; ++l) wv[l] = w[b + l * V + v];
    for (int r = 0; r < R; ++r) {
      const float* xr = x + r * ldx + b + v;
      for (int l = 0; l < L; ++l) acc[r][l] += xr[l * V] * wv[l];
    }
  }
  for (int l = 0; l < L; ++l) {
    const int k = full + l * V + v;
    if (k < K)
      for (int r = 0; r < R; ++r) acc[r][l] += x[r * ldx + k] * w[k];
  }
  RowDots<R> dots;
  for (int r = 0; r < R; ++r) dots.v[r] = tree_sum(acc[r]);
  return dots;
}

template <int R, class Space, class Tune>
struct MatmulDecode {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = typename Tune::decode;
  Matrix<Space> y;       // [R, N]
  ConstMatrix<Space> x;  // [R, K]
  ConstMatrix<Space> w;  // [N, K]
  float alpha, beta;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int N = static_cast<int>(w.extent(0)), K = static_cast<int>(w.extent(1));
    const int first = team.league_rank() * Traits::rows_per_team;
    const int last = first + Traits::rows_per_team < N ? first + Traits::rows_per_team : N;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first, last), [&](int n) {
      const float* wn = &w(n, 0);
      RowDots<R> dots;
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, Traits::vector_length),
          [&](int v, RowDots<R>& total) { total.merge(lane_dots<R, Traits>(x.data(), x.extent(1), wn, K, v)); },
          Merge<RowDots<R>>(dots));
      Kokkos::single(Kokkos::PerThread(team), [&]() {
        for (int r = 0; r < R; ++r) y(r, n) = beta == 0.0f ? alpha * dots.v[r] : alpha * dots.v[r] + beta * y(r, n);
      });
    });
  }
};

template <int R, class Space, class Tune>
void matmul_decode_rows(const Matrix<Space>& y, const ConstMatrix<Space>& x, const ConstMatrix<Space>& w, float alpha,
                        float beta) {
  using Traits = typename Tune::decode;
  // Dynamic: on a shared host a preempted thread's rows of W go to the other threads.
  using Policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  const int N = static_cast<int>(w.extent(0));
  const int league = (N + Traits::rows_per_team - 1) / Traits::rows_per_team;
  Kokkos::parallel_for("ptk::matmul_decode", Policy(league, Traits::team_size, Traits::vector_length),
                       MatmulDecode<R, Space, Tune>{y, x, w, alpha, beta});
}

// y = alpha · x · wᵀ + beta · y for x [R, K] with 1 <= R <= decode_max_rows, w [N, K], y [R, N] (the
// caller checks shapes). The accumulators are sized at compile time, one instantiation per R.
template <class Space, class Tune = Tuning<Space>>
void matmul_decode(const Matrix<Space>& y, const ConstMatrix<Space>& x, const ConstMatrix<Space>& w, float alpha = 1.0f,
                   float beta = 0.0f) {
  if (y.extent(0) == 0 || y.extent(1) == 0) return;
  switch (x.extent(0)) {
    case 1: return matmul_decode_rows<1, Space, Tune>(y, x, w, alpha, beta);
    case 2: return matmul_decode_rows<2, Space, Tune>(y, x, w, alpha, beta);
    case 3: return matmul_decode_rows<3, Space, Tune>(y, x, w, alpha, beta);
    case 4: return matmul_decode_rows<4, Space, Tune>(y, x, w, alpha, beta);
    case 5: return matmul_decode_rows<5, Space, Tune>(y, x, w, alpha, beta);
    case 6: return matmul_decode_rows<6, Space, Tune>(y, x, w, alpha, beta);
    case 7: return matmul_decode_rows<7, Space, Tune>(y, x, w, alpha, beta);
    case 8: return matmul_decode_rows<8, Space, Tune>(y, x, w, alpha, beta);
    default: Kokkos::abort("ptk::kernels::matmul_decode: x must have 1 to decode_max_rows rows");
  }
}

// Whether matmul_forward(c, a, b, trans_a, trans_b) is a decode product: one weight shared by the
// batch in [N,K] layout (trans_b, b's batch extent 1), a untransposed with a matrix per batch (so
// its batch · M rows are contiguous, as are c's), and at most decode_max_rows rows in all.
template <class Space>
bool decode_applies(const Tensor3<Space>& c, const ConstTensor3<Space>& a, const ConstTensor3<Space>& b, bool trans_a,
                    bool trans_b) {
  return trans_b && !trans_a && b.extent(0) == 1 && a.extent(0) == c.extent(0) &&
         c.extent(0) * c.extent(1) <= static_cast<std::size_t>(decode_max_rows);
}

}  // namespace ptk::kernels
