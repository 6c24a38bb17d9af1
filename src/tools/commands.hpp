#pragma once
// The subcommands of the ptk tool. Each returns the process exit status: 0 success, 2 bad input.
#include <string>
#include <vector>

namespace ptk::tools {

using Args = std::vector<std::string>;

// kokkos_started is false in a GPU build on a machine without its GPU (Kokkos cannot start there).
int info_command(const Args& args, bool kokkos_started);
int op_command(const Args& args);
int bench_command(const Args& args, const std::string& self_dir);
int train_command(const Args& args);
int generate_command(const Args& args);

// Thrown for bad command-line input; main prints "ptk: <message>" and exits 2.
struct UsageError {
  std::string message;
};

}  // namespace ptk::tools
