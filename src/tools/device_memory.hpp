#pragma once
// What a command may allocate on the device it runs on, and the one-line refusal when a run would not fit.
#include <string>

#include "ptk/autograd/variable.hpp"

namespace ptk::tools {

struct Available {
  double bytes = 0;   // 0: unknown (nothing is refused)
  std::string where;  // "host memory available", "Cuda device 0 free memory"
};

// Host: MemAvailable or a tighter cgroup v2 limit; a GPU: device 0's free memory.
Available available_memory(ag::Device device);

// Throws UsageError "<command>: this run needs about <need> (<what>; <parts>) but <where> is <available>".
// While estimating (below), throws NeedEstimate with the need instead, whatever is available.
void refuse_unless_fits(const std::string& command, double need, const std::string& what, ag::Device device);

// A command run only as far as its memory check, for the launcher's choice of backend (backend_module.cpp,
// ptk_backend_need): train and generate check memory before they allocate or write anything.
struct NeedEstimate {
  double bytes = 0;
};
bool& estimating_need();

}  // namespace ptk::tools
