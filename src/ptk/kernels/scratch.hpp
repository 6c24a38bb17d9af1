#pragma once
// A kernel's team-scratch layout is declared once, as a function take_scratch(arena, ...) that
// takes its parts from an arena in order; the launch runs it with ScratchSize (the bytes to
// request) and the kernel with ScratchCarve (the Views over team_scratch), so size and carve
// cannot drift (the way Kokkos Kernels' GEMMImpl declares its tiles).
#include <Kokkos_Core.hpp>

#include <cstddef>

namespace ptk::kernels {

struct ScratchSize {
  std::size_t bytes = 0;
  template <class View, class... Extents>
  KOKKOS_INLINE_FUNCTION View take(Extents... n) {
    bytes += View::shmem_size(n...);
    return View();
  }
};

template <class Team>
struct ScratchCarve {
  const Team& team;
  int level;
  template <class View, class... Extents>
  KOKKOS_INLINE_FUNCTION View take(Extents... n) {
    return View(team.team_scratch(level), n...);
  }
};

// The bytes of Kernel::take_scratch(arena, args...).
template <class Kernel, class... Args>
std::size_t scratch_bytes(Args... args) {
  ScratchSize size;
  Kernel::take_scratch(size, args...);
  return size.bytes;
}

}  // namespace ptk::kernels
