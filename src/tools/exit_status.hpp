#pragma once
// The tool's exit status for each kind of error: the one table main reads (ptk.cpp catches a ptk::Error once, and
// turns std::bad_alloc and any other std::exception into the out-of-memory and internal kinds first, so every
// failure goes through here). Statuses a command returns on purpose are not errors and are not here: 0 success,
// 130 / 143 for a training run stopped by SIGINT / SIGTERM after saving, 1 when a benchmark sweep process failed.
#include "ptk/core/error.hpp"

namespace ptk::tools {

struct ExitRule {
  ErrorKind kind;
  int status;
  const char* prefix;  // put before the message on stderr, after "ptk: "
};

// Everything the caller can act on is 2 (README, docs/design.md "Errors"): the command line, the input files, a
// disk that is full, a device too small, a job whose ranks disagree. 1 is ptk's own fault, and says so.
inline constexpr ExitRule kExitRules[] = {
    {ErrorKind::usage, 2, ""},         {ErrorKind::input, 2, ""},      {ErrorKind::io, 2, ""},
    {ErrorKind::out_of_memory, 2, ""}, {ErrorKind::collective, 2, ""}, {ErrorKind::internal, 1, "internal error: "},
};

// Rows in ErrorKind's order, one per kind: the lookup is an index, and a kind added without a row fails to compile.
constexpr bool one_row_per_kind_in_order() {
  constexpr int rows = sizeof kExitRules / sizeof kExitRules[0];
  for (int i = 0; i < rows; ++i)
    if (static_cast<int>(kExitRules[i].kind) != i) return false;
  return rows == static_cast<int>(ErrorKind::internal) + 1;
}
static_assert(one_row_per_kind_in_order(), "kExitRules: one row per ErrorKind, in its order");

constexpr const ExitRule& exit_rule(ErrorKind kind) { return kExitRules[static_cast<int>(kind)]; }

}  // namespace ptk::tools
