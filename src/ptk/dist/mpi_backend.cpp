// MPI's backend: each collective one MPI call (compiled only when CMake finds MPI; no_mpi.cpp otherwise). Comm has
// already fenced, staged and cut the buffers (comm.cpp), so every count here fits MPI's int.
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support (and, from 5.0, MPIX_Query_rocm_support)
#endif

#include <cstdlib>
#include <vector>

#include "ptk/core/runtime.hpp"
#include "ptk/dist/backend.hpp"
#include "ptk/dist/comm.hpp"

namespace ptk::dist {

bool built_with_mpi() { return true; }

namespace {

MPI_Datatype mpi_type(Type type) {
  switch (type) {
    case Type::f32: return MPI_FLOAT;
    case Type::f64: return MPI_DOUBLE;
    case Type::i64: return MPI_INT64_T;
    case Type::byte: return MPI_CHAR;
  }
  return MPI_CHAR;
}

// Whether the MPI library takes device pointers: PTK_MPI_GPU_AWARE=0|1 for libraries without a query.
bool query_gpu_aware() {
  const char* forced = std::getenv("PTK_MPI_GPU_AWARE");
  if (forced != nullptr && *forced != '\0') return std::string(forced) == "1";
  const std::string backend = runtime::gpu_backend();
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (backend == "CUDA") return MPIX_Query_cuda_support() == 1;
#endif
#if defined(MPIX_ROCM_AWARE_SUPPORT) && MPIX_ROCM_AWARE_SUPPORT
  if (backend == "HIP") return MPIX_Query_rocm_support() == 1;
#endif
  return false;
}

class Mpi final : public Backend {
 public:
  Mpi() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    library_.assign(version, static_cast<std::size_t>(length));
    library_ = library_.substr(0, library_.find_first_of(",\n"));
    gpu_aware_ = query_gpu_aware();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string library() const override { return library_; }
  bool gpu_aware() const override { return gpu_aware_; }

  void allreduce_sum(void* data, int n, Type type) override {
    MPI_Allreduce(MPI_IN_PLACE, data, n, mpi_type(type), MPI_SUM, MPI_COMM_WORLD);
  }
  void start_allreduce_sum(void* data, int n, Type type) override {
    requests_.push_back(MPI_REQUEST_NULL);
    MPI_Iallreduce(MPI_IN_PLACE, data, n, mpi_type(type), MPI_SUM, MPI_COMM_WORLD, &requests_.back());
  }
  // Without a progress thread, a started sum moves only inside MPI calls.
  void progress() override {
    for (auto& request : requests_) {
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
  }
  void wait_all() override {
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
  }
  void reduce_scatter_sum(const void* in, void* out, const int* counts, Type type) override {
    MPI_Reduce_scatter(in, out, counts, mpi_type(type), MPI_SUM, MPI_COMM_WORLD);
  }
  void allgatherv(void* data, const int* counts, const int* displs, Type type) override {
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts, displs, mpi_type(type), MPI_COMM_WORLD);
  }
  void gatherv(const void* in, void* out, const int* counts, const int* displs, Type type) override {
    MPI_Gatherv(in, counts[rank_], mpi_type(type), out, counts, displs, mpi_type(type), 0, MPI_COMM_WORLD);
  }
  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; this says so to the compiler
  }

 private:
  int rank_ = 0, size_ = 1;
  std::string library_;
  bool gpu_aware_ = false;
  std::vector<MPI_Request> requests_;
};

}  // namespace

bool start_mpi(int* argc, char*** argv) {
  int provided = 0;
  // FUNNELED: only the thread that called MPI_Init calls MPI (Kokkos' OpenMP threads never do).
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  Comm::world().install(std::make_unique<Mpi>());
  return true;
}

void finish_mpi() { MPI_Finalize(); }

}  // namespace ptk::dist
