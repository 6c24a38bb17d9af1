// The parity suite's main: Kokkos lives for the whole run, around all tests.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <optional>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // ctest discovers tests by parsing --gtest_list_tests output: listing needs no Kokkos (nor a
  // GPU), and Kokkos must not print into it. Unbound threads, as Kokkos advises for unit tests.
  setenv("OMP_PROC_BIND", "false", 0);
  std::optional<Kokkos::ScopeGuard> kokkos;
  if (!::testing::GTEST_FLAG(list_tests)) kokkos.emplace(argc, argv);
  return RUN_ALL_TESTS();
}
