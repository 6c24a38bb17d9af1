#pragma once
// global_norm:  stats[0] = s · sqrt(Σ over the gradient chunks Σ g²), stats[1] = s · min(1, max_norm / stats[0]) (s when
//               max_norm <= 0): the clipping factor, left on the device for adamw_update; s = 1 / the loss scale
//               (1 unscaled). stats[2], where stats has it: 1 when the norm is not finite and skip_nonfinite is set.
// adamw_update: g = grad·stats[1]; m = β1 m + (1-β1) g; v = β2 v + (1-β2) g²;
//               param -= lr (m / c1 / (sqrt(v / c2) + eps) + weight_decay · param), c1, c2 the bias corrections;
//               nothing when stats[2] is 1 (a skipped step: param, m and v stay as they were); with E bf16 or f16,
//               copy = param rounded to E as well (the copy a mixed-precision forward multiplies with, ag::Autocast).
// scale:        g *= factor.
#include <Kokkos_Core.hpp>

#include <type_traits>

#include "ptk/core/compat.hpp"
#include "ptk/core/dtype.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/core/tensor.hpp"

namespace ptk::kernels {

// A piece of one parameter's gradient. Cutting every gradient into pieces of at most grad_chunk_size
// floats gives the norm's first pass enough teams on a GPU, and bounds each partial sum's length.
struct GradChunk {
  const float* data;
  int size;
};
constexpr int grad_chunk_size = 1 << 16;

// Two passes: a team per chunk sums its squares in double into partial(c); one team then adds the
// partials in chunk order. The result depends on the chunking alone: the same run to run.
template <class Space>
void global_norm(const Vector<Space>& stats, const Kokkos::View<double*, Space>& partial,
                 const Kokkos::View<GradChunk*, Space>& chunks, float max_norm, float inv_scale, bool skip_nonfinite) {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  const int n = static_cast<int>(chunks.extent(0));
  if (n > 0)
    Kokkos::parallel_for(
        "ptk::global_norm_chunks", Kokkos::TeamPolicy<Space>(n, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& team) {
          const GradChunk chunk = chunks(team.league_rank());
          double sum = 0.0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, chunk.size),
              [&](int i, double& s) { s += static_cast<double>(chunk.data[i]) * static_cast<double>(chunk.data[i]); },
              sum);
          Kokkos::single(Kokkos::PerTeam(team), [&]() { partial(team.league_rank()) = sum; });
        });
  Kokkos::parallel_for(
      "ptk::global_norm", Kokkos::RangePolicy<Space>(0, 1), KOKKOS_LAMBDA(const int) {
        double squares = 0.0;
        for (int c = 0; c < n; ++c) squares += partial(c);
        const double norm = compat::sqrt(squares) * inv_scale;
        const bool skip = skip_nonfinite && !(norm <= 1.7976931348623157e308);  // inf or NaN
        stats(0) = static_cast<float>(norm);
        stats(1) = skip ? 0.0f : max_norm > 0 && norm > max_norm ? static_cast<float>(max_norm / norm * inv_scale) : inv_scale;
        if (stats.extent(0) > 2) stats(2) = skip ? 1.0f : 0.0f;
      });
}

// g *= factor: a data-parallel rank's gradient weighted by its share of the batch before the ranks' sum.
template <class Space>
void scale(const Vector<Space>& g, float factor) {
  Kokkos::parallel_for(
      "ptk::scale", Kokkos::RangePolicy<Space>(0, g.extent(0)), KOKKOS_LAMBDA(const std::size_t i) { g(i) *= factor; });
}

struct AdamwStep {
  float lr, beta1, beta2, eps, weight_decay;
  float correction1, correction2;  // 1 - β1^t, 1 - β2^t
};

// copy[i] = p rounded to E; nothing for E = float (no copy). A function rather than an `if constexpr` in the
// kernel's body: nvcc refuses a device lambda whose first use of a capture is inside one.
template <class E>
KOKKOS_INLINE_FUNCTION void store_copy(E* copy, int i, float p) {
  if constexpr (!std::is_same_v<E, float>) copy[i] = round_to<E>(p);
}

// One value's step (the math above) from its scaled gradient g: m and v updated in place, the new parameter returned.
KOKKOS_INLINE_FUNCTION float adamw_value(float& m, float& v, float param, float g, const AdamwStep& s) {
  m = s.beta1 * m + (1.0f - s.beta1) * g;
  v = s.beta2 * v + (1.0f - s.beta2) * g * g;
  const float update = (m / s.correction1) / (compat::sqrt(v / s.correction2) + s.eps);
  return param - s.lr * (update + s.weight_decay * param);
}

template <class Space, class E = float>
void adamw_update(const Vector<Space>& param, const Vector<Space>& m, const Vector<Space>& v,
                  const ConstVector<Space>& grad, const AdamwStep& s, const ConstVector<Space>& stats,
                  const Kokkos::View<E*, Kokkos::LayoutRight, Space>& copy = {}) {
  const bool flagged = stats.extent(0) > 2;
  const int n = static_cast<int>(param.extent(0));
  E* const cp = copy.data();
  if constexpr (is_host_space_v<Space>) {
    // A work item a run of values over raw pointers, the stats read once: the loop vectorizes. A value a work item
    // stayed scalar (stats reloaded after every store), about 12 cycles a value: 23 ms of a GPT-2 L6 step, twice a
    // plain loop's time. The same bits: division and sqrt round correctly in every lane, and this unit is compiled
    // without contraction (src/CMakeLists.txt).
    constexpr int run = 4096;
    float *pp = param.data(), *mp = m.data(), *vp = v.data();
    const float* gp = grad.data();
    Kokkos::parallel_for(
        "ptk::adamw_update", Kokkos::RangePolicy<Space>(0, (n + run - 1) / run), KOKKOS_LAMBDA(const int r) {
          if (flagged && stats(2) != 0.0f) return;
          const float scale = stats(1);
          const int end = n - r * run < run ? n : (r + 1) * run;
          PTK_SIMD_LOOP
          for (int i = r * run; i < end; ++i) {
            const float p = adamw_value(mp[i], vp[i], pp[i], gp[i] * scale, s);
            pp[i] = p;
            store_copy<E>(cp, i, p);
          }
        });
  } else {
    Kokkos::parallel_for(
        "ptk::adamw_update", Kokkos::RangePolicy<Space>(0, n), KOKKOS_LAMBDA(const int i) {
          if (flagged && stats(2) != 0.0f) return;
          const float p = adamw_value(m(i), v(i), param(i), grad(i) * stats(1), s);
          param(i) = p;
          store_copy<E>(cp, i, p);
        });
  }
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_ADAMW_SPACE_INSTANCES(EXT, Space) \
  EXT template void global_norm<Space>(const Vector<Space>& stats, const Kokkos::View<double*, Space>& partial, const Kokkos::View<GradChunk*, Space>& chunks, float max_norm, float inv_scale, bool skip_nonfinite); \
  EXT template void scale<Space>(const Vector<Space>& g, float factor); \
  EXT template void adamw_update<Space, float>(const Vector<Space>& param, const Vector<Space>& m, const Vector<Space>& v, const ConstVector<Space>& grad, const AdamwStep& s, const ConstVector<Space>& stats, const Kokkos::View<float*, Kokkos::LayoutRight, Space>& copy); \
  EXT template void adamw_update<Space, bf16>(const Vector<Space>& param, const Vector<Space>& m, const Vector<Space>& v, const ConstVector<Space>& grad, const AdamwStep& s, const ConstVector<Space>& stats, const Kokkos::View<bf16*, Kokkos::LayoutRight, Space>& copy); \
  EXT template void adamw_update<Space, f16>(const Vector<Space>& param, const Vector<Space>& m, const Vector<Space>& v, const ConstVector<Space>& grad, const AdamwStep& s, const ConstVector<Space>& stats, const Kokkos::View<f16*, Kokkos::LayoutRight, Space>& copy);
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_ADAMW_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
