#include "ptk/rt/report.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace ptk::rt {

namespace {

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

// brief: the one line of an automatic choice leaves out where a module was looked for.
std::string because(const Candidate& b, bool brief = false) {
  if (b.reason.empty() || (brief && b.skip == Skip::not_built)) return skip_name(b.skip);
  return std::string(skip_name(b.skip)) + ": " + b.reason;
}

std::string device_line(const std::string& backend, const ptk_backend_device& d) {
  const char* units = backend == "cpu" ? " CPUs" : backend == "cuda" ? " SMs" : " CUs";
  std::string s = std::string(d.name) + ", " + d.arch + ", " + std::to_string(d.compute_units) + units + ", " +
                  gib(d.total_bytes) + " total, " + gib(d.free_bytes) + " free";
  if (d.unified_memory) s += ", host memory";
  return s;
}

}  // namespace

void print_table(std::ostream& out, const std::vector<Candidate>& seen, const Candidate* chosen, const std::string& wanted) {
  out << "Backends (tried in this order by auto; choose with --backend or PTK_BACKEND)\n";
  for (const auto& b : seen) {
    char head[64];
    std::snprintf(head, sizeof head, "  %s %-5s ", b.skip == Skip::none ? "\u2713" : "\u2717", b.name.c_str());
    out << head << (b.skip == Skip::none ? std::string(b.probe.kokkos) : because(b)) << '\n';
    if (!b.module.empty()) out << "          module " << b.module << '\n';
    if (!b.module.empty() && !b.variant.empty()) out << "          variant " << b.variant_choice << '\n';
    if (b.probed)
      for (int i = 0; i < b.probe.device_count && i < PTK_BACKEND_MAX_DEVICES; ++i)
        out << "          device " << i << ": " << device_line(b.name, b.probe.devices[i]) << '\n';
  }
  out << "  " << (wanted == "auto" ? "auto chooses" : "chosen") << ": "
      << (chosen ? chosen->name : wanted == "auto" ? std::string("none (no backend can run here)") : "none (" + wanted + " cannot run here)")
      << '\n';
}

void print_json(std::ostream& out, const std::vector<Candidate>& seen, const Candidate* chosen, const std::string& wanted) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& b : seen) {
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    if (b.probed)
      for (int i = 0; i < b.probe.device_count && i < PTK_BACKEND_MAX_DEVICES; ++i) {
        const auto& d = b.probe.devices[i];
        devices.push_back({{"name", d.name}, {"arch", d.arch}, {"total_bytes", d.total_bytes},
                           {"free_bytes", d.free_bytes}, {"unified_memory", d.unified_memory != 0},
                           {"compute_units", d.compute_units}});
      }
    list.push_back({{"name", b.name}, {"available", b.skip == Skip::none}, {"skip", skip_name(b.skip)},
                    {"reason", b.reason}, {"module", b.module}, {"variant", b.variant},
                    {"kokkos", b.probed ? b.probe.kokkos : ""},
                    {"devices", devices}});
  }
  nlohmann::ordered_json doc{{"backends", list}, {"wanted", wanted}, {"chosen", chosen ? nlohmann::ordered_json(chosen->name) : nullptr}};
  // Names and reasons come from drivers and the loader: replace rather than refuse bytes that are not UTF-8.
  out << doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

std::string auto_line(const std::vector<Candidate>& seen, const Candidate& chosen) {
  std::string skipped;
  for (const auto& b : seen) {
    if (&b == &chosen) break;
    skipped += (skipped.empty() ? "" : "; ") + b.name + " skipped, " + because(b, /*brief=*/true);
  }
  return "backend " + chosen.name + " (auto" + (skipped.empty() ? "" : ": " + skipped) + ")";
}

std::string no_backend_line(const std::vector<Candidate>& seen, const std::string& wanted, const std::string& from) {
  std::string reasons;
  for (const auto& b : seen)
    if (wanted == "auto" || wanted == b.name) reasons += (reasons.empty() ? "" : "; ") + b.name + ": " + because(b);
  if (wanted == "auto") return "no backend can run here (" + reasons + ")";
  return from + " " + wanted + " cannot run here: " + reasons.substr(wanted.size() + 2);
}

}  // namespace ptk::rt
