#pragma once
// What a ptk program needs to know before Kokkos::initialize: the GPU backend this build has, how
// many devices the machine offers it (counted through the CUDA/HIP runtime API, never through
// Kokkos), the device a user asked for (PTK_DEVICE, --device) and sane OpenMP defaults.
//
// Why a GPU build cannot fall back to the host on a machine without a GPU: Kokkos::initialize
// initializes every backend compiled in, and its CUDA and HIP backends abort the process when the
// runtime reports no device. There is no Kokkos switch to leave a backend out at run time, so a
// program of a GPU build checks the device count first and, where there is none, refuses with one
// line that names the cpu build (exit 2) instead of dying with Kokkos' abort trace. See
// docs/design.md, "Run-time device selection".
#include <cstddef>
#include <string>
#include <vector>

namespace ptk::runtime {

// "CUDA" or "HIP" when Kokkos was built with that backend, "" for a host-only build.
const char* gpu_backend();

struct GpuDevice {
  int id = 0;
  std::string name;
  std::string arch;              // "sm_90 (compute capability 9.0)" or the gfx arch, e.g. "gfx90a"
  std::size_t total_bytes = 0;
  std::size_t free_bytes = 0;    // 0 when not asked for (querying it creates a context)
  int multiprocessors = 0;       // SMs (CUDA) or compute units (HIP)
  bool integrated = false;       // shares the host's memory (an APU, a Jetson)
};

// Why a GPU build's runtime offers no usable device.
enum class GpuProblem { none, no_device, driver, init };

struct GpuProbe {
  bool built = false;            // the build has a GPU backend
  int count = 0;                 // devices the runtime reports (0 on any runtime error)
  std::string error;             // the runtime's message when it reported none, e.g. "no CUDA-capable device is detected"
  GpuProblem problem = GpuProblem::none;  // init: a device could not be opened (with `details` only)
  std::vector<GpuDevice> devices;
};

// Counts the devices of the built GPU backend; with `details`, also reads each device's
// properties and free memory. Safe before and after Kokkos::initialize.
GpuProbe probe_gpus(bool details = false);

// What --backend and PTK_BACKEND call this build's backend: "cuda", "hip" or "cpu".
const char* backend_name();

// The backend a one-backend program (build/<preset>/ptk, ptk_tests, ptk_bench) was asked for: `flag` (--backend),
// else PTK_BACKEND, else auto. True for auto and for this build's own name; otherwise prints one line (an unknown
// name, or a backend this build does not have: only an install's launcher chooses among several) and returns
// false (the caller exits 2).
bool backend_choice_fits(const std::string& program, const std::string& flag = "");

// True when the build has a GPU backend and the machine offers it no device.
bool gpu_build_without_gpu();

// The one-line refusal for a GPU build on a machine without its GPU (no trailing newline).
std::string no_gpu_message(const std::string& program);

// For a program about to call Kokkos::initialize: returns 0 when it may, else prints
// no_gpu_message(program) on stderr and returns 2, the exit status to leave with.
int check_can_initialize(const std::string& program);

// PTK_DEVICE: "host" or "default" (the default execution space, a GPU in a GPU build); unset or
// empty means `fallback`. Anything else prints one line and returns "" (the caller exits 2).
std::string device_from_env(const std::string& program, const std::string& fallback = "default");

// Kokkos' OpenMP backend warns (on every start) unless thread binding is configured. When the user
// set none of OMP_PROC_BIND, OMP_PLACES and GOMP_CPU_AFFINITY, sets OMP_PROC_BIND=false; a user's
// own setting is always left alone. Not "spread": the variable is inherited by the processes ptk
// starts (ptk bench runs ptk_bench, which re-executes itself), whose OpenMP runtime then pins the
// initial thread to one core before main, so OpenBLAS and Kokkos both saw a single CPU. Call it
// before Kokkos::initialize.
void set_openmp_defaults();

// The tuning the host runs the ops, autograd and model with (PTK_TUNING): "host" (the default: the
// host's own tuning) or "gpu" (OpenMP runs the GPU tuning, teams of kernels::emulated_gpu_team
// threads, so every GPU code path is exercised on a CPU; docs/design.md, "Tuning"). Read once, at
// the first call; anything else prints one line and returns "" (the caller exits 2). Kernels and ops
// take the tuning as a template argument; this choice is for the layers above them.
std::string tuning_from_env(const std::string& program);
// True when this process runs the GPU tuning on the host (PTK_TUNING=gpu in a build with OpenMP).
bool host_runs_gpu_tuning();
// For a program about to call Kokkos::initialize under PTK_TUNING=gpu: OpenMP's pool needs at least
// a GPU team's threads (oversubscribed on a small machine: correct, only slower).
void set_gpu_tuning_threads();

// Keeps freed host memory in the process for reuse instead of returning it to the kernel. glibc serves
// blocks above its mmap threshold with fresh mmaps and unmaps them on free, so a training step that
// allocates its activations and frees them again paid a page fault per 4 KB page of every tensor, every
// step (docs/benchmarks.md, "Tuning choices"). Resident memory stays flat (the same sizes come back each
// step). Call it once, early; ptk and the test programs do.
void keep_freed_memory();

// Host memory available for new allocations: MemAvailable, or less where a cgroup v2 limit (memory.max minus
// memory.current) leaves less; 0 if unknown.
std::size_t host_available_bytes();
std::size_t host_total_bytes();

}  // namespace ptk::runtime
