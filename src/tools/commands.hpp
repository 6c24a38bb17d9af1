#pragma once
// The subcommands of the ptk tool. Each returns 0 on success (or a status of its own: train's 130 / 143 after a
// signal, bench's 1 when a sweep process failed) and throws a ptk::Error on failure, which main turns into one
// line and the status of its kind (exit_status.hpp).
#include <string>
#include <vector>

#include "ptk/core/error.hpp"

namespace ptk::tools {

using Args = std::vector<std::string>;

// kokkos_started is false in a GPU build on a machine without its GPU (Kokkos cannot start there).
int info_command(const Args& args, bool kokkos_started);
int op_command(const Args& args);
int bench_command(const Args& args, const std::string& self_dir);
int train_command(const Args& args);
int generate_command(const Args& args);
// These two need no Kokkos: they run before it starts, in any build.
int tokenize_command(const Args& args);
int convert_command(const Args& args);

// Thrown for bad command-line input (ptk/core/error.hpp); main prints "ptk: <message>" and exits with the
// usage kind's status (exit_status.hpp).
using ptk::UsageError;

}  // namespace ptk::tools
