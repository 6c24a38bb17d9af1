#pragma once
// The (space, tuning) pairs a build compiles its kernels for, once each (Kokkos Kernels' ETI): every
// kernel header ends with PTK_FOR_EACH_CONFIG(<its instances>, extern), so that a test, the tool or a
// benchmark that includes it links the kernel instead of compiling it again, and src/CMakeLists.txt
// generates one translation unit per (kernel header, pair) under src/ptk/kernels/inst/ that defines
// them. The two lists must agree: the pairs below and ptk_kernel_configs in src/CMakeLists.txt.
//   Serial   HostTuning
//   OpenMP   HostTuning, and EmulatedGpuTuning (the GPU tuning on the CPU: tests, PTK_TUNING=gpu)
//   CUDA     GpuTuning<1024>
//   HIP      GpuTuning<1024>
// A kernel called with any other tuning (a test's own variant) is compiled where it is called.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/kernels/tuning.hpp"

#if defined(KOKKOS_ENABLE_SERIAL)
#define PTK_CONFIGS_SERIAL(M, EXT) M(EXT, Kokkos::Serial, ::ptk::kernels::HostTuning)
#define PTK_SPACES_SERIAL(M, EXT) M(EXT, Kokkos::Serial)
#else
#define PTK_CONFIGS_SERIAL(M, EXT)
#define PTK_SPACES_SERIAL(M, EXT)
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
#define PTK_CONFIGS_OPENMP(M, EXT)                         \
  M(EXT, Kokkos::OpenMP, ::ptk::kernels::HostTuning)       \
  M(EXT, Kokkos::OpenMP, ::ptk::kernels::EmulatedGpuTuning)
#define PTK_SPACES_OPENMP(M, EXT) M(EXT, Kokkos::OpenMP)
#else
#define PTK_CONFIGS_OPENMP(M, EXT)
#define PTK_SPACES_OPENMP(M, EXT)
#endif
#if defined(KOKKOS_ENABLE_CUDA)
#define PTK_CONFIGS_CUDA(M, EXT) M(EXT, Kokkos::Cuda, ::ptk::kernels::GpuTuning<1024>)
#define PTK_SPACES_CUDA(M, EXT) M(EXT, Kokkos::Cuda)
#else
#define PTK_CONFIGS_CUDA(M, EXT)
#define PTK_SPACES_CUDA(M, EXT)
#endif
#if defined(KOKKOS_ENABLE_HIP)
#define PTK_CONFIGS_HIP(M, EXT) M(EXT, ::ptk::compat::HIP, ::ptk::kernels::GpuTuning<1024>)
#define PTK_SPACES_HIP(M, EXT) M(EXT, ::ptk::compat::HIP)
#else
#define PTK_CONFIGS_HIP(M, EXT)
#define PTK_SPACES_HIP(M, EXT)
#endif

// M(EXT, Space, Tune) for every pair; M(EXT, Space) for every space (kernels with no tuning).
#define PTK_FOR_EACH_CONFIG(M, EXT) PTK_CONFIGS_SERIAL(M, EXT) PTK_CONFIGS_OPENMP(M, EXT) PTK_CONFIGS_CUDA(M, EXT) PTK_CONFIGS_HIP(M, EXT)
#define PTK_FOR_EACH_SPACE(M, EXT) PTK_SPACES_SERIAL(M, EXT) PTK_SPACES_OPENMP(M, EXT) PTK_SPACES_CUDA(M, EXT) PTK_SPACES_HIP(M, EXT)
