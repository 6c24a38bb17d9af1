#pragma once
// The interface behind dist::Comm: one call of each collective, over buffers the backend takes as they are and with
// int counts. Comm does everything around the call once, for every backend: it fences the kernels that wrote a
// buffer, times the collective, stages device memory through the host where the backend cannot take it
// (staging.hpp), and cuts a collective longer than Comm::max_count() elements into calls of at most that many
// (MPI's counts and displacements are int). So a backend only translates a call.
//
// Two backends: one_rank_backend(), the world of a process that no MPI launcher started or of a build without MPI
// (each collective is the identity or a local copy), and MPI's (mpi_backend.cpp, compiled only when CMake finds MPI;
// no_mpi.cpp stands in for it otherwise). Tests may give a Comm a backend of their own.
// Neither MPI nor Kokkos is included here.
#include <cstddef>
#include <memory>
#include <string>

namespace ptk::dist {

// The element types the collectives move.
enum class Type { f32, f64, i64, byte };
std::size_t size_of(Type type);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "Open MPI 4.1.4", or "none".
  virtual std::string library() const = 0;
  // Whether device (GPU) pointers may be passed as they are.
  virtual bool gpu_aware() const = 0;

  // In-place sum of n elements over the ranks.
  virtual void allreduce_sum(void* data, int n, Type type) = 0;
  // The same, started without waiting: the buffer belongs to the backend until wait_all(); progress() lets the
  // started sums move along.
  virtual void start_allreduce_sum(void* data, int n, Type type) = 0;
  virtual void progress() = 0;
  virtual void wait_all() = 0;
  // `in` holds every rank's part in rank order (counts[r] elements each); `out` receives this rank's part summed
  // over the ranks.
  virtual void reduce_scatter_sum(const void* in, void* out, const int* counts, Type type) = 0;
  // In place: rank r's counts[r] elements at displs[r] of `data` reach every rank.
  virtual void allgatherv(void* data, const int* counts, const int* displs, Type type) = 0;
  // Rank 0's `out` receives each rank's counts[r] elements of `in` at displs[r] (`out` is ignored on other ranks).
  virtual void gatherv(const void* in, void* out, const int* counts, const int* displs, Type type) = 0;
  virtual void barrier() = 0;
  // Ends every process of the job with `code`.
  [[noreturn]] virtual void abort(int code) = 0;
};

std::unique_ptr<Backend> one_rank_backend();

// Defined by mpi_backend.cpp, or by no_mpi.cpp in a build without MPI. start_mpi starts MPI and installs its
// backend as Comm::world()'s (true), or, without MPI, refuses a multi-rank launch and leaves the world one rank
// (false). finish_mpi ends what start_mpi started.
bool start_mpi(int* argc, char*** argv);
void finish_mpi();

}  // namespace ptk::dist
