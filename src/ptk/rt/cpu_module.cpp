// The cpu backend's module among the CPU ISA variants (discovery.hpp, cpu_module; docs/design.md "CPU ISA
// variants"): CPUID is read here, before any module is loaded.
#include <cstdlib>
#include <string>
#include <vector>

#include "ptk/core/cpu_features.hpp"
#include "ptk/rt/discovery.hpp"
#include "ptk/rt/module_files.hpp"

namespace ptk::rt {

using detail::find_file;
using detail::not_found;

CpuModule cpu_module(const std::vector<std::string>& dirs) {
  const char* env = std::getenv("PTK_CPU_VARIANT");
  const std::string wanted = env ? env : "";
  const auto here = cpu::features();
  std::string table, built, skipped;
  for (const auto& v : cpu::variants()) table += std::string(table.empty() ? "" : ", ") + v.name;
  CpuModule chosen;
  for (const auto& v : cpu::variants()) {
    const std::string file = find_file(std::string("libptk_backend_cpu-") + v.name + ".so", dirs);
    if (file.empty() || (!wanted.empty() && wanted != v.name)) {
      if (!file.empty()) built += std::string(built.empty() ? "" : ", ") + v.name;
      continue;
    }
    if (const auto lacks = cpu::missing(v, here); !lacks.empty()) {
      if (!wanted.empty()) return {"", v.name, "PTK_CPU_VARIANT=" + wanted + ": this CPU lacks " + lacks, Skip::isa_missing};
      skipped += std::string(skipped.empty() ? "" : "; ") + v.name + " skipped, this CPU lacks " + lacks;
      continue;
    }
    if (chosen.file.empty()) {
      chosen.file = file;
      chosen.variant = v.name;
    } else {
      built += std::string(built.empty() ? "" : ", ") + v.name;
    }
  }
  if (!wanted.empty() && chosen.file.empty()) {
    const bool known = (", " + table + ", ").find(", " + wanted + ", ") != std::string::npos;
    return {"", wanted,
            known ? "PTK_CPU_VARIANT=" + wanted + ": " + not_found("libptk_backend_cpu-" + wanted + ".so", dirs)
                  : "PTK_CPU_VARIANT is '" + wanted + "'; the variants are " + table,
            known ? Skip::not_built : Skip::isa_missing};
  }
  if (!chosen.file.empty()) {
    chosen.how = chosen.variant + (wanted.empty() ? " (the best this CPU runs" : " (PTK_CPU_VARIANT");
    if (!skipped.empty()) chosen.how += "; " + skipped;
    if (!built.empty()) chosen.how += "; also built: " + built;
    chosen.how += ")";
    return chosen;
  }
  chosen.file = find_file("libptk_backend_cpu.so", dirs);  // a build without variants
  if (chosen.file.empty()) {
    chosen.skip = skipped.empty() ? Skip::not_built : Skip::isa_missing;
    chosen.how = skipped.empty() ? not_found("libptk_backend_cpu.so", dirs) + " (nor a cpu-<variant> one)" : skipped;
  }
  return chosen;
}

}  // namespace ptk::rt
