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

#include <cstdint>
// Streaming stores (store_block) use x86 intrinsics: only in plain host compilers (not under nvcc
// or hipcc, whose GPU builds keep plain stores on the host too).
#if defined(__SSE__) && !defined(__CUDACC__) && !defined(__HIPCC__)
#define PTK_STREAMING_STORES 1
#include <immintrin.h>
#endif

namespace ptk::kernels {

template <class Space>
struct RowTraits {
  static constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;
  static constexpr int rows_per_team = host ? 8 : 4;  // host: amortizes a team's dispatch over short rows
  static constexpr int team_size = host ? 1 : rows_per_team;  // GPU: one warp per row, 4 warps a block
  static constexpr int vector_length = host ? 1 : 32;
  static constexpr int lanes = host ? 32 : 1;  // partial sums per vector lane
  // The forward layernorm / rmsnorm sweeps (sums only, no exp): 16 slots on the host, one AVX-512
  // vector a partial, so lane_sum2_map's 6 partial vectors stay in registers. softmax keeps
  // `lanes` (32): its exp is a dependent FMA chain that wants two independent vectors a block
  // (16 slots ran softmax 2x slower).
  static constexpr int norm_lanes = host ? 16 : 1;
  static constexpr int elementwise_block = host ? 32 : 1;  // elements per iteration of gelu / silu
  static constexpr int chunk_blocks = 8;  // blocks summed plainly before a compensated add (lane_sum)
  // How far ahead of a sweep that streams a row from memory its lines are prefetched, in floats
  // (prefetch_ahead). Host: 4 KB; without it the hardware prefetcher alone left a pipelined sweep
  // at ~0.7x memcpy (measured 0.67-0.77x vs 0.81-1.07x with it, 768- and 4096-wide rows). GPU: 0,
  // none: a GPU hides memory latency with the other resident warps.
  static constexpr int prefetch_distance = host ? 1024 : 0;
  // Outputs at least this large are written with non-temporal (streaming) stores by the pipelined
  // forwards (store_block): such an output cannot stay in the last-level cache for its consumer
  // anyway, and an ordinary store first reads its line from memory (read-for-ownership), a third
  // stream beside the input read and the write. Host: 32 MiB (this machine's L3); measured on
  // layernorm 32768x768 (96 MiB), 25 -> 38-42 GB/s standalone. GPU: never (0).
  static constexpr std::size_t stream_store_bytes = host ? std::size_t(32) << 20 : 0;
  template <class Output>
  static bool stream_stores(const Output& out) {
    return stream_store_bytes > 0 && out.span() * sizeof(typename Output::value_type) >= stream_store_bytes;
  }

  static Kokkos::TeamPolicy<Space> policy(int rows, int rows_a_team = rows_per_team) {
    const int league = (rows + rows_a_team - 1) / rows_a_team;
    return Kokkos::TeamPolicy<Space>(league, team_size, vector_length);
  }

  // Rows a team takes in the software-pipelined forward sweeps (softmax, layernorm, rmsnorm: the
  // sweep that writes one row reads the next), whose pipeline restarts at each team: the host gives
  // a team a long run of rows, leaving 4 teams a thread; a GPU keeps rows_per_team (a row a warp).
  static int pipeline_rows(int rows) {
    if (!host) return rows_per_team;
    const int teams = 4 * Space().concurrency();
    const int run = (rows + teams - 1) / teams;
    return run > rows_per_team ? run : rows_per_team;
  }

  // Column sums of the backward passes (dgamma, dbeta, dweight), see ColumnPartials below: at most
  // `max_partials` partial rows (one per team thread), and at most `max_partial_elements` doubles
  // per summed quantity, with at least `min_rows_per_partial` rows behind each. A partial row
  // gathers `chunk_rows` rows in fp32 before it adds them to its double sums.
  static constexpr int max_partials = host ? 128 : 2048;
  static constexpr int max_partial_elements = host ? (1 << 18) : (1 << 21);
  static constexpr int min_rows_per_partial = host ? 16 : 4;
  static constexpr int chunk_rows = 8;
};

// Traits with `lanes` replaced by N (all else kept), for a sweep that wants more or fewer slots.
template <class Traits, int N>
struct WithLanes : Traits {
  static constexpr int lanes = N;
};

constexpr int line_floats = 16;  // floats in a 64-byte cache line

// A hint to fetch the cache line `Traits::prefetch_distance` floats past row + j; ForWrite: for
// writing (prefetchw), so a later store finds its line already owned. A no-op where the distance
// is 0, and in device code. The address is formed as an integer: it may lie past the row, even
// past the allocation, which a prefetch tolerates but pointer arithmetic would not.

template <class Traits, bool ForWrite = false>
KOKKOS_FORCEINLINE_FUNCTION void prefetch_ahead(const float* row, int j) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  if constexpr (Traits::prefetch_distance > 0)
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(row + j) +
                                                     Traits::prefetch_distance * sizeof(float)),
                       ForWrite ? 1 : 0);
#else
  (void)row;
  (void)j;
#endif
}

// The prefetches of one block [b, b + W) of a pipelined sweep: `stream` (the row read from memory)
// and, for writing, y (the row written; none with streaming stores, which do not read their
// lines), each prefetch_distance ahead, one hint a cache line.
template <class Traits, int W>
KOKKOS_FORCEINLINE_FUNCTION void prefetch_block(const float* stream, const float* y, int b, bool streaming = false) {
  for (int q = 0; q < W; q += line_floats) {
    prefetch_ahead<Traits>(stream, b + q);
    if (!streaming) prefetch_ahead<Traits, true>(y, b + q);
  }
}

// y[l * V] = o[l] for the L values of one block of vector lane v (y points at its first column).
// With `streaming` on the host, a 64-byte-aligned block of 16 floats goes out as non-temporal
// stores (see RowTraits::stream_store_bytes), with the widest the build's ISA has; anything else
// (GPU, other block shapes, an unaligned row) is plain stores. Streaming stores are weakly ordered:
// a kernel that issued them ends with streaming_fence() before its results are read.
template <class Traits, int L>
KOKKOS_FORCEINLINE_FUNCTION void store_block(float* y, const float (&o)[L], bool streaming) {
#if defined(PTK_STREAMING_STORES)
  if constexpr (Traits::host && Traits::vector_length == 1 && L == line_floats) {
    if (streaming && (reinterpret_cast<std::uintptr_t>(y) & 63) == 0) {
#if defined(__AVX512F__)
      _mm512_stream_ps(y, _mm512_loadu_ps(o));
#elif defined(__AVX__)
      _mm256_stream_ps(y, _mm256_loadu_ps(o));
      _mm256_stream_ps(y + 8, _mm256_loadu_ps(o + 8));
#else
      for (int q = 0; q < L; q += 4) _mm_stream_ps(y + q, _mm_loadu_ps(o + q));
#endif
      return;
    }
  }
#else
  (void)streaming;
#endif
  for (int l = 0; l < L; ++l) y[l * Traits::vector_length] = o[l];
}

// Orders a thread's streaming stores before whatever follows (an sfence on the host; nothing where
// store_block never streams).
template <class Traits>
KOKKOS_FORCEINLINE_FUNCTION void streaming_fence(bool streaming) {
#if defined(PTK_STREAMING_STORES)
  if (Traits::host && streaming) _mm_sfence();
#else
  (void)streaming;
#endif
}

// The row walk of the software-pipelined forwards (softmax, layernorm, rmsnorm): team thread t
// of the team's `rows_per_team` rows takes rows first + t, first + t + team_size, ... in order;
// carry = start(first row), then carry = step(row, next, carry) for each of its rows, next being
// the thread's following row or -1 after its last, so a step can sweep `row` from cache while it
// streams `next` from memory.
template <class Team, class Start, class Step>
KOKKOS_INLINE_FUNCTION void walk_pipelined_rows(const Team& team, int rows, int rows_per_team, const Start& start,
                                                const Step& step) {
  const int first = team.league_rank() * rows_per_team;
  const int last = first + rows_per_team < rows ? first + rows_per_team : rows;
  const int threads = team.team_size();
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, threads), [&](int t) {
    int row = first + t;
    if (row >= last) return;
    auto carry = start(row);
    for (;;) {
      const int next = row + threads < last ? row + threads : -1;
      carry = step(row, next, carry);
      if (next < 0) return;
      row = next;
    }
  });
}

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

// y[j] = value(j) for the columns j in [begin, end) of vector lane v. A block's values are formed
// in a local array before any is stored, so the host's vectorized block needs no runtime check of
// y against value's inputs (y may alias them: each column is read before it is written). With
// `streaming`, full blocks go out through store_block's non-temporal stores.
template <class Traits, class F>
KOKKOS_INLINE_FUNCTION void lane_map(int begin, int end, int v, float* y, const F& value, bool streaming = false) {
  constexpr int L = Traits::lanes, V = Traits::vector_length, W = L * V;
  const int full = begin + (end - begin) / W * W;
  for (int b = begin; b < full; b += W) {
    float t[L];
    for (int l = 0; l < L; ++l) t[l] = value(b + l * V + v);
    store_block<Traits>(y + b + v, t, streaming);
  }
  if (full < end)
    for (int l = 0; l < L; ++l) {
      const int j = full + l * V + v;
      if (j < end) y[j] = value(j);
    }
}

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

// Software pipelining of the host's row sweeps: the sums of one row (the row that comes from
// memory) taken in the same sweep as the output of the row before it (which is in L1/L2), so the
// stream of loads never stops while a thread computes. lane_sum_map is lane_sum of term(j) over
// [begin, end) that also stores y[j] = value(j) for the same columns; lane_sum2_map the same for
// lane_sum2. A block's terms and values are all formed before any is stored (see lane_map), so y
// may alias the inputs of value (each column is read before it is written) but must not alias
// those of term. Blocking, compensation and merge as lane_sum: the sums are bitwise the same.
// `stream` is the row term reads from memory: each block prefetches its lines ahead, and y's lines
// for writing (prefetch_ahead; y's read-for-ownership otherwise stalls the stores: layernorm went
// from 36-38 to 46-59 GB/s with it), or, with `streaming`, writes y's blocks with non-temporal
// stores instead (store_block), for outputs too large for the cache.
template <class Traits, class Term, class Value>
KOKKOS_INLINE_FUNCTION Compensated lane_sum_map(int begin, int end, int v, const Term& term, float* y,
                                                const Value& value, const float* stream, bool streaming) {
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
      for (int l = 0; l < L; ++l) p[l] += t[l];
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
        y[j] = value(j);
      }
    }
    kahan_add(s, c, p);
  }
  return merge_slots(s, c);
}

template <class Traits, class Term, class Value>
KOKKOS_INLINE_FUNCTION CompensatedPair lane_sum2_map(int begin, int end, int v, const Term& term, float* y,
                                                     const Value& value, const float* stream, bool streaming) {
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
      for (int l = 0; l < L; ++l) {
        p1[l] += t1[l];
        p2[l] += t2[l];
      }
      // After the sums, so that store_block's branch does not split each term from its add: the
      // compiler contracts x * x + p into an FMA only within one block, and lane_sum (the same sums
      // for a team's first row) gets the FMA; bitwise equal sums need both the same.
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
        y[j] = value(j);
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

template <class Space>
using CompensatedSum = Merge<Compensated>;
template <class Space>
using CompensatedPairSum = Merge<CompensatedPair>;

// How a backward pass sums per-row terms over the rows into per-column gradients without atomics,
// deterministically: the rows are cut into `blocks` contiguous blocks of `rows_per_block` rows, one
// team each. Thread t of block b owns partial row p = b * team_size + t: it visits rows
// first + t, first + t + team_size, ... in order, adds each row's terms into an fp32 chunk row
// chunk(p, :) and, every `chunk_rows` rows and at the end, adds the chunk into the double row
// partial(p, :) (so a term passes through at most chunk_rows - 1 fp32 additions, and the many
// per-element conversions to double are paid once per chunk). A second kernel (add_column_sums)
// adds the partial rows column by column in partial order. The cut depends on the shape alone, so
// results are bitwise identical run to run, for any thread count.
struct ColumnPartials {
  int blocks, rows_per_block, team_size, partials;
};

template <class Space>
ColumnPartials column_partials(int rows, int cols) {
  using T = RowTraits<Space>;
  int want = (rows + T::min_rows_per_partial - 1) / T::min_rows_per_partial;
  if (want > T::max_partials) want = T::max_partials;
  if (want > T::max_partial_elements / cols) want = T::max_partial_elements / cols;
  if (want < 1) want = 1;
  int blocks = (want + T::team_size - 1) / T::team_size;
  const int rows_per_block = (rows + blocks - 1) / blocks;
  blocks = (rows + rows_per_block - 1) / rows_per_block;  // no empty block
  return {blocks, rows_per_block, T::team_size, blocks * T::team_size};
}

// The walk of one team thread over its rows (see ColumnPartials): zeroes its `width` accumulated
// columns (`partial` in double, `chunk` in fp32), calls row(r, chunk) for each of its rows, which
// adds that row's terms into chunk[0, width), and flushes chunk into partial every chunk_rows rows.
template <class Traits, class Team, class Row>
KOKKOS_INLINE_FUNCTION void walk_partial_rows(const Team& team, int first, int last, int t, int threads, int width,
                                              double* partial, float* chunk, const Row& row) {
  Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
    lane_sweep<Traits>(0, width, v, [&](int, int j) {
      partial[j] = 0.0;
      chunk[j] = 0.0f;
    });
  });
  const auto flush = [&]() {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, Traits::vector_length), [&](int v) {
      lane_sweep<Traits>(0, width, v, [&](int, int j) {
        partial[j] += static_cast<double>(chunk[j]);
        chunk[j] = 0.0f;
      });
    });
  };
  int in_chunk = 0;
  for (int r = first + t; r < last; r += threads) {
    row(r, chunk);
    if (++in_chunk == Traits::chunk_rows) {
      flush();
      in_chunk = 0;
    }
  }
  if (in_chunk > 0) flush();
}

// out[j] += sum over p of partial(p, offset + j), for j in [0, out.extent(0)): the sum in double in
// increasing p, added to out[j] in double and rounded once. 32 columns an iteration on the host
// (vectorized), one a thread on a GPU (coalesced).
template <class Space>
void add_column_sums(const char* label, const Kokkos::View<float*, Kokkos::LayoutRight, Space>& out,
                     const Kokkos::View<const double**, Kokkos::LayoutRight, Space>& partial, int offset) {
  constexpr int B = RowTraits<Space>::elementwise_block;
  const int cols = static_cast<int>(out.extent(0));
  const int partials = static_cast<int>(partial.extent(0));
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Space>(0, (cols + B - 1) / B), KOKKOS_LAMBDA(const int block) {
        const int begin = block * B;
        if (begin + B <= cols) {
          double s[B] = {};
          for (int p = 0; p < partials; ++p) {
            const double* row = &partial(p, offset + begin);
            for (int l = 0; l < B; ++l) s[l] += row[l];
          }
          for (int l = 0; l < B; ++l) out(begin + l) = static_cast<float>(static_cast<double>(out(begin + l)) + s[l]);
        } else {
          for (int j = begin; j < cols; ++j) {
            double s = 0;
            for (int p = 0; p < partials; ++p) s += partial(p, offset + j);
            out(j) = static_cast<float>(static_cast<double>(out(j)) + s);
          }
        }
      });
}

// The elementwise kernels (gelu, silu, forward and backward): y[i] = value(i) for i in [0, n), in
// iterations of RowTraits<Space>::elementwise_block consecutive elements (host: 32, a fixed-trip-count
// loop the compiler vectorizes; GPU: 1, for coalesced loads). A block's values are formed before any is
// stored, so y may be one of value's inputs (dx += ...) without a runtime overlap check.
template <class Space, class Value>
void elementwise(const char* label, std::size_t n, float* y, const Value& value) {
  constexpr int B = RowTraits<Space>::elementwise_block;
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Space>(0, (n + B - 1) / B), KOKKOS_LAMBDA(const std::size_t block) {
        const std::size_t begin = block * B;
        if (begin + B <= n) {
          float t[B];
          for (int l = 0; l < B; ++l) t[l] = value(begin + l);
          for (int l = 0; l < B; ++l) y[begin + l] = t[l];
        } else {
          for (std::size_t i = begin; i < n; ++i) y[i] = value(i);
        }
      });
}

}  // namespace ptk::kernels
