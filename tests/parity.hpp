#pragma once
// What every parity test shares: the execution spaces this build tests, random data, and a
// comparison that reports the first differing elements with their indices.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ptk/core/compat.hpp"
#include "ptk/core/dtype.hpp"
#include "ptk/core/error.hpp"
#include "ptk/core/runtime.hpp"
#include "ptk/kernels/tuning.hpp"
#include "tolerances.hpp"

namespace ptk::test {

// Every execution space the build enables; each parity test runs on all of them, each with its own
// tuning. A process under PTK_TUNING=gpu (ctest label `geometry`) runs OpenMP alone, with the GPU
// tuning (kernels::EmulatedGpuTuning): the kernels' GPU code paths against the same oracle.
// (The debug build's Kokkos has no Serial: docs/testing.md.)
using Spaces = decltype(std::tuple_cat(
#if defined(KOKKOS_ENABLE_CUDA)
    std::tuple<Kokkos::Cuda>{},
#endif
#if defined(KOKKOS_ENABLE_HIP)
    std::tuple<compat::HIP>{},
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
    std::tuple<Kokkos::OpenMP>{},
#endif
#if defined(KOKKOS_ENABLE_SERIAL)
    std::tuple<Kokkos::Serial>{},
#endif
    std::tuple<>{}));

// One (space, tuning) pair: a test reads `type` (the space) and `tune` (the kernels' tuning).
using kernels::Config;

// PTK_DEVICE=host tests only the host spaces, PTK_DEVICE=default only the default space (the GPU
// in a GPU build); unset, every space.
template <class Space>
bool space_selected() {
  const char* d = std::getenv("PTK_DEVICE");
  const std::string device = d ? d : "";
  if (device == "host") return Kokkos::SpaceAccessibility<Space, Kokkos::HostSpace>::accessible;
  if (device == "default") return std::is_same_v<Space, Kokkos::DefaultExecutionSpace>;
  return true;
}

// Calls f(Config<Space, Tune>{}) for every selected space with its tuning, or, in a process that runs
// the GPU tuning on the host, for OpenMP with that tuning alone.
template <class F>
void for_each_space(F&& f) {
#if defined(KOKKOS_ENABLE_OPENMP)
  if (runtime::host_runs_gpu_tuning()) {
    f(Config<Kokkos::OpenMP, kernels::EmulatedGpuTuning>{});
    return;
  }
#endif
  std::apply([&](auto... spaces) { ((space_selected<decltype(spaces)>() ? (void)f(Config<decltype(spaces)>{}) : void()), ...); },
             Spaces{});
}

template <class T>
struct TypeTag {
  using type = T;
};

// The 16-bit runs of a parity test written over the element type: f(space, TypeTag<E>{}) for every space
// for_each_space selects and E = bf16, then f16.
template <class F>
void for_each_space_16bit(F&& f) {
  for_each_space([&](auto space) {
    f(space, TypeTag<bf16>{});
    f(space, TypeTag<f16>{});
  });
}

// Deterministic per case: the seed mixes the case name so cases draw different data.
inline std::vector<float> uniform(std::int64_t n, float lo, float hi, const std::string& seed) {
  std::mt19937 gen(static_cast<std::uint32_t>(std::hash<std::string>{}(seed)));
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

// x rounded to a one-value type E (f32, bf16, f16), and such values back as float (exact): a stored tensor's host
// data, and the values the oracle is applied to.
template <class E>
std::vector<E> rounded(const std::vector<float>& x) {
  std::vector<E> r;
  r.reserve(x.size());
  for (float a : x) r.push_back(round_to<E>(a));
  return r;
}
template <class E>
std::vector<float> values_of(const std::vector<E>& x) {
  std::vector<float> r;
  r.reserve(x.size());
  for (const E& a : x) {
    if constexpr (std::is_same_v<E, float>) r.push_back(a);
    else r.push_back(to_float(a));
  }
  return r;
}
// x rounded to E in place (the values a stored input holds; nothing changes for f32).
template <class E>
void round_in_place(std::vector<float>& x) {
  if constexpr (!std::is_same_v<E, float>) x = values_of(rounded<E>(x));
}

// The one-value types a kernel written over E is tested in; the name in a test's output.
template <class E>
const char* element_name() {
  return std::is_same_v<E, float> ? "f32" : std::is_same_v<E, bf16> ? "bf16" : "f16";
}

// tolerance::stored_output for an output stored as E (f32: t unchanged).
template <class E>
Tolerance stored_output(const Tolerance& t) {
  if constexpr (std::is_same_v<E, bf16>) return tolerance::stored_output(t, 0x1p-8, 0.0);
  else if constexpr (std::is_same_v<E, f16>) return tolerance::stored_output(t, 0x1p-11, 0x1p-25);
  else return t;
}

inline std::string index_string(std::int64_t flat, const Shape& shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return to_string(idx);
}

// NaN matches NaN and an infinity matches the same infinity; anything else must be within the
// allowed distance of the reference. The message lists the first five misses and the worst one.
inline ::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want,
                                            const Shape& shape, const std::function<double(std::size_t)>& allowed) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != reference size " << want.size();
  std::ostringstream first;
  std::size_t misses = 0, worst = 0;
  double worst_excess = -1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    bool ok;
    if (std::isnan(w) || std::isnan(g)) ok = std::isnan(w) && std::isnan(g);
    else if (std::isinf(w) || std::isinf(g)) ok = g == w;
    else ok = std::fabs(g - w) <= allowed(i);
    if (ok) continue;
    const double excess = std::isfinite(g - w) ? std::fabs(g - w) / allowed(i) : HUGE_VAL;
    if (excess > worst_excess) worst_excess = excess, worst = i;
    if (misses++ < 5)
      first << "\n  at " << index_string(static_cast<std::int64_t>(i), shape) << ": got " << g << ", want " << w
            << " (|diff| " << std::fabs(g - w) << ", allowed " << allowed(i) << ")";
  }
  if (misses == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << misses << " of " << got.size() << " elements of shape " << to_string(shape)
                                       << " differ from the reference; first:" << first.str() << "\n  worst at "
                                       << index_string(static_cast<std::int64_t>(worst), shape) << ": got "
                                       << got[worst] << ", want " << want[worst];
}

inline ::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want,
                                            const Shape& shape, const Tolerance& tol) {
  return all_close(got, want, shape, [&](std::size_t i) { return tol.allowed(want[i]); });
}

// Test-name-safe: "2x3x4".
inline std::string shape_name(const Shape& shape) {
  std::string s;
  for (auto d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

}  // namespace ptk::test
