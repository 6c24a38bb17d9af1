#pragma once
// How the row ops (softmax, layernorm, rmsnorm) and the elementwise activations map onto an
// execution space: every per-space choice lives in RowTraits<Space>, the kernels have one body.
//
// A team sweeps `rows_per_team` rows; TeamThreadRange hands each row to one thread (host: the
// team is one OpenMP thread that walks its rows in turn; GPU: one warp per row). Within a row, the
// thread's `vector_length` ThreadVectorRange lanes each keep `lanes` partial sums, and column j
// of a block of `lanes * vector_length` columns belongs to partial (l, v) with
// j = block + l * vector_length + v. On the host (vector_length 1, lanes 32) that is a fixed-size
// local array over 32 consecutive columns, which the compiler turns into two AVX-512 registers;
// on a GPU (vector_length 32, lanes 1) it is one register per warp lane with coalesced loads.
#include <Kokkos_Core.hpp>

namespace ptk::kernels {

template <class Space>
struct RowTraits {
  static constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;
  static constexpr int rows_per_team = host ? 8 : 4;  // host: amortizes a team's dispatch over short rows
  static constexpr int team_size = host ? 1 : rows_per_team;  // GPU: one warp per row, 4 warps a block
  static constexpr int vector_length = host ? 1 : 32;
  static constexpr int lanes = host ? 32 : 1;  // partial sums per vector lane
  static constexpr int elementwise_block = host ? 32 : 1;  // elements per iteration of gelu / silu

  static Kokkos::TeamPolicy<Space> policy(int rows) {
    const int league = (rows + rows_per_team - 1) / rows_per_team;
    return Kokkos::TeamPolicy<Space>(league, team_size, vector_length);
  }
};

// Calls f(l, j) for the columns j in [begin, end) that belong to vector lane v, l being the
// partial-sum slot of j (see above). Full blocks run a fixed-trip-count loop over l.
template <class Traits, class F>
KOKKOS_INLINE_FUNCTION void lane_sweep(int begin, int end, int v, const F& f) {
  constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V;
  const int full = begin + (end - begin) / W * W;
  for (int b = begin; b < full; b += W)
    for (int l = 0; l < L; ++l) f(l, b + l * V + v);
  for (int l = 0; l < L; ++l) {
    const int j = full + l * V + v;
    if (j < end) f(l, j);
  }
}

// A compensated (Kahan) sum: the value is s - c, c holding the rounding error s has picked up.
// `aux` is a plain side sum that travels with it through the same reduction.
struct Compensated {
  float s = 0, c = 0, aux = 0;

  KOKKOS_INLINE_FUNCTION void add(float x) {
    const float y = x - c;
    const float t = s + y;
    c = (t - s) - y;
    s = t;
  }
  // Neumaier's merge of two compensated sums (two-sum of the heads, errors carried in c).
  KOKKOS_INLINE_FUNCTION void merge(const Compensated& o) {
    const float t = s + o.s;
    const float a = s < 0 ? -s : s, b = o.s < 0 ? -o.s : o.s;
    const float err = a >= b ? (s - t) + o.s : (o.s - t) + s;
    c = (c + o.c) - err;
    s = t;
    aux += o.aux;
  }
  KOKKOS_INLINE_FUNCTION float value() const { return s - c; }
};

// Merges per-slot compensated partials s[l], c[l] into one (sequentially: the slots hold
// comparable magnitudes and the merge is exact up to the carried error).
template <int L>
KOKKOS_INLINE_FUNCTION Compensated merge_slots(const float (&s)[L], const float (&c)[L]) {
  Compensated total;
  total.s = s[0];
  total.c = c[0];
  for (int l = 1; l < L; ++l) total.merge(Compensated{s[l], c[l], 0.0f});
  return total;
}

// Kokkos reducer over Compensated, for the ThreadVectorRange (warp-lane) reduction.
template <class Space>
struct CompensatedSum {
  using reducer = CompensatedSum;
  using value_type = Compensated;
  using result_view_type = Kokkos::View<value_type, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;

  value_type* value;
  KOKKOS_INLINE_FUNCTION explicit CompensatedSum(value_type& v) : value(&v) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& dest, const value_type& src) const { dest.merge(src); }
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const { v = Compensated{}; }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *value; }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return result_view_type(value); }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }
};

}  // namespace ptk::kernels
