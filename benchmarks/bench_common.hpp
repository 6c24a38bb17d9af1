#pragma once
// Shared by the sweeps: benchmark names are <family>/<impl>/<shape>, the impl `ptk` is ptk's own
// kernel, every other impl a comparison; each entry carries one rate counter, GFLOP/s or GB/s
// (bytes = read + write). scripts/bench_report.py builds report.md from exactly this convention.
#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "ptk/core/tensor.hpp"
#include "ptk/ops/convert.hpp"

namespace ptk::bench {

using Space = Kokkos::DefaultExecutionSpace;

struct Sweep {
  bool quick = false;
};
Sweep& sweep();

enum class Rate { gflops, gbytes };

// Registers `body` (which runs one iteration, asynchronously on a GPU) under family/impl/shape and
// times it with a fence after every iteration; `amount` is FLOPs or bytes per iteration.
// `setup` runs once before timing and returns the body, so buffers live only while it runs.
// `flops` > 0 on a GB/s entry adds a "GFLOPs" counter (GFLOP/s, named so that the report keeps GB/s).
void add(const std::string& family, const std::string& impl, const std::string& shape, Rate rate, double amount,
         std::function<std::function<void()>()> setup, double flops = 0);

// The bandwidth ceiling for a family's shape: Kokkos::deep_copy of `bytes / 2` bytes (a parallel
// memcpy on the host, a device-to-device copy on a GPU), reported as read + write = `bytes`.
void add_memcpy(const std::string& family, const std::string& shape, double bytes);

// Random values in [lo, hi), deterministic, generated in place on the device.
void fill_uniform(const Vector<Space>& v, float lo, float hi, std::uint32_t seed);

inline Tensor<Space> random_tensor(Shape shape, std::uint32_t seed, float lo = -1, float hi = 1) {
  Tensor<Space> t(std::move(shape));
  fill_uniform(t.flat(), lo, hi, seed);
  return t;
}

// A type passed as a value, for generic lambdas over the element type.
template <class T>
struct TypeTag {
  using type = T;
};

// The same values rounded to bf16: the input of a row op's `ptk_bf16` impl, which runs the kernel over bf16 X and Y.
// Such an impl is credited with the f32 impl's bytes, so that its rate over `ptk`'s is the speedup of storing bf16.
inline Tensor<Space, bf16> random_bf16(Shape shape, std::uint32_t seed, float lo = -1, float hi = 1) {
  return ops::cast<bf16>(random_tensor(std::move(shape), seed, lo, hi));
}

void register_matmul();
void register_matmul_decode();
void register_softmax();
void register_layernorm();
void register_rmsnorm();
void register_attention();
void register_activations();
void register_decode();

}  // namespace ptk::bench
