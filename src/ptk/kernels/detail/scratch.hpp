#pragma once
// A kernel's team-scratch layout is declared once, as a function take_scratch(arena, ...) that
// takes its parts from an arena in order; ScratchSize runs it to size the request (scratch_bytes)
// and carve_scratch runs it again over the team's block to make the Views, so size and carve cannot
// drift (the way Kokkos Kernels' GEMMImpl declares its tiles). The block is requested from Kokkos
// once and cut by offsets: one get_shmem call instead of one per part keeps Kokkos' scratch
// bookkeeping (and its overflow printf) out of the kernel's registers and stack on a GPU.
#include <Kokkos_Core.hpp>

#include <cstddef>

namespace ptk::kernels {

// Float tiles and rows in a team's scratch (carved by carve_scratch, never allocated).
template <class Space>
using ScratchMatrixOf = Kokkos::View<float**, Kokkos::LayoutRight, typename Space::scratch_memory_space,
                                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class Space>
using ScratchVectorOf = Kokkos::View<float*, Kokkos::LayoutRight, typename Space::scratch_memory_space,
                                     Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

namespace detail {
// The bytes of a contiguous View of these extents, rounded up to 16 (every part starts aligned).
template <class View, class... Extents>
KOKKOS_INLINE_FUNCTION std::size_t part_bytes(Extents... n) {
  std::size_t count = 1;
  for (const std::size_t e : {static_cast<std::size_t>(n)...}) count *= e;
  return (count * sizeof(typename View::value_type) + 15) / 16 * 16;
}
}  // namespace detail

struct ScratchSize {
  std::size_t bytes = 0;
  template <class View, class... Extents>
  KOKKOS_INLINE_FUNCTION View take(Extents... n) {
    bytes += detail::part_bytes<View>(n...);
    return View();
  }
};

struct ScratchCarve {
  char* base;
  std::size_t offset = 0;
  template <class View, class... Extents>
  KOKKOS_INLINE_FUNCTION View take(Extents... n) {
    const View v(reinterpret_cast<typename View::pointer_type>(base + offset), n...);
    offset += detail::part_bytes<View>(n...);
    return v;
  }
};

// The bytes of Kernel::take_scratch(arena, args...): what the launch requests per team.
template <class Kernel, class... Args>
KOKKOS_INLINE_FUNCTION std::size_t scratch_bytes(Args... args) {
  ScratchSize size;
  Kernel::take_scratch(size, args...);
  return size.bytes;
}

// Kernel::take_scratch's parts over the team's block of that many bytes at `level`.
// The level is passed to Kokkos as a constant in each branch: with a run-time level, nvcc keeps
// Kokkos' per-level scratch pointers in a local-memory array (16 bytes of stack per thread).
template <class Kernel, class Team, class... Args>
KOKKOS_INLINE_FUNCTION auto carve_scratch(const Team& team, int level, Args... args) {
  const std::size_t bytes = scratch_bytes<Kernel>(args...);
  ScratchCarve arena{static_cast<char*>(level == 0 ? team.team_scratch(0).get_shmem(bytes)
                                                   : team.team_scratch(1).get_shmem(bytes))};
  return Kernel::take_scratch(arena, args...);
}

}  // namespace ptk::kernels
