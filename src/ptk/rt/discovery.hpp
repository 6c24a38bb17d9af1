#pragma once
// Finding, probing and choosing the backend modules of an install, for the launcher and the library API
// (docs/design.md, "Backends chosen at run time"). No Kokkos here: each module carries its own, and is asked
// about its devices in a child process.
#include <cstdint>
#include <string>
#include <vector>

#include "ptk/rt/abi.h"

namespace ptk::rt {

// The backends --backend names, in the order `auto` tries them: a GPU when one works, the CPU always.
const std::vector<std::string>& backend_order();

// Why a backend was skipped, from the first check it failed.
enum class Skip {
  none,             // usable
  not_built,        // no module file in the directories searched
  library_missing,  // the module, or a library it needs, does not load (absent, truncated, not a ptk module)
  driver_missing,   // the GPU driver's library is absent or too old for the runtime
  no_device,        // the runtime works and sees no device
  init_failed,      // a device is there and did not open, or the probe crashed or hung
  too_little_memory,// the device's free memory is below the run's estimate
  isa_missing       // cpu: no variant this CPU runs, or PTK_CPU_VARIANT names one it lacks or none the table has
};
const char* skip_name(Skip skip);

struct Candidate {
  std::string name;    // cuda, hip, cpu
  std::string module;  // the file found ("" when none)
  std::string variant; // cpu: the ISA variant of the module (cpu_variants.def), "" for a build without variants
  std::string variant_choice;  // cpu: how, e.g. "avx512 (the best this CPU runs; also built: avx2)"
  Skip skip = Skip::not_built;
  std::string reason;  // the details behind `skip`, in the words of whatever failed
  bool probed = false; // `probe` holds the module's answer
  ptk_backend_info probe{};
};

// Where modules are looked for: the directories in PTK_BACKEND_PATH (colon-separated) when it is set, else
// `fallback`.
std::vector<std::string> module_dirs(const std::vector<std::string>& fallback);

// The cpu backend's module in `dirs`: with ISA variants (libptk_backend_cpu-<variant>.so, docs/design.md "CPU ISA
// variants"), the best one whose instructions this CPU has, or the one PTK_CPU_VARIANT names; else
// libptk_backend_cpu.so. The CPU is read before any module is loaded: a module of a variant it lacks is never
// loaded (its static initializers could already execute those instructions).
struct CpuModule {
  std::string file;     // "" when none can run
  std::string variant;  // "" for libptk_backend_cpu.so
  std::string how;      // how it was chosen, or why none was (with skip)
  Skip skip = Skip::none;
};
CpuModule cpu_module(const std::vector<std::string>& dirs);

// Finds NAME's module and probes it in a child process.
Candidate examine(const std::string& name, const std::vector<std::string>& dirs);

// The device memory `ptk <command_line>` needs, by the cpu module's own estimate (ptk_backend_need, in a child
// process); 0 when there is no estimate.
std::uint64_t memory_need(const std::string& cpu_module, const std::vector<std::string>& command_line);

// The backends examined for `wanted` ("auto", "cpu", "cuda", "hip"), in backend_order(), and the one chosen:
// auto's first usable one, or the one named when it is usable. every: examine all three (ptk info lists them).
// command_line (the command and its arguments): a GPU whose device 0 has less free memory than the command's
// estimate (train, generate; memory_need) is skipped as too_little_memory.
struct Selection {
  std::vector<Candidate> seen;
  const Candidate* chosen = nullptr;  // into seen; null when none can run
  std::uint64_t need_bytes = 0;       // the estimate compared, 0 when none was made
};
Selection select(const std::string& wanted, const std::vector<std::string>& dirs, bool every = false,
                 const std::vector<std::string>& command_line = {});

}  // namespace ptk::rt
