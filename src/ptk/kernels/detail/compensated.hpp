#pragma once
// Compensated sums of the row ops: Kahan sums in slots, their pairwise merge, the blocked row sums
// (lane_sum, lane_sum2) and their software-pipelined forms that also write a row (lane_sum_map,
// lane_sum2_map), and the Kokkos reducer that merges them across vector lanes. The error bounds
// are derived in docs/tolerances.md.
#include <Kokkos_Core.hpp>

#include <type_traits>

#include "ptk/kernels/detail/memory_hints.hpp"

namespace ptk::kernels {

// A compensated (Kahan) sum: the value is s - c, c holding the rounding error s has picked up.
struct Compensated {
  float s = 0, c = 0;

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
  }
  KOKKOS_INLINE_FUNCTION float value() const { return s - c; }
  KOKKOS_INLINE_FUNCTION double wide() const { return static_cast<double>(s) - static_cast<double>(c); }
};

// Adds plain partial sums p[l] into the Kahan sums (s[l], c[l]), slot by slot (the slots vectorize).
template <int L>
KOKKOS_INLINE_FUNCTION void kahan_add(float (&s)[L], float (&c)[L], const float (&p)[L]) {
  for (int l = 0; l < L; ++l) {
    const float y = p[l] - c[l];
    const float t = s[l] + y;
    c[l] = (t - s[l]) - y;
    s[l] = t;
  }
}

// Merges per-slot compensated partials s[l], c[l] into one, pairwise (slot l with l + w for
// w = L/2, L/4, ..., 1) with Knuth's branch-free two-sum, so the levels vectorize and the merge
// costs log2(L) dependent steps, not L. Overwrites s and c.
template <int L>
KOKKOS_INLINE_FUNCTION Compensated merge_slots(float (&s)[L], float (&c)[L]) {
  for (int w = L / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) {
      const float a = s[l], b = s[l + w];
      const float t = a + b;
      const float bp = t - a;
      const float err = (a - (t - bp)) + (b - bp);
      c[l] = (c[l] + c[l + w]) - err;
      s[l] = t;
    }
  return Compensated{s[0], c[0]};
}

// Sum of term(j) over the columns j in [begin, end) of vector lane v, blocked and compensated:
// each slot adds `chunk_blocks` terms plainly (a 4-cycle dependency per block), then adds that
// partial to its Kahan sum; the slots are merged pairwise. Error <= about
// (u (chunk_blocks + 3) + 2 n u^2) times the sum of |term| (docs/tolerances.md), for any row length.
// term is called once per column. With Store, each term is also written to store[j] (softmax
// keeps its exps), after the block's terms are formed (see lane_map).
template <class Traits, bool Store = false, class Term>
KOKKOS_INLINE_FUNCTION Compensated lane_sum(int begin, int end, int v, const Term& term, float* store = nullptr) {
  constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V, C = Traits::chunk_blocks;
  float s[L] = {}, c[L] = {};
  const int full = begin + (end - begin) / W * W;
  for (int b = begin; b < full;) {
    const int stop = full - b > C * W ? b + C * W : full;
    float p[L] = {};
    if (Store) {
      for (; b < stop; b += W) {
        float t[L];
        for (int l = 0; l < L; ++l) t[l] = term(b + l * V + v);
        for (int l = 0; l < L; ++l) store[b + l * V + v] = t[l];
        for (int l = 0; l < L; ++l) p[l] += t[l];
      }
    } else {
      for (; b < stop; b += W)
        for (int l = 0; l < L; ++l) p[l] += term(b + l * V + v);
    }
    kahan_add(s, c, p);
  }
  if (full < end) {
    float p[L] = {};
    for (int l = 0; l < L; ++l) {
      const int j = full + l * V + v;
      if (j < end) {
        p[l] = term(j);
        if (Store) store[j] = p[l];
      }
    }
    kahan_add(s, c, p);
  }
  return merge_slots(s, c);
}

// Two compensated sums taken in one sweep (the backward passes need Σ a and Σ b over the same
// row): term(j, a, b) sets both terms of column j; blocking, compensation and merge as lane_sum.
struct CompensatedPair {
  Compensated first, second;
  KOKKOS_INLINE_FUNCTION void merge(const CompensatedPair& o) {
    first.merge(o.first);
    second.merge(o.second);
  }
};

template <class Traits, class Term>
KOKKOS_INLINE_FUNCTION CompensatedPair lane_sum2(int begin, int end, int v, const Term& term) {
  constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V, C = Traits::chunk_blocks;
  float s1[L] = {}, c1[L] = {}, s2[L] = {}, c2[L] = {};
  const int full = begin + (end - begin) / W * W;
  for (int b = begin; b < full;) {
    const int stop = full - b > C * W ? b + C * W : full;
    float p1[L] = {}, p2[L] = {};
    for (; b < stop; b += W)
      for (int l = 0; l < L; ++l) {
        float a, t;
        term(b + l * V + v, a, t);
        p1[l] += a;
        p2[l] += t;
      }
    kahan_add(s1, c1, p1);
    kahan_add(s2, c2, p2);
  }
  if (full < end) {
    float p1[L] = {}, p2[L] = {};
    for (int l = 0; l < L; ++l) {
      const int j = full + l * V + v;
      if (j < end) term(j, p1[l], p2[l]);
    }
    kahan_add(s1, c1, p1);
    kahan_add(s2, c2, p2);
  }
  return CompensatedPair{merge_slots(s1, c1), merge_slots(s2, c2)};
}

// p[l] += t[l] (and p2[l] += t2[l]) for the L slots of a block of lane_sum_map (lane_sum2_map), whose row (S) is
// f32 or 16-bit. A 16-bit row's adds are the SIMD loop: left to g++, the terms were formed 8 at a time and added
// one by one through the stack (vextractps, vaddss; rmsnorm: shuffles), and bf16 layernorm ran at a third of f32's
// speed; with the pragma, 2.5x faster. A float row keeps the plain loop: the pragma made f32's 16384 × 128
// layernorm 25 % slower.
template <class S, int L>
KOKKOS_FORCEINLINE_FUNCTION void add_slots(float (&p)[L], const float (&t)[L]) {
  if constexpr (std::is_same_v<S, float>) {
    for (int l = 0; l < L; ++l) p[l] += t[l];
  } else {
    PTK_SIMD_LOOP
    for (int l = 0; l < L; ++l) p[l] += t[l];
  }
}
template <class S, int L>
KOKKOS_FORCEINLINE_FUNCTION void add_slots(float (&p1)[L], const float (&t1)[L], float (&p2)[L], const float (&t2)[L]) {
  if constexpr (std::is_same_v<S, float>) {
    for (int l = 0; l < L; ++l) {
      p1[l] += t1[l];
      p2[l] += t2[l];
    }
  } else {
    PTK_SIMD_LOOP
    for (int l = 0; l < L; ++l) {
      p1[l] += t1[l];
      p2[l] += t2[l];
    }
  }
}

// Software pipelining of the host's row sweeps: the sums of one row (the row that comes from
// memory) taken in the same sweep as the output of the row before it (which is in L1/L2), so the
// stream of loads never stops while a thread computes. lane_sum_map is lane_sum of term(j) over
// [begin, end) that also stores y[j] = value(j) for the same columns; lane_sum2_map the same for
// lane_sum2. A block's terms and values are all formed before any is stored (see lane_map), so y
// may alias the inputs of value (each column is read before it is written) but must not alias
// those of term. Blocking, compensation and merge as lane_sum: the sums are bitwise the same.
// `stream` is the row term reads from memory: each block prefetches its lines ahead, and y's lines
// for writing (prefetch_ahead; y's read-for-ownership otherwise stalls the stores), or, with
// `streaming`, writes y's blocks with non-temporal
// stores instead (store_block), for outputs too large for the cache. y and stream may be rows of 16-bit items (O, S:
// bf16, f16): y's values are rounded to nearest even.
template <class Traits, class Term, class Value, class O, class S>
KOKKOS_INLINE_FUNCTION Compensated lane_sum_map(int begin, int end, int v, const Term& term, O* y,
                                                const Value& value, const S* stream, bool streaming) {
  constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V, C = Traits::chunk_blocks;
  float s[L] = {}, c[L] = {};
  const int full = begin + (end - begin) / W * W;
  for (int b = begin; b < full;) {
    const int stop = full - b > C * W ? b + C * W : full;
    float p[L] = {};
    for (; b < stop; b += W) {
      prefetch_block<Traits, W>(stream, y, b, streaming);
      float t[L], o[L];
      for (int l = 0; l < L; ++l) {
        t[l] = term(b + l * V + v);
        o[l] = value(b + l * V + v);
      }
      add_slots<S>(p, t);
      store_block<Traits>(y + b + v, o, streaming);
    }
    kahan_add(s, c, p);
  }
  if (full < end) {
    float p[L] = {};
    for (int l = 0; l < L; ++l) {
      const int j = full + l * V + v;
      if (j < end) {
        p[l] = term(j);
        y[j] = round_to<O>(value(j));
      }
    }
    kahan_add(s, c, p);
  }
  return merge_slots(s, c);
}

template <class Traits, class Term, class Value, class O, class S>
KOKKOS_INLINE_FUNCTION CompensatedPair lane_sum2_map(int begin, int end, int v, const Term& term, O* y,
                                                     const Value& value, const S* stream, bool streaming) {
  constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V, C = Traits::chunk_blocks;
  float s1[L] = {}, c1[L] = {}, s2[L] = {}, c2[L] = {};
  const int full = begin + (end - begin) / W * W;
  for (int b = begin; b < full;) {
    const int stop = full - b > C * W ? b + C * W : full;
    float p1[L] = {}, p2[L] = {};
    for (; b < stop; b += W) {
      prefetch_block<Traits, W>(stream, y, b, streaming);
      float t1[L], t2[L], o[L];
      for (int l = 0; l < L; ++l) {
        term(b + l * V + v, t1[l], t2[l]);
        o[l] = value(b + l * V + v);
      }
      add_slots<S>(p1, t1, p2, t2);
      // After the sums, so that store_block's branch does not split each term from its add: g++ contracted
      // x * x + p into an FMA only within one block, and lane_sum (the same sums for a team's first row) got
      // the FMA. The row ops' units are now compiled without contraction (src/CMakeLists.txt), which makes
      // the sums bitwise equal whatever the blocks; the order stays, as it costs nothing.
      store_block<Traits>(y + b + v, o, streaming);
    }
    kahan_add(s1, c1, p1);
    kahan_add(s2, c2, p2);
  }
  if (full < end) {
    float p1[L] = {}, p2[L] = {};
    for (int l = 0; l < L; ++l) {
      const int j = full + l * V + v;
      if (j < end) {
        term(j, p1[l], p2[l]);
        y[j] = round_to<O>(value(j));
      }
    }
    kahan_add(s1, c1, p1);
    kahan_add(s2, c2, p2);
  }
  return CompensatedPair{merge_slots(s1, c1), merge_slots(s2, c2)};
}

// Pairwise sum and NaN-skipping max of L slots (log2(L) dependent steps). Overwrite v.
template <class T, int L>
KOKKOS_INLINE_FUNCTION T tree_sum(T (&v)[L]) {
  for (int w = L / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) v[l] += v[l + w];
  return v[0];
}
template <int L>
KOKKOS_INLINE_FUNCTION float tree_max(float (&v)[L]) {
  for (int w = L / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) v[l] = v[l + w] > v[l] ? v[l + w] : v[l];
  return v[0];
}

// Kokkos reducer over a value type with merge() (Compensated, CompensatedPair, softmax's ExpSum),
// for the ThreadVectorRange (warp-lane) reductions; a value-initialized T is the identity.
template <class T>
struct Merge {
  using reducer = Merge;
  using value_type = T;
  using result_view_type = Kokkos::View<value_type, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;

  value_type* value;
  KOKKOS_INLINE_FUNCTION explicit Merge(value_type& v) : value(&v) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& dest, const value_type& src) const { dest.merge(src); }
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const { v = value_type{}; }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *value; }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return result_view_type(value); }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }
};

using CompensatedSum = Merge<Compensated>;
using CompensatedPairSum = Merge<CompensatedPair>;

}  // namespace ptk::kernels
