// ptk: the command-line tool. `ptk info`, `ptk op`, `ptk bench` (see `ptk --help`).
#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <unistd.h>

#include <vector>

#include "commands.hpp"
#include "ptk/core/error.hpp"
#include "ptk/io/npy.hpp"

namespace {

const char* const kUsage = R"(usage:
  ptk info                                   Kokkos version, backends, devices, memory
  ptk op NAME --in A.npy [--in B.npy ...] [--set key=value ...] --out Y.npy [--out Z.npy ...]
         [--device host|default]             run one op on .npy files (ptk op --help lists ops)
  ptk bench [--quick] [--out DIR] [--filter REGEX] [--repetitions N]
                                             benchmark sweeps, one process per implementation
                                             -> DIR/report.md, DIR/*.png, DIR/bench.json
Exit status: 0 on success, 2 on bad input (one-line message on stderr).
)";

std::string executable_dir() {
  char buf[4096];
  const auto n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<std::size_t>(n));
  return path.substr(0, path.find_last_of('/'));
}

}  // namespace

int main(int argc, char** argv) {
  // Kokkos' OpenMP backend asks for thread binding (and warns on stdout without it).
  setenv("OMP_PROC_BIND", "spread", 0);
  setenv("OMP_PLACES", "threads", 0);

  const std::string command = argc > 1 ? argv[1] : "";
  if (command.empty() || command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return command.empty() ? 2 : 0;
  }
  // Only --kokkos-* flags reach Kokkos: it would also take ptk's --device as its own legacy flag.
  ptk::tools::Args args;
  std::vector<char*> kokkos_argv{argv[0]};
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--kokkos-", 0) == 0) kokkos_argv.push_back(argv[i]);
    else args.push_back(argv[i]);
  }
  int kokkos_argc = static_cast<int>(kokkos_argv.size());
  try {
    if (command == "bench") return ptk::tools::bench_command(args, executable_dir());  // runs its own processes
    if (command != "info" && command != "op")
      throw ptk::tools::UsageError{"unknown command '" + command + "' (expected info, op or bench)"};
    Kokkos::ScopeGuard kokkos(kokkos_argc, kokkos_argv.data());
    return command == "info" ? ptk::tools::info_command(args) : ptk::tools::op_command(args);
  } catch (const ptk::tools::UsageError& e) {
    std::cerr << "ptk: " << e.message << '\n';
  } catch (const ptk::Error& e) {
    std::cerr << "ptk: " << e.what() << '\n';
  } catch (const ptk::io::NpyError& e) {
    std::cerr << "ptk: " << e.what() << '\n';
  } catch (const std::exception& e) {
    std::cerr << "ptk: internal error: " << e.what() << '\n';
    return 1;
  }
  return 2;
}
