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
