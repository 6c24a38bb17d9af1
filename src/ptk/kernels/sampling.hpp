#pragma once
// sample: token[b] from logits[b, V]: p_i ∝ exp((l_i − max l) / temperature), kept: the top_k largest (0: all) and
//   of those the smallest most-probable set with mass >= top_p; token = first i with Σ_{j<=i} kept p_j > u[b] · Σ kept p.
#include <Kokkos_Core.hpp>

#include <cstdint>

#include "ptk/core/tensor.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/kernels/detail/fast_exp.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

struct SamplingParams {
  float temperature;  // 0: greedy (the first index of the largest logit)
  int top_k;          // 0: no limit
  float top_p;        // 1: no limit
};

// A team per row; everything but the uniform draw u (made on the host, from a portable generator) runs
// here, and only the token ids go back. The top-k and top-p thresholds are found by bisection over
// the bit patterns of the non-negative floats p (ordered as the values are): 31 counting (or summing)
// passes over the row give the exact k-th largest p, or the exact smallest p of the top-p set,
// without sorting V values. Ties at a threshold are all kept. probs (the kept, normalized
// distribution) is the row's workspace and, for the tests, an output; its values are the row's
// draw weights. A row whose logits hold a NaN, or are all −inf, gets token −1 (the op reports it).
template <class Space, class Tune = Tuning<Space>>
struct Sample {
  using Policy = Kokkos::TeamPolicy<Space>;
  using Team = typename Policy::member_type;

  IndexVector<Space> tokens;
  Matrix<Space> probs;
  ConstMatrix<Space> logits;
  ConstVector<Space> u;
  SamplingParams params;

  KOKKOS_INLINE_FUNCTION static float from_bits(std::int32_t b) {
    union {
      std::int32_t i;
      float f;
    } x{b};
    return x.f;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int b = team.league_rank();
    const int V = static_cast<int>(logits.extent(1));
    float max = -__builtin_huge_valf();
    int nans = 0;
    Kokkos::parallel_reduce(Kokkos::TeamThreadRange(team, V), [&](int i, float& m) {
      const float l = logits(b, i);
      m = l > m ? l : m;
    }, Kokkos::Max<float>(max));
    Kokkos::parallel_reduce(Kokkos::TeamThreadRange(team, V), [&](int i, int& n) { n += logits(b, i) != logits(b, i); },
                            nans);
    if (nans > 0 || max == -__builtin_huge_valf()) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() { tokens(b) = -1; });
      return;
    }
    if (params.temperature == 0.0f) return greedy(team, b, V, max);
    weigh(team, b, V, max);
    if (params.top_k > 0 && params.top_k < V) keep_at_least(team, b, V, count_of(), static_cast<float>(params.top_k));
    if (params.top_p < 1.0f) keep_at_least(team, b, V, mass_of(), params.top_p * total(team, b, V));
    draw(team, b, V);
  }

  KOKKOS_INLINE_FUNCTION void greedy(const Team& team, int b, int V, float max) const {
    int first = V;
    Kokkos::parallel_reduce(Kokkos::TeamThreadRange(team, V), [&](int i, int& f) {
      if (logits(b, i) == max && i < f) f = i;
    }, Kokkos::Min<int>(first));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, V), [&](int i) { probs(b, i) = i == first ? 1.0f : 0.0f; });
    Kokkos::single(Kokkos::PerTeam(team), [&]() { tokens(b) = first; });
  }

  // probs = exp((l − max) / temperature): the largest is exactly 1.
  KOKKOS_INLINE_FUNCTION void weigh(const Team& team, int b, int V, float max) const {
    const float inv_t = 1.0f / params.temperature;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, V),
                         [&](int i) { probs(b, i) = fast_exp_clamped((logits(b, i) - max) * inv_t); });
    team.team_barrier();
  }

  // What a threshold keeps: how many values (top-k), or how much probability (top-p), are >= it.
  struct Count {
    KOKKOS_INLINE_FUNCTION float operator()(float) const { return 1.0f; }
  };
  struct Mass {
    KOKKOS_INLINE_FUNCTION float operator()(float p) const { return p; }
  };
  KOKKOS_INLINE_FUNCTION static Count count_of() { return {}; }
  KOKKOS_INLINE_FUNCTION static Mass mass_of() { return {}; }

  KOKKOS_INLINE_FUNCTION float total(const Team& team, int b, int V) const {
    float t = 0.0f;
    Kokkos::parallel_reduce(Kokkos::TeamThreadRange(team, V), [&](int i, float& s) { s += probs(b, i); }, t);
    return t;
  }

  // Zeroes every p below the largest threshold τ whose kept measure Σ_{p >= τ} measure(p) is still
  // >= need (τ = 0 keeps everything, so one exists); τ is searched over float bit patterns in [0, 1].
  template <class Measure>
  KOKKOS_INLINE_FUNCTION void keep_at_least(const Team& team, int b, int V, Measure measure, float need) const {
    std::int32_t lo = 0, hi = 0x3f800000;  // the bits of 0.0f and 1.0f
    while (lo < hi) {
      const std::int32_t mid = lo + (hi - lo + 1) / 2;
      const float tau = from_bits(mid);
      float kept = 0.0f;
      Kokkos::parallel_reduce(Kokkos::TeamThreadRange(team, V), [&](int i, float& s) {
        const float p = probs(b, i);
        s += p >= tau ? measure(p) : 0.0f;
      }, kept);
      if (kept >= need) lo = mid;
      else hi = mid - 1;
    }
    const float tau = from_bits(lo);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, V), [&](int i) {
      if (probs(b, i) < tau) probs(b, i) = 0.0f;
    });
    team.team_barrier();
  }

  // The token is the first index whose running sum of the kept weights passes u · total (a serial walk:
  // the order of the additions is the index order, the same on every space); then probs is normalized.
  KOKKOS_INLINE_FUNCTION void draw(const Team& team, int b, int V) const {
    const float sum = total(team, b, V);
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      const float target = u(b) * sum;
      float run = 0.0f;
      int token = -1;
      for (int i = 0; i < V && token < 0; ++i) {
        run += probs(b, i);
        if (run > target && probs(b, i) > 0.0f) token = i;
      }
      if (token < 0)  // rounding left the target at the very top: the last kept index
        for (int i = V - 1; i >= 0 && token < 0; --i)
          if (probs(b, i) > 0.0f) token = i;
      tokens(b) = token;
    });
    team.team_barrier();  // the walk reads probs; the other threads scale them next
    const float inv = 1.0f / sum;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, V), [&](int i) { probs(b, i) *= inv; });
  }
};

template <class Space, class Tune = Tuning<Space>>
void sample(const IndexVector<Space>& tokens, const Matrix<Space>& probs, const ConstMatrix<Space>& logits,
            const ConstVector<Space>& u, const SamplingParams& params) {
  typename Sample<Space, Tune>::Policy policy(static_cast<int>(logits.extent(0)), Tune::sampling::team_size);
  Kokkos::parallel_for("ptk::sample", policy, Sample<Space, Tune>{tokens, probs, logits, u, params});
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_SAMPLING_TUNED_INSTANCES(EXT, Space, Tune) \
  EXT template void sample<Space, Tune>(const IndexVector<Space>& tokens, const Matrix<Space>& probs, const ConstMatrix<Space>& logits, const ConstVector<Space>& u, const SamplingParams& params);
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_SAMPLING_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
