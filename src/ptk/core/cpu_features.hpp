#pragma once
// The vector ISA the CPU running this process can execute, read from CPUID and XCR0 (the OS must
// also save the wide registers). __builtin_cpu_supports is not used: inside ptk_bench, linked
// with OpenBLAS and oneDNN, GCC 12's answered "no AVX-512" on an AVX-512 AMD EPYC, so the
// benchmarks ran OpenBLAS with its Haswell kernels at half its speed.
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ptk::cpu {

struct VectorIsa {
  bool avx = false;
  bool avx2 = false;
  bool avx512f = false;
};

inline VectorIsa vector_isa() {
  VectorIsa isa;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return isa;
  const bool osxsave = ecx & (1u << 27), avx = ecx & (1u << 28);
  if (!osxsave) return isa;
  unsigned low = 0, high = 0;
  __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  const unsigned long long xcr0 = (static_cast<unsigned long long>(high) << 32) | low;
  const bool ymm_saved = (xcr0 & 0x6u) == 0x6u;       // SSE + AVX state
  const bool zmm_saved = (xcr0 & 0xe6u) == 0xe6u;     // + opmask, ZMM0-15 upper halves, ZMM16-31
  isa.avx = avx && ymm_saved;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    isa.avx2 = isa.avx && (ebx & (1u << 5));
    isa.avx512f = zmm_saved && (ebx & (1u << 16));
  }
#endif
  return isa;
}

}  // namespace ptk::cpu
