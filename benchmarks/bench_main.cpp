// ptk_bench: every sweep in one binary. `--quick` runs a smaller, shorter sweep; all other flags
// are Google Benchmark's (--benchmark_filter, --benchmark_out, ...).
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <type_traits>
#include <vector>

#include "bench_common.hpp"
#include "ptk/core/cpu_features.hpp"
#include "ptk/core/runtime.hpp"

namespace ptk::bench {

Sweep& sweep() {
  static Sweep s;
  return s;
}

void add(const std::string& family, const std::string& impl, const std::string& shape, Rate rate, double amount,
         std::function<std::function<void()>()> setup, double flops) {
  const auto name = family + "/" + impl + "/" + shape;
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    // Work buffers (a GPU GEMM's split-K sums, the norms' partial rows) taken from the cache after the first call,
    // as in a training step or a decode loop, not allocated every iteration.
    const ReuseBuffers reuse;
    const auto body = setup();
    body();  // first-touch pages, library plan creation, JIT; MinWarmUpTime below warms caches
    Kokkos::fence();
    for (auto _ : state) {
      body();
      Kokkos::fence();
    }
    state.counters[rate == Rate::gflops ? "GFLOP/s" : "GB/s"] =
        benchmark::Counter(amount / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    if (flops > 0) state.counters["GFLOPs"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  });
  b->UseRealTime()->Unit(benchmark::kMillisecond)->MinWarmUpTime(sweep().quick ? 0.03 : 0.1)->MinTime(sweep().quick ? 0.1 : 0.5);
}

void add_memcpy(const std::string& family, const std::string& shape, double bytes) {
  const auto n = static_cast<std::size_t>(bytes / 2 / sizeof(float));
  add(family, "memcpy", shape, Rate::gbytes, bytes, [n] {
    Kokkos::View<float*, Space> src("memcpy_src", n), dst("memcpy_dst", n);
    return [=] { Kokkos::deep_copy(dst, src); };
  });
}

void fill_uniform(const Vector<Space>& v, float lo, float hi, std::uint32_t seed) {
  Kokkos::parallel_for(
      "ptk::bench::fill_uniform", Kokkos::RangePolicy<Space>(0, v.extent(0)), KOKKOS_LAMBDA(const std::size_t i) {
        std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed * 2246822519u;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        v(i) = lo + (hi - lo) * static_cast<float>(h >> 8) * (1.0f / 16777216.0f);
      });
}

}  // namespace ptk::bench

// OpenBLAS 0.3.21 picks its kernels when the library loads: from CPUID, which on some of this
// project's machines (a newer Xeon behind a hypervisor) it does not recognise (Prescott SSE3
// kernels: 30-60 GFLOP/s instead of ~290 at n = 1024 on 2 cores), or from OPENBLAS_CORETYPE,
// which other machines preset to Haswell on an AVX-512 EPYC (AVX2 kernels: about half the speed
// of its SkylakeX ones there, 21 vs 11 ms at n = 1024 on one core). A fair comparison runs it at
// its best, so the core type follows the ISA this CPU has, whatever was inherited, and the
// program re-executes itself once before OpenBLAS loads. The report's context records both.
// Under OMP_PROC_BIND / OMP_PLACES / GOMP_CPU_AFFINITY, libgomp has pinned this thread to its first place before
// main, and the new process would inherit that one CPU: every OpenMP thread on it, half the GEMM's speed on two
// cores. The mask is widened to every CPU the cgroup allows first (the kernel intersects a full mask with it), and
// the new process's libgomp places its threads again; a narrower `taskset` is not kept (OMP_PLACES can say it).
// (A parent that loaded libgomp under the same variables, `ptk bench`, passes its pin on too: widened the same way.)
void run_openblas_at_its_best(char** argv) {
  const auto isa = ptk::cpu::vector_isa();
  const char* best = isa.avx512f ? "SkylakeX" : isa.avx2 ? "Haswell" : nullptr;
  const char* current = std::getenv("OPENBLAS_CORETYPE");
  const bool coretype = best && !(current && std::strcmp(current, best) == 0);
  const bool pinned = (std::getenv("OMP_PROC_BIND") || std::getenv("OMP_PLACES") || std::getenv("GOMP_CPU_AFFINITY")) &&
                      !std::getenv("PTK_BENCH_AFFINITY_WIDENED");
  if (!coretype && !pinned) return;
  if (coretype) {
    if (!std::getenv("PTK_OPENBLAS_CORETYPE_INHERITED")) setenv("PTK_OPENBLAS_CORETYPE_INHERITED", current ? current : "(unset)", 1);
    setenv("OPENBLAS_CORETYPE", best, 1);
  }
  if (pinned) {
    cpu_set_t all;
    std::memset(&all, 0xff, sizeof(all));
    sched_setaffinity(0, sizeof(all), &all);
    setenv("PTK_BENCH_AFFINITY_WIDENED", "1", 1);  // once
  }
  execv("/proc/self/exe", argv);  // returns only on failure: then OpenBLAS keeps its own choice
}

int main(int argc, char** argv) {
  run_openblas_at_its_best(argv);
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) ptk::bench::sweep().quick = true;
    else args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  // --- run-time device (ptk::runtime): no Kokkos abort trace in a GPU build without a GPU -------
  ptk::runtime::set_openmp_defaults();
  const auto device = ptk::runtime::device_from_env("ptk_bench");
  if (device.empty()) return 2;
  // The sweeps are compiled for the default execution space only; a GPU build cannot run them on the host.
  if (device == "host" && !std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::DefaultHostExecutionSpace>) {
    std::cerr << "ptk_bench: the sweeps of this build run on " << Kokkos::DefaultExecutionSpace::name()
              << "; for host numbers (PTK_DEVICE=host) use the cpu build\n";
    return 2;
  }
  if (!ptk::runtime::backend_choice_fits("ptk_bench")) return 2;
  if (const int status = ptk::runtime::check_can_initialize("ptk_bench")) return status;
  // ---------------------------------------------------------------------------------------------
  Kokkos::ScopeGuard kokkos(n, args.data());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  benchmark::AddCustomContext("ptk_execution_space", Kokkos::DefaultExecutionSpace::name());
  benchmark::AddCustomContext("ptk_concurrency", std::to_string(Kokkos::DefaultExecutionSpace().concurrency()));
  benchmark::AddCustomContext("kokkos_version", std::to_string(KOKKOS_VERSION));
  benchmark::AddCustomContext("ptk_sweep", ptk::bench::sweep().quick ? "quick" : "full");
  if (const char* core = std::getenv("OPENBLAS_CORETYPE")) benchmark::AddCustomContext("openblas_coretype", core);
  if (const char* core = std::getenv("PTK_OPENBLAS_CORETYPE_INHERITED"))
    benchmark::AddCustomContext("openblas_coretype_inherited", core);

  ptk::bench::register_matmul();
  ptk::bench::register_matmul_decode();
  ptk::bench::register_softmax();
  ptk::bench::register_layernorm();
  ptk::bench::register_rmsnorm();
  ptk::bench::register_attention();
  ptk::bench::register_activations();
  ptk::bench::register_decode();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
