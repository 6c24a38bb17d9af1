#pragma once
// Every difference between the Kokkos versions ptk supports (3.4 … 4.x) lives here and nowhere else.
#include <Kokkos_Core.hpp>

#include <math.h>  // ::fmaf (mul_add)

#if KOKKOS_VERSION < 30400
#error "ptk needs Kokkos 3.4 or newer"
#endif

// A loop whose iterations are independent, for the host compiler's vectorizer: `omp simd` where
// the host pass is compiled with OpenMP (it vectorizes an outer loop over partial-sum slots whose
// body is itself a loop, which g++ will not do unasked); nothing in device passes or without
// OpenMP, where the loop runs as written with the same results.
#if defined(_OPENMP) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define PTK_SIMD_LOOP _Pragma("omp simd")
#else
#define PTK_SIMD_LOOP
#endif

// A fixed-trip loop fully unrolled in a GPU device pass (registers indexed by the loop variable stay
// registers); the host compilers decide for themselves.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define PTK_UNROLL _Pragma("unroll")
#else
#define PTK_UNROLL
#endif

// A small fixed-trip loop nest fully unrolled on every compiler: g++ keeps an accumulator array
// indexed by the loop variables in registers only when the nest is unrolled, which it does not do
// unasked for an outer loop (matmul_decode's x rows: without it every FMA went through the stack).
// nvcc's and hipcc's host passes get no pragma (only the device pass needs registers there).
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define PTK_UNROLL_NEST _Pragma("unroll")
#elif defined(__CUDACC__) || defined(__HIPCC__)
#define PTK_UNROLL_NEST
#elif defined(__clang__)
#define PTK_UNROLL_NEST _Pragma("unroll")
#elif defined(__GNUC__)
#define PTK_UNROLL_NEST _Pragma("GCC unroll 16")
#else
#define PTK_UNROLL_NEST
#endif

namespace ptk {

// Does execution space Space run on the host CPU? Asked of the execution space (can it reach
// HostSpace memory), never of its memory space: on a UVM build the host can read CudaUVMSpace,
// yet a Cuda kernel is still a GPU kernel. The one place this question is answered.
template <class Space>
inline constexpr bool is_host_space_v = Kokkos::SpaceAccessibility<Space, Kokkos::HostSpace>::accessible;

}  // namespace ptk

namespace ptk::compat {

// Math functions moved from Kokkos::Experimental to Kokkos in 3.7 (and left Experimental in 4.0).
#if KOKKOS_VERSION >= 30700
using Kokkos::exp;
using Kokkos::log;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::log;
using Kokkos::Experimental::sqrt;
#endif

// a * b + c, fused (one rounding) where the target has an FMA instruction (every GPU; a host compiled
// with FMA), else rounded twice: the same bits in every unit of one build, whatever that unit's
// -ffp-contract (src/CMakeLists.txt). Kokkos 3.4 has no fma; fmaf is a device function under nvcc and
// hipcc, and g++ with -mfma expands it inline and vectorizes it.
KOKKOS_FORCEINLINE_FUNCTION float mul_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__) || defined(__FMA__)
  return ::fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

// The native stream a space's kernels run on (cudaStream_t as void*), for a vendor library called between them;
// nullptr elsewhere.
template <class Space>
void* native_stream(const Space&) {
  return nullptr;
}
#if defined(KOKKOS_ENABLE_CUDA)
inline void* native_stream(const Kokkos::Cuda& space) { return space.cuda_stream(); }
#endif

// HIP left Kokkos::Experimental in 4.0.
#if defined(KOKKOS_ENABLE_HIP)
#if KOKKOS_VERSION >= 40000
using HIP = Kokkos::HIP;
#else
using HIP = Kokkos::Experimental::HIP;
#endif
#endif

}  // namespace ptk::compat
