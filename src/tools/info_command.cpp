// ptk info: what this build of ptk runs on.
#include <Kokkos_Core.hpp>

#include <fstream>
#include <iostream>
#include <string>

#include "commands.hpp"

namespace ptk::tools {
namespace {

std::string backends() {
  std::string s;
  const auto add = [&](const char* name) { s += (s.empty() ? "" : ", ") + std::string(name); };
#if defined(KOKKOS_ENABLE_CUDA)
  add("CUDA");
#endif
#if defined(KOKKOS_ENABLE_HIP)
  add("HIP");
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  add("OpenMP");
#endif
#if defined(KOKKOS_ENABLE_THREADS)
  add("Threads");
#endif
#if defined(KOKKOS_ENABLE_SERIAL)
  add("Serial");
#endif
  return s;
}

// The widest vector ISA the compiler was allowed to use for this binary (-march), and whether the
// CPU running it has it: a native build carried to an older CPU dies of SIGILL, not of a message.
std::string compiled_isa() {
#if defined(__AVX512F__)
  const char* isa = "AVX-512";
  const bool here = __builtin_cpu_supports("avx512f");
#elif defined(__AVX2__)
  const char* isa = "AVX2";
  const bool here = __builtin_cpu_supports("avx2");
#elif defined(__AVX__)
  const char* isa = "AVX";
  const bool here = __builtin_cpu_supports("avx");
#elif defined(__x86_64__)
  const char* isa = "SSE2 (baseline x86-64)";
  const bool here = true;
#elif defined(__ARM_NEON)
  const char* isa = "NEON";
  const bool here = true;
#else
  const char* isa = "generic";
  const bool here = true;
#endif
  return std::string(isa) + (here ? "" : " (this CPU lacks it)");
}

std::string host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  long long kib = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemTotal:") return std::to_string(kib / (1024 * 1024)) + " GiB";
  return "unknown";
}

}  // namespace

int info_command(const Args& args) {
  if (!args.empty()) throw UsageError{"info takes no arguments, got '" + args[0] + "'"};
  std::cout << "ptk " PTK_VERSION << '\n'
            << "Kokkos version:          " << KOKKOS_VERSION / 10000 << '.' << KOKKOS_VERSION / 100 % 100 << '.'
            << KOKKOS_VERSION % 100 << '\n'
            << "backends built in:       " << backends() << '\n'
            << "host ISA compiled for:   " << compiled_isa() << '\n'
            << "default execution space: " << Kokkos::DefaultExecutionSpace::name() << " (ptk op --device default)\n"
            << "host execution space:    " << Kokkos::DefaultHostExecutionSpace::name() << " (ptk op --device host)\n"
            << "concurrency:             " << Kokkos::DefaultExecutionSpace().concurrency() << " (default), "
            << Kokkos::DefaultHostExecutionSpace().concurrency() << " (host)\n"
            << "host memory:             " << host_memory() << "\n\n"
            << "Kokkos configuration (devices, with names and memory, are listed per backend):\n";
  Kokkos::print_configuration(std::cout, true);
  return 0;
}

}  // namespace ptk::tools
