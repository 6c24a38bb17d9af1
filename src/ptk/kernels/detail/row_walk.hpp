#pragma once
// How the row ops walk their rows and columns (the mapping is described in tuning.hpp, "Row ops"):
// the team policy, the pipelined row walk of the forwards, the per-lane column sweeps, and the
// elementwise loop of the activations.
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <type_traits>

#include "ptk/kernels/detail/memory_hints.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

// Traits with `lanes` replaced by N (all else kept), for a sweep that wants more or fewer slots.
template <class Traits, int N>
struct WithLanes : Traits {
  static constexpr int lanes = N;
};

// A team of `team_size` threads, each with `vector_length` lanes, for every `rows_a_team` rows.
template <class Space, class Traits>
Kokkos::TeamPolicy<Space> row_policy(int rows, int rows_a_team = Traits::rows_per_team) {
  const int league = (rows + rows_a_team - 1) / rows_a_team;
  return Kokkos::TeamPolicy<Space>(league, Traits::team_size, Traits::vector_length);
}

// Rows a team takes in the software-pipelined forward sweeps (softmax, layernorm, rmsnorm: the
// sweep that writes one row reads the next), whose pipeline restarts at each team: the host gives
// a team a long run of rows, leaving pipeline_teams_per_thread teams a thread; a GPU keeps
// rows_per_team (a row a warp).
template <class Space, class Traits>
int pipeline_rows(int rows) {
  if (Traits::pipeline_teams_per_thread == 0) return Traits::rows_per_team;
  const int teams = Traits::pipeline_teams_per_thread * Space().concurrency();
  const int run = (rows + teams - 1) / teams;
  return run > Traits::rows_per_team ? run : Traits::rows_per_team;
}

// Whether a pipelined forward writes `out` with streaming stores (Traits::stream_store_bytes): float outputs only
// (a 16-bit row is rounded on its way out, with plain stores).
template <class Traits, class Output>
bool stream_stores(const Output& out) {
  return std::is_same_v<typename Output::non_const_value_type, float> && Traits::stream_store_bytes > 0 &&
         out.span() * sizeof(typename Output::value_type) >= Traits::stream_store_bytes;
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
// `streaming`, full blocks go out through store_block's non-temporal stores. A 16-bit y (O: bf16, f16) takes
// each value rounded to nearest even.
template <class Traits, class F, class O>
KOKKOS_INLINE_FUNCTION void lane_map(int begin, int end, int v, O* y, const F& value, bool streaming = false) {
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
      if (j < end) y[j] = round_to<O>(value(j));
    }
}

// The elementwise kernels (gelu, silu, forward and backward): y[i] = value(i) for i in [0, n), in
// iterations of Rows::elementwise_block consecutive elements (host: 32, a fixed-trip-count loop the
// compiler vectorizes; GPU: 1, for coalesced loads). A block's values are formed before any is
// stored, so y may be one of value's inputs (dx += ...) without a runtime overlap check. A 16-bit y (O: bf16, f16)
// takes each value rounded to nearest even.
template <class Space, class Rows, class Value, class O>
void elementwise(const char* label, std::size_t n, O* y, const Value& value) {
  constexpr int B = Rows::elementwise_block;
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Space>(0, (n + B - 1) / B), KOKKOS_LAMBDA(const std::size_t block) {
        const std::size_t begin = block * B;
        if (begin + B <= n) {
          float t[B];
          for (int l = 0; l < B; ++l) t[l] = value(begin + l);
          store_rounded(y + begin, t);
        } else {
          for (std::size_t i = begin; i < n; ++i) y[i] = round_to<O>(value(i));
        }
      });
}

}  // namespace ptk::kernels
