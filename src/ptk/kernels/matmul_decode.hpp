#pragma once
// matmul_decode: y[R,N] = alpha · x[R,K] · W[N,K]ᵀ + beta · y for a few rows R <= decode_max_rows (a decode
// step: one token's activations a row of x, W a linear layer's weight [out, in]); beta = 0 only writes y.
// W's element type E is f32, bf16 or f16, read as float (detail/load.hpp) into the same fp32 FMA chains (the
// product is bound by W's bytes, so fewer bytes a weight is less time), or q8_0 or q4_0, multiplied as integers by
// x quantized to int8 per block (matmul_decode_quantized.hpp).
#include <Kokkos_Core.hpp>

#include <cstddef>

#include "ptk/core/compat.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/compensated.hpp"
#include "ptk/kernels/detail/load.hpp"
#include "ptk/kernels/detail/memory_hints.hpp"
#include "ptk/kernels/matmul_decode_quantized.hpp"
#include "ptk/kernels/matmul_decode_tiles.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

// Up to this many rows of x the product is bound by reading W, and matmul_forward takes this kernel.
constexpr int decode_max_rows = 8;

// A decode group holds at most this many products of one x (a layer's q, k and v).
constexpr int decode_group_max = 3;
static_assert(decode_group_max == tiles_group_max, "the tile kernel takes the groups this kernel takes");

template <class Space, class E>
struct DecodeProduct {
  Matrix<Space> y;               // [R, N]
  ConstMatrixOf<Space, E> w;     // [N, K] values: [N, K / block] items
  ConstVector<Space> bias;       // [N], added to every row (a linear layer's bias), or empty
};
template <class Space, class E>
struct DecodeGroup {
  DecodeProduct<Space, E> part[decode_group_max];
  int count = 0;
};
template <class Space, class E>
DecodeGroup<Space, E> decode_single(const Matrix<Space>& y, const ConstMatrixOf<Space, E>& w,
                                    const ConstVector<Space>& bias = {}) {
  DecodeGroup<Space, E> group;
  group.part[0] = {y, w, bias};
  group.count = 1;
  return group;
}

// The R dot products of one row of W, merged across vector lanes by Merge (compensated.hpp).
template <int R>
struct RowDots {
  float v[R] = {};
  KOKKOS_INLINE_FUNCTION void merge(const RowDots& o) {
    for (int r = 0; r < R; ++r) v[r] += o.v[r];
  }
};

// The partial sums of R x rows against J rows of W over the k of vector lane v (Tune::decode in
// tuning.hpp): lane (l, v) of pair (r, j) (at acc[r·J + j][l]) sums x[r,k] · w[j,k] over
// k = b + l·V + v for the blocks b in [begin, end), in order. Each block loads L values of every W
// row and L of every x row once and feeds them to R·J·L independent FMA chains. x rows lie `ldx`
// apart, W rows `ldw`; begin and end are multiples of the block width L·V.
template <int R, int J, class Traits, class E>
KOKKOS_FORCEINLINE_FUNCTION void lane_accumulate(float (&acc)[R * J][Traits::lanes], const float* x, std::size_t ldx,
                                            const E* w, std::size_t ldw, int begin, int end, int v) {
  constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V;
  for (int b = begin; b < end; b += W) {
    float wv[J][L];
    PTK_UNROLL_NEST
    for (int j = 0; j < J; ++j) {
      // Row pointers first: an int offset added to j * ldw could wrap, so g++ would not prove the
      // l-loads consecutive and assembled each vector from 16 scalar loads.
      const E* wj = w + j * ldw;
      prefetch_items<Traits, W>(wj, b);
      load_lanes<L, V>(wj, b, v, wv[j]);
    }
    PTK_UNROLL_NEST
    for (int r = 0; r < R; ++r) {
      const float* xr = x + r * ldx + b + v;
      PTK_UNROLL_NEST
      for (int j = 0; j < J; ++j)
        for (int l = 0; l < L; ++l) acc[r * J + j][l] += xr[l * V] * wv[j][l];
    }
  }
}

// The dots of lane v from its partial sums: the k past the last full block (K - full of them, at
// most one per slot), then each slot's L partials summed pairwise.
template <int R, int J, class Traits, class E>
KOKKOS_FORCEINLINE_FUNCTION RowDots<R * J> lane_finish(float (&acc)[R * J][Traits::lanes], const float* x, std::size_t ldx,
                                                  const E* w, std::size_t ldw, int full, int K, int v) {
  constexpr int L = Traits::lanes, V = Traits::vector_length;
  for (int l = 0; l < L; ++l) {
    const int k = full + l * V + v;
    if (k < K)
      for (int r = 0; r < R; ++r)
        for (int j = 0; j < J; ++j) acc[r * J + j][l] += x[r * ldx + k] * load(w + j * ldw, k);
  }
  RowDots<R * J> dots;
  for (int i = 0; i < R * J; ++i) dots.v[i] = tree_sum(acc[i]);
  return dots;
}

// Σ_k x[r,k] · w[j,k] for every row r of x and each of J consecutive rows j of W, over the k of
// vector lane v, in one sweep over K (lane_accumulate and lane_finish with the sums declared here,
// as the GPU and the host's unsliced R = 1, 2, 8 take it).
template <int R, int J, class Traits, class E>
KOKKOS_INLINE_FUNCTION RowDots<R * J> lane_dots(const float* x, std::size_t ldx, const E* w, std::size_t ldw,
                                                     int K, int v) {
  constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V;
  float acc[R * J][L] = {};
  const int full = K / W * W;
  // The loop of lane_accumulate written out here: handing `acc` to it by reference made g++ keep the R = 8,
  // J = 2 sums on the stack (M = 8 at 4096 x 4096: 2.93 ms against 2.49 written out).
  for (int b = 0; b < full; b += W) {
    float wv[J][L];
    PTK_UNROLL_NEST
    for (int j = 0; j < J; ++j) {
      const E* wj = w + j * ldw;
      prefetch_group_items<Traits, W, J>(wj, ldw, K, b);
      load_lanes<L, V>(wj, b, v, wv[j]);
    }
    PTK_UNROLL_NEST
    for (int r = 0; r < R; ++r) {
      const float* xr = x + r * ldx + b + v;
      PTK_UNROLL_NEST
      for (int j = 0; j < J; ++j)
        for (int l = 0; l < L; ++l) acc[r * J + j][l] += xr[l * V] * wv[j][l];
    }
  }
  return lane_finish<R, J, Traits>(acc, x, ldx, w, ldw, full, K, v);
}

template <int R, class Space, class Tune, class E>
struct MatmulDecode {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  using Traits = typename Tune::decode;
  static constexpr int J = Traits::w_rows(R);  // W rows a thread takes together
  // 0: each group of W rows in one sweep over K (quantized W always: x's integers and scales are 3 bytes a value)
  static constexpr int KBlock = is_quantized_v<E> ? 0 : Traits::k_block(R);
  Matrix<Space> y;       // [R, N]
  ConstMatrix<Space> x;  // [R, K]
  ConstMatrixOf<Space, E> w;  // [N, K] values: [N, K / block] items
  float alpha, beta;
  ConstVector<Space> bias;  // [N], added to every row (a linear layer's bias), or empty
  QuantizedRows<Space> xq;  // x quantized, for quantized E (else empty)

  // The dots of W rows n .. n + Jn of vector lane v, for quantized E.
  template <int Jn>
  KOKKOS_INLINE_FUNCTION RowDots<R * Jn> quantized_dots(int n, int v) const {
    float acc[R * Jn][Traits::lanes] = {};
    const QuantizedRowsRef ref{xq.q.data(), xq.scale.data(), xq.offset.data(), xq.q.extent(1), xq.scale.extent(1)};
    quantized_lane_sums<R, Jn, Traits>(acc, ref, &w(n, 0), w.extent(1), static_cast<int>(xq.scale.extent(1)), v);
    RowDots<R * Jn> dots;
    for (int i = 0; i < R * Jn; ++i) dots.v[i] = tree_sum(acc[i]);
    return dots;
  }

  // y[r, n .. n + Jn) = alpha · dots[r·Jn + j] (+ bias[n + j]) (+ beta · y).
  template <int Jn>
  KOKKOS_INLINE_FUNCTION void store(const RowDots<R * Jn>& dots, int n) const {
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < Jn; ++j) {
        const float d = alpha * dots.v[r * Jn + j] + (bias.data() ? bias(n + j) : 0.0f);
        y(r, n + j) = beta == 0.0f ? d : d + beta * y(r, n + j);
      }
  }

  // y[r, n .. n + Jn) from the dots of W rows n .. n + Jn.
  template <int Jn>
  KOKKOS_INLINE_FUNCTION void rows(const Team& team, int n) const {
    const int K = static_cast<int>(x.extent(1));
    RowDots<R * Jn> dots;
    // lane_dots called here, not through a member that returns its sums: that made g++ 12 keep the f32 R = 8 sums
    // in memory (M = 8 at 4096 x 4096: 51 ms against 5).
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, Traits::vector_length),
        [&](int v, RowDots<R * Jn>& total) {
          if constexpr (is_quantized_v<E>)
            total.merge(this->template quantized_dots<Jn>(n, v));
          else
            total.merge(lane_dots<R, Jn, Traits, E>(x.data(), x.extent(1), &w(n, 0), w.extent(1), K, v));
        },
        Merge<RowDots<R * Jn>>(dots));
    // Written out rather than store<Jn>(dots, n): handing `dots` on by reference made g++ keep the
    // R = 8, J = 2 sums on the stack (docs/benchmarks.md, "Tuning choices").
    Kokkos::single(Kokkos::PerThread(team), [&]() {
      for (int r = 0; r < R; ++r)
        for (int j = 0; j < Jn; ++j) {
          const float d = alpha * dots.v[r * Jn + j] + (bias.data() ? bias(n + j) : 0.0f);
          y(r, n + j) = beta == 0.0f ? d : d + beta * y(r, n + j);
        }
    });
  }

  // Adds the slice [begin, end) of K to the partial sums of `count` groups of Jn W rows, the first at
  // row n, through registers: accumulating in `partials` itself would load and store it every block
  // (g++ cannot rule out that x or w alias it).
  template <int Jn>
  KOKKOS_INLINE_FUNCTION void slice(float (*partials)[R * Jn][Traits::lanes], int n, int count, int begin,
                                    int end) const {
    constexpr int L = Traits::lanes;
    for (int g = 0; g < count; ++g) {
      float acc[R * Jn][L];
      for (int i = 0; i < R * Jn; ++i)
        for (int l = 0; l < L; ++l) acc[i][l] = partials[g][i][l];
      lane_accumulate<R, Jn, Traits, E>(acc, x.data(), x.extent(1), &w(n + g * Jn, 0), w.extent(1), begin, end, 0);
      for (int i = 0; i < R * Jn; ++i)
        for (int l = 0; l < L; ++l) partials[g][i][l] = acc[i][l];
    }
  }

  template <int Jn>
  KOKKOS_INLINE_FUNCTION void finish(float (*partials)[R * Jn][Traits::lanes], int n, int count, int full) const {
    const int K = static_cast<int>(x.extent(1));
    for (int g = 0; g < count; ++g)
      store<Jn>(lane_finish<R, Jn, Traits, E>(partials[g], x.data(), x.extent(1), &w(n + g * Jn, 0), w.extent(1), full, K, 0),
                n + g * Jn);
  }

  // The host's K-blocked sweep (a team is one thread with one vector lane): the team's groups of J W
  // rows, then its remaining rows one at a time, pass over one KBlock-wide slice of K after another,
  // so that the slice of all R x rows stays in L1 while W streams past it (rather than R x vectors
  // coming from L2 for every W vector). Partial sums wait in `partials` between slices; each lane
  // still adds its k in increasing order, as in one sweep.
  KOKKOS_INLINE_FUNCTION void blocked(int first, int count) const {
    static_assert(Traits::team_size == 1 && Traits::vector_length == 1, "k_block needs one thread, one lane");
    constexpr int L = Traits::lanes, Groups = Traits::rows_per_team / J;
    const int K = static_cast<int>(x.extent(1)), full = K / L * L;
    const int groups = count / J, singles = count - groups * J, rest = first + groups * J;
    float grouped[Groups][R * J][L] = {};
    float single[J > 1 ? J - 1 : 1][R][L] = {};
    for (int begin = 0; begin < full; begin += KBlock) {
      const int end = begin + KBlock < full ? begin + KBlock : full;
      slice<J>(grouped, first, groups, begin, end);
      slice<1>(single, rest, singles, begin, end);
    }
    finish<J>(grouped, first, groups, full);
    finish<1>(single, rest, singles, full);
  }

  // Team `rank`'s W rows: groups of J, then the rest one at a time.
  KOKKOS_INLINE_FUNCTION void run(const Team& team, int rank) const {
    const int N = static_cast<int>(w.extent(0));
    const int first = rank * Traits::rows_per_team;
    const int count = (first + Traits::rows_per_team < N ? first + Traits::rows_per_team : N) - first;
    if constexpr (KBlock > 0) {
      blocked(first, count);
    } else {
      const int groups = count / J, singles = count - groups * J;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, groups + singles), [&](int g) {
        if (g < groups) this->template rows<J>(team, first + g * J);
        else this->template rows<1>(team, first + groups * J + (g - groups));
      });
    }
  }
};

// The products of one x in one launch: the league is the parts' teams one after another.
template <int R, class Space, class Tune, class E>
struct MatmulDecodeGroup {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  MatmulDecode<R, Space, Tune, E> part[decode_group_max];
  int end[decode_group_max];  // part p's teams: league ranks end[p - 1] .. end[p]
  int count;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int rank = team.league_rank();
    int p = 0;
    while (p + 1 < count && rank >= end[p]) ++p;
    part[p].run(team, p == 0 ? rank : rank - end[p - 1]);
  }
};

template <int R, class Space, class Tune, class E>
void matmul_decode_rows(const DecodeGroup<Space, E>& group, const ConstMatrix<Space>& x, float alpha, float beta) {
  using Traits = typename Tune::decode;
  // Dynamic: on a shared host a preempted thread's rows of W go to the other threads.
  using Policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Dynamic>>;
  QuantizedRows<Space> xq;
  if constexpr (is_quantized_v<E>) xq = quantize_rows<Space, E>(x);
  MatmulDecodeGroup<R, Space, Tune, E> f{};
  f.count = group.count;
  int league = 0;
  for (int p = 0; p < group.count; ++p) {
    const DecodeProduct<Space, E>& d = group.part[p];
    f.part[p] = MatmulDecode<R, Space, Tune, E>{d.y, x, d.w, alpha, beta, d.bias, xq};
    league += (static_cast<int>(d.w.extent(0)) + Traits::rows_per_team - 1) / Traits::rows_per_team;
    f.end[p] = league;
  }
  Kokkos::parallel_for("ptk::matmul_decode", Policy(league, Traits::team_size, Traits::vector_length), f);
}

// y_p = alpha · x · w_pᵀ + bias_p + beta · y_p for each part p of the group (up to decode_group_max products of one
// x, e.g. a layer's q, k and v: one launch, and for q8_0 and q4_0 one quantization of x), x [R, K] with
// 1 <= R <= decode_max_rows, w_p [N_p, K] values of E (for q8_0 and q4_0 K a multiple of 32, w's extent K / 32
// blocks, and x quantized to int8 blocks first: two launches; in row tiles w_p [N_p / 16, K / 32]), y_p [R, N_p],
// bias_p [N_p] or empty (the caller checks shapes). Each y_p is the bits a launch of its own gives. The accumulators
// are sized at compile time, one instantiation per R. The bias rides along in the store: a decode step's launches
// cost more than its arithmetic.
template <class Space, class Tune = Tuning<Space>, class E = float>
void matmul_decode_group(const DecodeGroup<Space, E>& group, const ConstMatrix<Space>& x, float alpha = 1.0f,
                         float beta = 0.0f) {
  if (x.extent(0) == 0) return;
  if constexpr (is_row_tile_v<E>) {  // q8_0 and q4_0 in row tiles: their own kernel (matmul_decode_tiles.hpp)
    TilesProduct<Space, E> parts[decode_group_max];
    for (int p = 0; p < group.count; ++p) parts[p] = {group.part[p].y, group.part[p].w, group.part[p].bias};
    matmul_decode_tiles<Space, Tune>(parts, group.count, x, alpha, beta);
  } else {
    switch (x.extent(0)) {
      case 1: return matmul_decode_rows<1, Space, Tune, E>(group, x, alpha, beta);
      case 2: return matmul_decode_rows<2, Space, Tune, E>(group, x, alpha, beta);
      case 3: return matmul_decode_rows<3, Space, Tune, E>(group, x, alpha, beta);
      case 4: return matmul_decode_rows<4, Space, Tune, E>(group, x, alpha, beta);
      case 5: return matmul_decode_rows<5, Space, Tune, E>(group, x, alpha, beta);
      case 6: return matmul_decode_rows<6, Space, Tune, E>(group, x, alpha, beta);
      case 7: return matmul_decode_rows<7, Space, Tune, E>(group, x, alpha, beta);
      case 8: return matmul_decode_rows<8, Space, Tune, E>(group, x, alpha, beta);
      default: Kokkos::abort("ptk::kernels::matmul_decode: x must have 1 to decode_max_rows rows");
    }
  }
}

// One product (a group of one). E is named, not deduced (w converts from a non-const View).
template <class Space, class Tune = Tuning<Space>, class E = float>
void matmul_decode(const Matrix<Space>& y, const ConstMatrix<Space>& x, const Same<ConstMatrixOf<Space, E>>& w,
                   float alpha = 1.0f, float beta = 0.0f, const ConstVector<Space>& bias = {}) {
  if (y.extent(0) == 0 || y.extent(1) == 0) return;
  matmul_decode_group<Space, Tune, E>(decode_single<Space, E>(y, w, bias), x, alpha, beta);
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

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_MATMUL_DECODE_ELEMENT_INSTANCE(EXT, Space, Tune, E) \
  EXT template void matmul_decode_group<Space, Tune, E>(const DecodeGroup<Space, E>& group, const ConstMatrix<Space>& x, float alpha, float beta);
#define PTK_MATMUL_DECODE_TUNED_INSTANCES(EXT, Space, Tune)           \
  PTK_MATMUL_DECODE_ELEMENT_INSTANCE(EXT, Space, Tune, float)        \
  PTK_MATMUL_DECODE_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::bf16) \
  PTK_MATMUL_DECODE_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::f16)  \
  PTK_MATMUL_DECODE_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::q8_0) \
  PTK_MATMUL_DECODE_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::q4_0)  \
  PTK_MATMUL_DECODE_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::q8_0x16) \
  PTK_MATMUL_DECODE_ELEMENT_INSTANCE(EXT, Space, Tune, ::ptk::q4_0x16)
#define PTK_MATMUL_DECODE_SPACE_INSTANCES(EXT, Space) \
  EXT template bool decode_applies<Space>(const Tensor3<Space>& c, const ConstTensor3<Space>& a, const ConstTensor3<Space>& b, bool trans_a, bool trans_b);
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_MATMUL_DECODE_TUNED_INSTANCES, extern)
PTK_FOR_EACH_SPACE(PTK_MATMUL_DECODE_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
