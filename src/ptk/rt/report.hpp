#pragma once
// What the launcher says about the backends it examined: `ptk info`'s table and JSON, the one line of an
// automatic choice, and the one line when nothing can run.
#include <ostream>
#include <string>
#include <vector>

#include "ptk/rt/discovery.hpp"

namespace ptk::rt {

// One row per backend: ✓ with its devices, or ✗ with the reason; then the one `wanted` leads to.
void print_table(std::ostream& out, const std::vector<Candidate>& seen, const Candidate* chosen, const std::string& wanted);
// {"backends": [{"name", "available", "skip", "reason", "module", "kokkos", "devices": [...]}], "wanted", "chosen"}
void print_json(std::ostream& out, const std::vector<Candidate>& seen, const Candidate* chosen, const std::string& wanted);
// "backend cpu (auto: cuda skipped, no device: ...; hip skipped, not built: ...)"
std::string auto_line(const std::vector<Candidate>& seen, const Candidate& chosen);
// "--backend cuda cannot run here: no device (...)" or "no backend can run here: cuda ...; hip ...; cpu ..."
std::string no_backend_line(const std::vector<Candidate>& seen, const std::string& wanted, const std::string& from);

}  // namespace ptk::rt
