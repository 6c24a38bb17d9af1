// The parity suite's main: Kokkos lives for the whole run, around all tests.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <optional>

#include "ptk/core/runtime.hpp"
#include "ptk/dist/comm.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // ctest discovers tests by parsing --gtest_list_tests output: listing needs no Kokkos (nor a
  // GPU), and Kokkos must not print into it. Unbound threads, as Kokkos advises for unit tests
  // (unless the user configured binding). PTK_DEVICE=host|default picks the spaces tested
  // (parity.hpp); a GPU build on a machine without its GPU exits 2 with one line.
  ptk::runtime::set_openmp_defaults();
  ptk::runtime::keep_freed_memory();
  // Under mpirun (ctest comm_mpi) MPI starts before Kokkos and ends after it; otherwise the world is one rank.
  std::optional<ptk::dist::Session> mpi;
  std::optional<Kokkos::ScopeGuard> kokkos;
  if (!::testing::GTEST_FLAG(list_tests)) {
    mpi.emplace(&argc, &argv);
    if (ptk::runtime::device_from_env("ptk_tests").empty()) return 2;
    if (!ptk::runtime::backend_choice_fits("ptk_tests")) return 2;  // PTK_BACKEND names this build's or auto
    if (const int status = ptk::runtime::check_can_initialize("ptk_tests")) return status;
    // PTK_TUNING=gpu: OpenMP runs the GPU tuning (parity.hpp, the autograd); its teams need that many threads.
    if (ptk::runtime::tuning_from_env("ptk_tests").empty()) return 2;
    ptk::runtime::set_gpu_tuning_threads();
    kokkos.emplace(argc, argv);
  }
  return RUN_ALL_TESTS();
}
