// A backend module for tests/backends/backends_test.sh: it speaks tools/backend_abi.h and misbehaves as
// PTK_FAKE_BACKEND says, so that the launcher's fallbacks are tested on a machine without a GPU:
//   abort: the probe crashes (a driver dying in its initialization)   hang: the probe never answers
//   fail: the probe returns an error        init: a device that does not open   nodevice: the runtime sees none
//   driver: the runtime finds no driver     noisy: prints on stdout, no device     abi: another ABI version            ok: one usable fake device
// (PTK_FAKE_BACKEND_FREE_MB free, default 1024), whose main prints what it was given and which backend modules
// the process has mapped.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "ptk/rt/abi.h"

namespace {
std::string mode() {
  const char* m = std::getenv("PTK_FAKE_BACKEND");
  return m ? m : "ok";
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int ptk_backend_abi(void) {
  return mode() == "abi" ? 999 : PTK_BACKEND_ABI_VERSION;
}

extern "C" __attribute__((visibility("default"))) int ptk_backend_probe(ptk_backend_info* out) {
  const std::string m = mode();
  if (m == "abort") abort();
  if (m == "hang") pause();
  if (m == "fail") return 1;
  if (m == "noisy") {  // a runtime that prints a banner while it starts, then finds no device
    std::printf("a driver's banner on standard output\n");
    std::fflush(stdout);
  }
  std::memset(out, 0, sizeof *out);
  out->abi_version = PTK_BACKEND_ABI_VERSION;
  std::snprintf(out->name, sizeof out->name, "%s", std::getenv("PTK_FAKE_BACKEND_NAME") ? std::getenv("PTK_FAKE_BACKEND_NAME") : "cuda");
  std::snprintf(out->kokkos, sizeof out->kokkos, "fake");
  out->state = m == "init" ? PTK_BACKEND_INIT_FAILED : m == "nodevice" || m == "noisy" ? PTK_BACKEND_NO_DEVICE
               : m == "driver" ? PTK_BACKEND_DRIVER_MISSING : PTK_BACKEND_USABLE;
  if (out->state != PTK_BACKEND_USABLE) std::snprintf(out->detail, sizeof out->detail, "made to fail (%s)", m.c_str());
  if (out->state == PTK_BACKEND_USABLE || out->state == PTK_BACKEND_INIT_FAILED) {
    out->device_count = 1;
    std::snprintf(out->devices[0].name, sizeof out->devices[0].name, "Fake GPU");
    std::snprintf(out->devices[0].arch, sizeof out->devices[0].arch, "sm_00");
    const char* free_mb = std::getenv("PTK_FAKE_BACKEND_FREE_MB");  // the memory-aware choice's test
    out->devices[0].total_bytes = out->devices[0].free_bytes = (free_mb ? std::strtoull(free_mb, nullptr, 10) : 1024) << 20;
    out->devices[0].compute_units = 1;
  }
  return 0;
}

extern "C" __attribute__((visibility("default"))) int ptk_backend_main(int argc, char** argv) {
  std::printf("fake backend main:");
  for (int i = 1; i < argc; ++i) std::printf(" %s", argv[i]);
  const char* chosen = std::getenv("PTK_BACKEND");
  std::printf("\nPTK_BACKEND=%s\n", chosen ? chosen : "");
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find("libptk_backend_") != std::string::npos) std::printf("mapped: %s\n", line.substr(line.rfind('/') + 1).c_str());
  return 0;
}
