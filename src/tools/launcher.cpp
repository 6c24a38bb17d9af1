// bin/ptk of an install: chooses a backend module at run time (--backend, PTK_BACKEND; auto tries cuda, hip,
// then the CPU), says why it skipped the others, and runs the command in it. `ptk info` lists every backend
// with ✓ or ✗ and its reason first (--json: that list alone, for scripts). docs/design.md, "Backends chosen at
// run time".
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "ptk/rt/discovery.hpp"
#include "ptk/rt/report.hpp"

namespace {

using ptk::rt::Candidate;

constexpr int kUsageStatus = 2;  // as exit_status.hpp's usage kind

std::string launcher_dir() {
  char buf[4096];
  const auto n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  const std::string path(buf, static_cast<std::size_t>(n));
  return path.substr(0, path.find_last_of('/'));
}

struct Request {
  std::string backend = "auto";
  std::string from = "default";  // --backend, PTK_BACKEND or default
  bool json = false;             // ptk info --json
  std::vector<char*> argv;       // what the module's command line gets: the rest, in order
};

// Takes --backend X / --backend=X from anywhere on the line (and --json after info); the rest is forwarded.
bool parse(int argc, char** argv, Request& r) {
  if (const char* env = std::getenv("PTK_BACKEND"); env && *env) {
    r.backend = env;
    r.from = "PTK_BACKEND";
  }
  r.argv.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--backend" || arg.rfind("--backend=", 0) == 0) {
      if (arg == "--backend" && i + 1 >= argc) {
        std::cerr << "ptk: --backend needs a value: auto, cpu, cuda or hip\n";
        return false;
      }
      r.backend = arg == "--backend" ? argv[++i] : arg.substr(10);
      r.from = "--backend";
    } else if (arg == "--json" && r.argv.size() >= 2 && std::string(r.argv[1]) == "info") {
      r.json = true;
    } else {
      r.argv.push_back(argv[i]);
    }
  }
  r.argv.push_back(nullptr);
  if (r.backend == "auto" || r.backend == "cpu" || r.backend == "cuda" || r.backend == "hip") return true;
  std::cerr << "ptk: " << r.from << " is '" << r.backend << "'; expected auto, cpu, cuda or hip\n";
  return false;
}

// Runs the command in the chosen module; its exit status is ptk's.
int run_in(const Candidate& b, std::vector<char*>& argv) {
  void* handle = dlopen(b.module.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto main_fn = handle ? reinterpret_cast<int (*)(int, char**)>(dlsym(handle, "ptk_backend_main")) : nullptr;
  if (!main_fn) {  // it loaded in the probe a moment ago: the file changed since
    const char* e = dlerror();
    std::cerr << "ptk: backend " << b.name << ": " << (e ? e : "no ptk_backend_main") << '\n';
    return kUsageStatus;
  }
  // The module's own checks (and ptk bench's processes) see the backend chosen.
  setenv("PTK_BACKEND", b.name.c_str(), 1);
  return main_fn(static_cast<int>(argv.size()) - 1, argv.data());
}

}  // namespace

int main(int argc, char** argv) {
  Request request;
  if (!parse(argc, argv, request)) return kUsageStatus;
  const std::string here = launcher_dir();
  const auto dirs = ptk::rt::module_dirs({here + "/" + PTK_BACKEND_DIR_FROM_BIN, here + "/backends"});
  const bool info = request.argv.size() >= 3 && std::string(request.argv[1]) == "info";
  // auto: the first of cuda, hip, cpu that works; an explicit choice: that one. `info` examines all three.
  // train and generate: a GPU whose free memory is below the run's estimate is skipped too.
  const std::vector<std::string> command_line(request.argv.begin() + 1, request.argv.end() - 1);
  const auto selection = ptk::rt::select(request.backend, dirs, /*every=*/info, info ? std::vector<std::string>{} : command_line);
  const auto& seen = selection.seen;
  const Candidate* chosen = selection.chosen;

  if (info) {
    if (request.json) {
      ptk::rt::print_json(std::cout, seen, chosen, request.backend);
      std::cout.flush();
      if (std::cout && std::fflush(stdout) == 0) return chosen ? 0 : kUsageStatus;
      std::cerr << "ptk: cannot write to standard output\n";
      return kUsageStatus;
    }
    ptk::rt::print_table(std::cout, seen, chosen, request.backend);
    std::cout << '\n';
  }
  if (!chosen) {
    std::cerr << "ptk: " << ptk::rt::no_backend_line(seen, request.backend, request.from) << '\n';
    return kUsageStatus;
  }
  // One line for an automatic choice (not for info, which listed them, nor for the usage text).
  const std::string command = request.argv.size() >= 3 ? request.argv[1] : "";
  if (request.backend == "auto" && !info && !command.empty() && command[0] != '-' && command != "help")
    std::cerr << "ptk: " << ptk::rt::auto_line(seen, *chosen) << '\n';
  std::cout.flush();
  return run_in(*chosen, request.argv);
}
