#include "ptk/core/runtime.hpp"

#include <Kokkos_Macros.hpp>

#include <cstdio>
#include <malloc.h>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "ptk/kernels/tuning.hpp"

#if defined(KOKKOS_ENABLE_OPENMP)
#include <omp.h>
#endif
#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#elif defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime_api.h>
#endif

namespace ptk::runtime {

const char* gpu_backend() {
#if defined(KOKKOS_ENABLE_CUDA)
  return "CUDA";
#elif defined(KOKKOS_ENABLE_HIP)
  return "HIP";
#else
  return "";
#endif
}

const char* backend_name() {
#if defined(KOKKOS_ENABLE_CUDA)
  return "cuda";
#elif defined(KOKKOS_ENABLE_HIP)
  return "hip";
#else
  return "cpu";
#endif
}

bool backend_choice_fits(const std::string& program, const std::string& flag) {
  const char* env = std::getenv("PTK_BACKEND");
  const std::string choice = !flag.empty() ? flag : env && *env ? env : "auto";
  const char* from = !flag.empty() ? "--backend" : "PTK_BACKEND";
  if (choice != "auto" && choice != "cpu" && choice != "cuda" && choice != "hip") {
    std::cerr << program << ": " << from << " is '" << choice << "'; expected auto, cpu, cuda or hip\n";
    return false;
  }
  if (choice == "auto" || choice == backend_name()) return true;
  std::cerr << program << ": " << from << " " << choice << ": this program is a one-backend build (" << backend_name()
            << "); an install's ptk chooses among the backends installed (docs/design.md, \"Backends chosen at run time\")\n";
  return false;
}

GpuProbe probe_gpus(bool details) {
  GpuProbe probe;
#if defined(KOKKOS_ENABLE_CUDA)
  probe.built = true;
  int n = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess) {
    probe.error = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    probe.problem = e == cudaErrorNoDevice ? GpuProblem::no_device
                    : e == cudaErrorInsufficientDriver || e == cudaErrorSystemDriverMismatch ? GpuProblem::driver
                                                                                              : GpuProblem::init;
    cudaGetLastError();  // reset the last-error state for whoever calls the runtime next
    return probe;
  }
  probe.count = n;
  if (!details) return probe;
  int current = 0;
  cudaGetDevice(&current);
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    GpuDevice d;
    d.id = i;
    d.name = p.name;
    d.arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor) + " (compute capability " +
             std::to_string(p.major) + "." + std::to_string(p.minor) + ")";
    d.total_bytes = p.totalGlobalMem;
    d.multiprocessors = p.multiProcessorCount;
    d.integrated = p.integrated != 0;
    std::size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaSetDevice(i);
    if (e == cudaSuccess) e = cudaMemGetInfo(&free_b, &total_b);  // creates the device's context
    if (e == cudaSuccess) {
      d.free_bytes = free_b;
    } else if (probe.problem == GpuProblem::none) {
      probe.problem = GpuProblem::init;
      probe.error = "device " + std::to_string(i) + ": cudaMemGetInfo: " + cudaGetErrorString(e);
      cudaGetLastError();
    }
    probe.devices.push_back(d);
  }
  cudaSetDevice(current);
#elif defined(KOKKOS_ENABLE_HIP)
  probe.built = true;
  int n = 0;
  if (const hipError_t e = hipGetDeviceCount(&n); e != hipSuccess) {
    probe.error = std::string("hipGetDeviceCount: ") + hipGetErrorString(e);
    probe.problem = e == hipErrorNoDevice ? GpuProblem::no_device
                    : e == hipErrorInsufficientDriver ? GpuProblem::driver : GpuProblem::init;
    return probe;
  }
  probe.count = n;
  if (!details) return probe;
  int current = 0;
  (void)hipGetDevice(&current);
  for (int i = 0; i < n; ++i) {
    hipDeviceProp_t p{};
    if (hipGetDeviceProperties(&p, i) != hipSuccess) continue;
    GpuDevice d;
    d.id = i;
    d.name = p.name;
    d.arch = p.gcnArchName;
    d.total_bytes = p.totalGlobalMem;
    d.multiprocessors = p.multiProcessorCount;
    d.integrated = p.integrated != 0;
    std::size_t free_b = 0, total_b = 0;
    hipError_t e = hipSetDevice(i);
    if (e == hipSuccess) e = hipMemGetInfo(&free_b, &total_b);
    if (e == hipSuccess) {
      d.free_bytes = free_b;
    } else if (probe.problem == GpuProblem::none) {
      probe.problem = GpuProblem::init;
      probe.error = "device " + std::to_string(i) + ": hipMemGetInfo: " + hipGetErrorString(e);
    }
    probe.devices.push_back(d);
  }
  (void)hipSetDevice(current);
#else
  (void)details;
#endif
  if (probe.built && probe.count == 0 && probe.error.empty()) {
    probe.error = "the runtime reports 0 devices";
    probe.problem = GpuProblem::no_device;
  }
  return probe;
}

bool gpu_build_without_gpu() {
  const auto probe = probe_gpus(false);
  return probe.built && probe.count == 0;
}

std::string no_gpu_message(const std::string& program) {
  const auto probe = probe_gpus(false);
  return program + ": this is a " + gpu_backend() + " build and this machine has no " + gpu_backend() + " device (" +
         probe.error + "); Kokkos cannot start a " + gpu_backend() +
         " build without one, not even for the host: use the cpu build (cmake --preset cpu)";
}

int check_can_initialize(const std::string& program) {
  if (!gpu_build_without_gpu()) return 0;
  std::cerr << no_gpu_message(program) << '\n';
  return 2;
}

std::string device_from_env(const std::string& program, const std::string& fallback) {
  const char* v = std::getenv("PTK_DEVICE");
  if (!v || !*v) return fallback;
  const std::string s = v;
  if (s == "host" || s == "default") return s;
  std::cerr << program << ": PTK_DEVICE must be host or default, got '" << s << "'\n";
  return "";
}

void set_openmp_defaults() {
  if (std::getenv("OMP_PROC_BIND") || std::getenv("OMP_PLACES") || std::getenv("GOMP_CPU_AFFINITY")) return;
  setenv("OMP_PROC_BIND", "false", 1);
}

namespace {
std::string tuning_setting() {
  const char* t = std::getenv("PTK_TUNING");
  return t && *t ? t : "host";
}
}  // namespace

std::string tuning_from_env(const std::string& program) {
  const std::string tuning = tuning_setting();
  if (tuning == "host" || tuning == "gpu") return tuning;
  std::cerr << program << ": PTK_TUNING is '" << tuning << "'; expected host or gpu\n";
  return "";
}

bool host_runs_gpu_tuning() {
#if defined(KOKKOS_ENABLE_OPENMP)
  static const bool gpu = tuning_setting() == "gpu";
  return gpu;
#else
  return false;
#endif
}

void set_gpu_tuning_threads() {
#if defined(KOKKOS_ENABLE_OPENMP)
  if (host_runs_gpu_tuning() && omp_get_max_threads() < kernels::emulated_gpu_team)
    omp_set_num_threads(kernels::emulated_gpu_team);
#endif
}

namespace {
std::size_t meminfo(const char* wanted) {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  unsigned long long kib = 0;
  while (in >> key >> kib >> unit)
    if (key == wanted) return static_cast<std::size_t>(kib) * 1024;
  return 0;
}
}  // namespace

// A number from a cgroup v2 file, 0 when absent or "max" (no limit).
static std::size_t cgroup_value(const char* file) {
  std::ifstream in(std::string("/sys/fs/cgroup/") + file);
  unsigned long long v = 0;
  return in >> v ? static_cast<std::size_t>(v) : 0;
}

std::size_t host_available_bytes() {
  std::size_t available = meminfo("MemAvailable:");
  // In a container the cgroup's limit is what counts: the kernel kills the process at memory.max.
  const std::size_t limit = cgroup_value("memory.max"), used = cgroup_value("memory.current");
  if (limit > 0) {
    const std::size_t left = limit > used ? limit - used : 0;
    if (available == 0 || left < available) available = left;
  }
  return available;
}
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);   // glibc's largest allowed threshold on 64-bit
  mallopt(M_TRIM_THRESHOLD, 256 << 20);  // return memory only when this much is free at the top
#endif
}

std::size_t host_total_bytes() { return meminfo("MemTotal:"); }

}  // namespace ptk::runtime
