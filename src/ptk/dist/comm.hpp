#pragma once
// ptk::dist: the processes of one data-parallel job and what they say to each other (MPI + X).
//
// A job is one process per rank, started by mpirun or srun; ranks hold the same model and each trains on its share
// of every batch (nn/data_parallel.hpp). Without a launcher, or in a build without MPI (PTK_ENABLE_MPI off), the
// world is one rank and every collective is the identity: a program written against Comm runs unchanged in one
// process. This header includes neither MPI nor Kokkos.
//
// Comm is the one front of the collectives; a Backend (backend.hpp) carries them: MPI's (mpi_backend.cpp, built
// only with MPI) or the one-rank world's. Comm writes everything around a backend's call once: the fence, the
// timing, host staging (staging.hpp) and the cutting of collectives longer than an int count (max_count()).
//
// Buffers live in host memory or in the default execution space's memory (a GPU's). Whether a collective hands the
// backend the buffer's own pointer or copies it through a host staging buffer is decided in one place,
// Comm::direct(): host memory always goes directly, device memory only where the MPI library says at run time that
// it is GPU-aware (Open MPI's MPIX_Query_cuda_support / MPIX_Query_rocm_support, or PTK_MPI_GPU_AWARE=0|1 for the
// libraries that have no such query). PTK_MPI_FORCE_STAGING=1 stages every buffer, host memory too: the staging path
// then runs, and is tested, on a CPU build.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptk/core/error.hpp"

namespace ptk::dist {

// Where a buffer handed to a collective lives.
enum class Memory { host, device };

// An error every rank has found together (the same check on the same gathered data), so that no rank has to bring
// the others down: rank 0 prints it and every rank exits 2 through MPI_Finalize. Any other error on a rank of a
// multi-rank job ends the job through abort().
class CollectiveError : public Error {
 public:
  explicit CollectiveError(const std::string& message) : Error(ErrorKind::collective, message) {}
};

class Backend;     // dist/backend.hpp: what carries the collectives (MPI's, or the one-rank world's)
enum class Type;   // dist/backend.hpp: the element types

class Comm {
 public:
  // The world of this process: the MPI job when Session started MPI, else one rank.
  static Comm& world();
  // A world carried by `backend` (Comm::world() starts with the one-rank backend; tests bring their own).
  explicit Comm(std::unique_ptr<Backend> backend);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }
  bool gpu_aware() const { return gpu_aware_; }
  // True when collectives pass a buffer in `memory` to the backend as it is (host memory; device memory in a
  // host-only build, where it is host memory, or with a GPU-aware MPI); false when they stage it through the host.
  bool direct(Memory memory) const;
  // "Open MPI 4.1.4" (or "none" in a one-rank world without MPI).
  const std::string& library() const { return library_; }

  // In-place sums over the ranks. Float buffers may be in device memory; the result is on every rank.
  void allreduce_sum(float* data, std::int64_t n, Memory memory);
  void allreduce_sum(double* data, std::int64_t n);
  // The same started without waiting (MPI_Iallreduce), to overlap with computation: progress() lets MPI move the
  // started sums along, wait_all() finishes every one. The buffer must not be touched until then.
  void start_allreduce_sum(float* data, std::int64_t n, Memory memory);
  void progress();
  void wait_all();
  // full holds sum(counts) floats on every rank; rank r receives the sum of its part [offset_r, offset_r + counts[r])
  // into mine (counts[r] floats). full and mine are in `memory`.
  void reduce_scatter_sum(const float* full, float* mine, const std::vector<std::int64_t>& counts, Memory memory);
  // In place: each rank's part of full (at its offset, counts[rank] floats) is copied to every other rank.
  void allgather(float* full, const std::vector<std::int64_t>& counts, Memory memory);
  // Rank 0 receives every rank's part (counts[r] floats, from `mine` in `memory`) into full_host (host memory,
  // sum(counts) floats; ignored on other ranks).
  void gather_to_root(const float* mine, float* full_host, const std::vector<std::int64_t>& counts, Memory memory);
  // Every rank's string, in rank order.
  std::vector<std::string> allgather(const std::string& text);
  void barrier();

  // Ends every process of the job with `code` (MPI_Abort), or this process alone in a one-rank world.
  [[noreturn]] void abort(int code);

  // Seconds spent inside collectives since the last call (the communication share of a step).
  double take_seconds();

  // The most elements one backend call carries: INT_MAX, since MPI's counts and displacements are int. Every
  // collective longer than that is cut into calls of at most max_count() elements (a part of each rank's, for the
  // collectives with counts), with the same result. Tests set it small, to run the cutting on small buffers:
  // set_max_count, or PTK_MPI_MAX_COUNT=N in the environment (read when a backend is installed).
  std::int64_t max_count() const { return max_count_; }
  void set_max_count(std::int64_t n);

  // For Session: the MPI world replaces the one-rank one. Reads PTK_MPI_FORCE_STAGING and PTK_MPI_MAX_COUNT.
  void install(std::unique_ptr<Backend> backend);

 private:
  // Each collective once, over elements of any type, cut into backend calls of at most max_count_ elements.
  void allreduce_pieces(void* data, std::int64_t n, Type type, bool start);
  void reduce_scatter_pieces(const void* in, void* out, const std::vector<std::int64_t>& counts, Type type);
  void allgather_pieces(void* data, const std::vector<std::int64_t>& counts, Type type);
  void gather_pieces(const void* in, void* out, const std::vector<std::int64_t>& counts, Type type);
  void check_counts(const std::vector<std::int64_t>& counts, const char* what) const;

  std::unique_ptr<Backend> backend_;
  int rank_ = 0, size_ = 1;
  bool gpu_aware_ = false, force_staging_ = false;
  std::string library_;
  std::int64_t max_count_;
  double seconds_ = 0.0;
  std::vector<float> staging_, staging_out_;  // host copies of buffers the backend cannot take, reused call to call
  std::vector<char> packed_;                  // a piece of every rank's part, when a collective is cut (comm.cpp)
  struct Started;                             // the sums start_allreduce_sum began, and their staging (comm.cpp)
  std::vector<std::unique_ptr<Started>> started_;
};

// True when this process was started by an MPI launcher (mpirun, mpiexec, srun with PMI/PMIx): Open MPI's,
// PMIx's, PMI's and MVAPICH's rank variables. PTK_MPI=1 forces MPI on (a one-rank singleton), PTK_MPI=0 off.
bool launched_by_mpi();

// Starts MPI (before Kokkos, as MPI + Kokkos programs must) when launched_by_mpi() and the build has MPI, and ends
// it when destroyed; otherwise does nothing and the world is one rank. A build without MPI launched by mpirun with
// more than one rank refuses with an Error, rather than run N independent copies of a job.
class Session {
 public:
  Session(int* argc, char*** argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

 private:
  bool started_ = false;
};

// Whether this build was compiled with MPI (PTK_ENABLE_MPI).
bool built_with_mpi();

// Start-up agreement. Each rank describes itself as "key=value" lines (versions, build, run settings); every rank
// compares all of them and, on a difference, all throw the same CollectiveError naming the first rank, key and
// both values. A one-rank world checks nothing.
void require_same_configuration(Comm& comm, const std::vector<std::pair<std::string, std::string>>& settings);

// The first key whose value differs between two descriptions (a key one lacks counts as "(missing)"), as
// "key: a vs b"; "" when they agree.
std::string first_difference(const std::vector<std::pair<std::string, std::string>>& a,
                             const std::vector<std::pair<std::string, std::string>>& b);

}  // namespace ptk::dist
