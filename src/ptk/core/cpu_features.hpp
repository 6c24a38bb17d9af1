#pragma once
// The instruction set the CPU running this process can execute, read from CPUID and XCR0 (the OS must
// also save the wide registers), and the host kernels' ISA variants (cpu_variants.def) it can run.
// __builtin_cpu_supports is not used: inside ptk_bench, linked with OpenBLAS and oneDNN, GCC 12's
// answered "no AVX-512" on an AVX-512 AMD EPYC, so the benchmarks ran OpenBLAS with its Haswell kernels
// at half its speed. No Kokkos here: the launcher (ptk::runtime) reads it before it loads a module.
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace ptk::cpu {

struct VectorIsa {
  bool avx = false;
  bool avx2 = false;
  bool avx512f = false;
};

// The features the variants name: where CPUID reports each (leaf, subleaf, register, bit) and which register state
// the OS must save for it (XCR0: ymm for AVX and AVX2, zmm and opmasks for AVX-512). A feature counts only where both
// hold.
enum class Reg { eax, ebx, ecx, edx };
enum class State { none, ymm, zmm };
struct FeatureBit {
  const char* name;
  unsigned leaf, subleaf;
  Reg reg;
  int bit;
  State state;
};
inline const std::vector<FeatureBit>& known_features() {
  static const std::vector<FeatureBit> table{
      {"avx", 1, 0, Reg::ecx, 28, State::ymm},         {"fma", 1, 0, Reg::ecx, 12, State::ymm},
      {"f16c", 1, 0, Reg::ecx, 29, State::ymm},        {"avx2", 7, 0, Reg::ebx, 5, State::ymm},
      {"bmi2", 7, 0, Reg::ebx, 8, State::none},        {"avx512f", 7, 0, Reg::ebx, 16, State::zmm},
      {"avx512dq", 7, 0, Reg::ebx, 17, State::zmm},    {"avx512cd", 7, 0, Reg::ebx, 28, State::zmm},
      {"avx512bw", 7, 0, Reg::ebx, 30, State::zmm},    {"avx512vl", 7, 0, Reg::ebx, 31, State::zmm},
      {"avx512vbmi", 7, 0, Reg::ecx, 1, State::zmm},   {"avx512vnni", 7, 0, Reg::ecx, 11, State::zmm},
      {"avx512bf16", 7, 1, Reg::eax, 5, State::zmm},   {"avx512fp16", 7, 0, Reg::edx, 23, State::zmm},
  };
  return table;
}

struct Features {
  std::vector<std::string> names;  // the features present, in known_features() order
  bool has(const std::string& name) const {
    for (const auto& n : names)
      if (n == name) return true;
    return false;
  }
};

inline Features features() {
  Features f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  unsigned long long xcr0 = 0;
  if (ecx & (1u << 27)) {  // OSXSAVE: xgetbv may be executed
    unsigned low = 0, high = 0;
    __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(high) << 32) | low;
  }
  const bool ymm_saved = (xcr0 & 0x6u) == 0x6u;    // SSE + AVX state
  const bool zmm_saved = (xcr0 & 0xe6u) == 0xe6u;  // + opmask, ZMM0-15 upper halves, ZMM16-31
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  for (const auto& b : known_features()) {
    if (b.leaf > max_leaf || !__get_cpuid_count(b.leaf, b.subleaf, &eax, &ebx, &ecx, &edx)) continue;
    const unsigned word = b.reg == Reg::eax ? eax : b.reg == Reg::ebx ? ebx : b.reg == Reg::ecx ? ecx : edx;
    const bool saved = b.state == State::none || (b.state == State::ymm ? ymm_saved : zmm_saved);
    if (saved && (word >> b.bit & 1u)) f.names.emplace_back(b.name);
  }
#endif
  // PTK_CPU_HIDE="avx512vbmi ...": act as a CPU without these (the launcher's choice of variant, its refusals and
  // `ptk info` tested on any machine; tests/backends). Never adds a feature.
  if (const char* hide = std::getenv("PTK_CPU_HIDE")) {
    std::istringstream words(hide);
    for (std::string name; words >> name;)
      for (auto it = f.names.begin(); it != f.names.end();) it = *it == name ? f.names.erase(it) : it + 1;
  }
  return f;
}

inline VectorIsa vector_isa() {
  const Features f = features();
  return VectorIsa{f.has("avx"), f.has("avx2"), f.has("avx512f")};
}

// One row of cpu_variants.def.
struct Variant {
  const char* name;
  const char* flags;  // the compiler flags of its kernel units
  const char* needs;  // the features it needs, space-separated
};

inline const std::vector<Variant>& variants() {
  static const std::vector<Variant> table{
#define PTK_CPU_VARIANT(name, flags, needs) Variant{#name, flags, needs},
#include "ptk/core/cpu_variants.def"
#undef PTK_CPU_VARIANT
  };
  return table;
}

// The features `v` needs that `f` lacks, space-separated; "" where this CPU runs it.
inline std::string missing(const Variant& v, const Features& f) {
  std::istringstream needs(v.needs);
  std::string out;
  for (std::string name; needs >> name;)
    if (!f.has(name)) out += (out.empty() ? "" : " ") + name;
  return out;
}

}  // namespace ptk::cpu
