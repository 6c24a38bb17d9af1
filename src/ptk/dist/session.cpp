// What a data-parallel job does once: start MPI (or not), and agree on its settings at start-up.
#include <cstdlib>
#include <map>

#include "ptk/dist/backend.hpp"
#include "ptk/dist/comm.hpp"

namespace ptk::dist {

bool launched_by_mpi() {
  const char* forced = std::getenv("PTK_MPI");
  if (forced != nullptr && *forced != '\0') return std::string(forced) != "0";
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_RANK"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}

Session::Session(int* argc, char*** argv) {
  if (launched_by_mpi()) started_ = start_mpi(argc, argv);
}

Session::~Session() {
  if (started_) finish_mpi();
}

std::string first_difference(const std::vector<std::pair<std::string, std::string>>& a,
                             const std::vector<std::pair<std::string, std::string>>& b) {
  std::map<std::string, std::string> in_b(b.begin(), b.end());
  for (const auto& [key, value] : a) {
    const auto it = in_b.find(key);
    const std::string other = it == in_b.end() ? "(missing)" : it->second;
    if (other != value) return key + ": " + value + " vs " + other;
  }
  std::map<std::string, std::string> in_a(a.begin(), a.end());
  for (const auto& [key, value] : b)
    if (in_a.count(key) == 0) return key + ": (missing) vs " + value;
  return "";
}

namespace {
std::string serialize(const std::vector<std::pair<std::string, std::string>>& settings) {
  std::string s;
  for (const auto& [key, value] : settings) s += key + '\t' + value + '\n';
  return s;
}
std::vector<std::pair<std::string, std::string>> deserialize(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = text.find('\n', at), tab = text.find('\t', at);
    out.emplace_back(text.substr(at, tab - at), text.substr(tab + 1, end - tab - 1));
    at = end + 1;
  }
  return out;
}
}  // namespace

void require_same_configuration(Comm& comm, const std::vector<std::pair<std::string, std::string>>& settings) {
  if (!comm.distributed()) return;
  const auto all = comm.allgather(serialize(settings));
  const auto root = deserialize(all[0]);
  for (std::size_t r = 1; r < all.size(); ++r) {
    const std::string diff = first_difference(root, deserialize(all[r]));
    if (!diff.empty())
      throw CollectiveError("dist: the ranks disagree at start-up, rank 0 vs rank " + std::to_string(r) + " on " + diff +
                            " (every rank must run the same ptk build with the same settings and data)");
  }
}

}  // namespace ptk::dist
