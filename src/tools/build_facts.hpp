#pragma once
// Facts about this build that `ptk info` prints and a backend module's probe reports (info_command.cpp).
#include <string>

namespace ptk::tools {
// The Kokkos backends compiled in, e.g. "OpenMP, Serial".
std::string kokkos_backends();
// The widest vector ISA this binary was compiled for, with " (this CPU lacks it)" where the CPU running it does.
std::string compiled_isa();
}  // namespace ptk::tools
