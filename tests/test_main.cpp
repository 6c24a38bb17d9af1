// The parity suite's main: Kokkos lives for the whole run, around all tests.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <optional>

#include "ptk/core/runtime.hpp"
#if defined(PTK_GPU_GEOMETRY_ON_HOST)
#include <omp.h>

#include "ptk/kernels/tuning.hpp"
#endif

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // ctest discovers tests by parsing --gtest_list_tests output: listing needs no Kokkos (nor a
  // GPU), and Kokkos must not print into it. Unbound threads, as Kokkos advises for unit tests
  // (unless the user configured binding). PTK_DEVICE=host|default picks the spaces tested
  // (parity.hpp); a GPU build on a machine without its GPU exits 2 with one line.
  ptk::runtime::set_openmp_defaults();
  ptk::runtime::keep_freed_memory();
  std::optional<Kokkos::ScopeGuard> kokkos;
  if (!::testing::GTEST_FLAG(list_tests)) {
    if (ptk::runtime::device_from_env("ptk_tests").empty()) return 2;
    if (const int status = ptk::runtime::check_can_initialize("ptk_tests")) return status;
#if defined(PTK_GPU_GEOMETRY_ON_HOST)
    // The GPU geometry's teams need that many OpenMP threads in Kokkos' pool (oversubscribed on a
    // small machine: correct, only slower).
    if (omp_get_max_threads() < ptk::kernels::emulated_gpu_team) omp_set_num_threads(ptk::kernels::emulated_gpu_team);
#endif
    kokkos.emplace(argc, argv);
  }
  return RUN_ALL_TESTS();
}
