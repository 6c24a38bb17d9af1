#include "device_memory.hpp"

#include "commands.hpp"
#include "ptk/core/allocate.hpp"
#include "ptk/core/runtime.hpp"

namespace ptk::tools {

Available available_memory(ag::Device device) {
  Available a;
  if (device == ag::Device::device && *runtime::gpu_backend() != '\0') {
    const auto probe = runtime::probe_gpus(true);
    if (!probe.devices.empty()) a.bytes = static_cast<double>(probe.devices[0].free_bytes);
    a.where = std::string(runtime::gpu_backend()) + " device 0 free memory";
  } else {
    a.bytes = static_cast<double>(runtime::host_available_bytes());
    a.where = "host memory available";
  }
  return a;
}

bool& estimating_need() {
  static bool estimating = false;
  return estimating;
}

void refuse_unless_fits(const std::string& command, double need, const std::string& what, ag::Device device) {
  if (estimating_need()) throw NeedEstimate{need};
  const Available a = available_memory(device);
  if (a.bytes > 0 && need > a.bytes)
    throw UsageError{command + ": this run needs about " + human_bytes(need) + " (" + what + ") but " + a.where + " is " +
                     human_bytes(a.bytes)};
}

}  // namespace ptk::tools
