// A backend module (libptk_backend_<name>.so): this build's library and command line behind the C boundary
// of ptk/rt/abi.h, for an install's launcher (and ptk::runtime) to load at run time. The probe answers without Kokkos: a GPU
// build's Kokkos cannot start without its GPU, and the launcher asks every module before it picks one.
#include <Kokkos_Core.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "build_facts.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "device_memory.hpp"
#include "exit_status.hpp"
#include "op_registry.hpp"
#include "ptk/core/error.hpp"
#include "ptk/core/runtime.hpp"
#include "ptk/rt/abi.h"

#define PTK_BACKEND_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

template <std::size_t N>
void copy(char (&dst)[N], const std::string& src) {
  std::snprintf(dst, N, "%s", src.c_str());
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      const auto value = line.substr(line.find(':') + 1);
      const auto start = value.find_first_not_of(" \t");
      if (start != std::string::npos) return value.substr(start);
    }
  return "host CPU";
}

void probe_host(ptk_backend_info& out) {
  out.state = PTK_BACKEND_USABLE;
  out.device_count = 1;
  auto& d = out.devices[0];
  copy(d.name, cpu_model());
  copy(d.arch, ptk::tools::compiled_isa());
  d.total_bytes = ptk::runtime::host_total_bytes();
  d.free_bytes = ptk::runtime::host_available_bytes();
  d.unified_memory = 1;
  d.compute_units = static_cast<int32_t>(std::thread::hardware_concurrency());
  // A binary compiled for an ISA this CPU lacks would die of SIGILL in its first kernel.
  if (ptk::tools::compiled_isa().find("lacks") != std::string::npos) {
    out.state = PTK_BACKEND_INIT_FAILED;
    copy(out.detail, "compiled for " + ptk::tools::compiled_isa());
  }
}

void probe_gpu(ptk_backend_info& out) {
  const auto probe = ptk::runtime::probe_gpus(/*details=*/true);
  using ptk::runtime::GpuProblem;
  out.state = probe.problem == GpuProblem::none        ? PTK_BACKEND_USABLE
              : probe.problem == GpuProblem::driver    ? PTK_BACKEND_DRIVER_MISSING
              : probe.problem == GpuProblem::no_device ? PTK_BACKEND_NO_DEVICE
                                                       : PTK_BACKEND_INIT_FAILED;
  copy(out.detail, probe.error);
  out.device_count = static_cast<int32_t>(probe.devices.size() < PTK_BACKEND_MAX_DEVICES ? probe.devices.size()
                                                                                         : PTK_BACKEND_MAX_DEVICES);
  for (int32_t i = 0; i < out.device_count; ++i) {
    const auto& g = probe.devices[static_cast<std::size_t>(i)];
    auto& d = out.devices[i];
    copy(d.name, g.name);
    copy(d.arch, g.arch);
    d.total_bytes = g.total_bytes;
    d.free_bytes = g.free_bytes;
    d.unified_memory = g.integrated ? 1 : 0;
    d.compute_units = g.multiprocessors;
  }
}

void say(char* err, uint64_t size, const std::string& line) {
  if (err && size > 0) std::snprintf(err, static_cast<std::size_t>(size), "%s", line.c_str());
}

std::size_t elements(const ptk_backend_tensor& t) {
  if (t.rank < 0 || t.rank > PTK_BACKEND_MAX_RANK) throw ptk::UsageError{"a tensor of rank " + std::to_string(t.rank)};
  std::size_t n = 1;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] < 0 || (t.shape[d] > 0 && n > (std::size_t{1} << 40) / static_cast<std::size_t>(t.shape[d])))
      throw ptk::UsageError{"a tensor dimension of " + std::to_string(t.shape[d])};
    n *= static_cast<std::size_t>(t.shape[d]);
  }
  if (n > 0 && t.data == nullptr) throw ptk::UsageError{"a tensor without data"};
  return n;
}

// The caller's tensors as the registry's arrays (copies: the op's Views are filled from them).
ptk::tools::HostInputs host_inputs(int32_t n_in, const ptk_backend_tensor* in) {
  ptk::tools::HostInputs inputs;
  for (int32_t i = 0; i < n_in; ++i) {
    const auto& t = in[i];
    const std::size_t n = elements(t);
    inputs.arrays.emplace_back();
    inputs.ids.emplace_back();
    const std::vector<std::int64_t> shape(t.shape, t.shape + t.rank);
    if (t.kind == PTK_TENSOR_I64) {
      inputs.ids.back().shape = shape;
      inputs.ids.back().data.assign(static_cast<const std::int64_t*>(t.data), static_cast<const std::int64_t*>(t.data) + n);
    } else if (t.kind == PTK_TENSOR_F32) {
      inputs.arrays.back().shape = shape;
      inputs.arrays.back().data.assign(static_cast<const float*>(t.data), static_cast<const float*>(t.data) + n);
    } else {
      throw ptk::UsageError{"input " + std::to_string(i) + " has an unknown kind " + std::to_string(t.kind)};
    }
  }
  return inputs;
}

int run_op(const char* name, int32_t n_in, const ptk_backend_tensor* in, int32_t n_set, const char* const* keys,
           const char* const* values, int32_t max_out, ptk_backend_tensor* out, int32_t* n_out) {
  if (!name || (n_in > 0 && !in) || n_in < 0 || n_set < 0 || (n_set > 0 && (!keys || !values)) || !out || !n_out)
    throw ptk::UsageError{"run_op: a null or negative argument"};
  std::vector<std::string> sets;
  for (int32_t i = 0; i < n_set; ++i) sets.push_back(std::string(keys[i] ? keys[i] : "") + "=" + (values[i] ? values[i] : ""));
  auto results = ptk::tools::run_in_memory(name, host_inputs(n_in, in), sets);
  if (static_cast<int32_t>(results.size()) > max_out) results.resize(static_cast<std::size_t>(max_out));
  *n_out = 0;
  for (const auto& r : results) {
    ptk_backend_tensor& t = out[*n_out];
    t.kind = PTK_TENSOR_F32;
    t.rank = static_cast<int32_t>(r.shape.size());
    std::copy(r.shape.begin(), r.shape.end(), t.shape);
    t.data = std::malloc(std::max<std::size_t>(1, r.data.size()) * sizeof(float));
    if (!t.data) throw std::bad_alloc();
    std::memcpy(t.data, r.data.data(), r.data.size() * sizeof(float));
    ++*n_out;
  }
  return 0;
}

}  // namespace

PTK_BACKEND_EXPORT int ptk_backend_abi(void) { return PTK_BACKEND_ABI_VERSION; }

PTK_BACKEND_EXPORT int ptk_backend_probe(ptk_backend_info* out) {
  if (out == nullptr) return 1;
  try {
    std::memset(out, 0, sizeof *out);
    out->abi_version = PTK_BACKEND_ABI_VERSION;
    copy(out->name, ptk::runtime::backend_name());
    copy(out->kokkos, "Kokkos " + std::to_string(KOKKOS_VERSION / 10000) + "." +
                          std::to_string(KOKKOS_VERSION / 100 % 100) + "." + std::to_string(KOKKOS_VERSION % 100) + ": " +
                          ptk::tools::kokkos_backends());
    if (*ptk::runtime::gpu_backend() == '\0') probe_host(*out);
    else probe_gpu(*out);
    return 0;
  } catch (...) {  // nothing may cross the C boundary
    return 1;
  }
}

PTK_BACKEND_EXPORT int ptk_backend_main(int argc, char** argv) {
  try {
    return ptk::tools::cli_main(argc, argv);  // reports ptk's errors itself
  } catch (...) {                             // nothing may cross the C boundary
    std::fprintf(stderr, "ptk: internal error: an unknown exception left the %s backend\n", ptk::runtime::backend_name());
    return 1;
  }
}

PTK_BACKEND_EXPORT int ptk_backend_start(char* err, uint64_t err_size) {
  static std::once_flag once;
  static std::string failure;
  try {
    std::call_once(once, [] {
      if (ptk::runtime::gpu_build_without_gpu()) {  // Kokkos would abort the process
        failure = ptk::runtime::no_gpu_message("ptk");
        return;
      }
      ptk::runtime::set_openmp_defaults();
      if (!Kokkos::is_initialized()) {
        Kokkos::initialize();
        std::atexit([] {
          if (Kokkos::is_initialized()) Kokkos::finalize();
        });
      }
    });
  } catch (const std::exception& e) {
    failure = e.what();
  }
  say(err, err_size, failure);
  return failure.empty() ? 0 : 1;
}

PTK_BACKEND_EXPORT int ptk_backend_run_op(const char* name, int32_t n_in, const ptk_backend_tensor* in, int32_t n_set,
                                          const char* const* keys, const char* const* values, int32_t max_out,
                                          ptk_backend_tensor* out, int32_t* n_out, char* err, uint64_t err_size) {
  if (n_out) *n_out = 0;
  try {
    return run_op(name, n_in, in, n_set, keys, values, max_out, out, n_out);
  } catch (const ptk::Error& e) {  // the tool's table: the message and status `ptk op` would give
    const auto& rule = ptk::tools::exit_rule(e.error_kind());
    say(err, err_size, rule.prefix + e.line());
    return rule.status;
  } catch (const std::bad_alloc&) {
    say(err, err_size, "out of memory");
    return ptk::tools::exit_rule(ptk::ErrorKind::out_of_memory).status;
  } catch (const std::exception& e) {
    say(err, err_size, std::string("internal error: ") + e.what());
    return 1;
  } catch (...) {
    say(err, err_size, "internal error: an unknown exception");
    return 1;
  }
}

PTK_BACKEND_EXPORT void ptk_backend_free(void* data) { std::free(data); }

// The memory `ptk train` or `ptk generate` with this command line needs on its device, found by running the
// command as far as its memory check (in the launcher's child process, which this may leave with its output
// silenced). 0: no estimate (another command, or one that fails before its check: the real run will say why).
PTK_BACKEND_EXPORT int ptk_backend_need(int argc, char** argv, uint64_t* bytes) {
  if (!bytes || argc < 2) return 1;
  *bytes = 0;
  const std::string command = argv[1];
  if (command != "train" && command != "generate") return 0;
  const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
  }
  ptk::tools::Args args(argv + 2, argv + argc);
  ptk::tools::estimating_need() = true;
  try {
    ptk::runtime::set_openmp_defaults();
    Kokkos::ScopeGuard kokkos;
    if (command == "train") ptk::tools::train_command(args);
    else ptk::tools::generate_command(args);
  } catch (const ptk::tools::NeedEstimate& need) {
    *bytes = static_cast<uint64_t>(need.bytes);
  } catch (...) {
  }
  return 0;
}
