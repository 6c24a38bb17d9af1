#include "ptk/dist/comm.hpp"

#include <Kokkos_Core.hpp>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <type_traits>

#include "ptk/core/runtime.hpp"

#if defined(PTK_HAVE_MPI)
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_Query_cuda_support (and, from 5.0, MPIX_Query_rocm_support)
#endif
#endif

namespace ptk::dist {

namespace {

using DeviceMemory = Kokkos::DefaultExecutionSpace::memory_space;
constexpr bool kHostOnly = Kokkos::SpaceAccessibility<Kokkos::HostSpace, DeviceMemory>::accessible;
// Whether a buffer in `memory` is host memory (device memory is, in a host-only build).
bool is_host(Memory memory) { return memory == Memory::host || kHostOnly; }

using HostView = Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using DeviceView = Kokkos::View<float*, DeviceMemory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// n floats from src (in `memory`) to dst (in `memory` too, or host memory with to_host): the staging copies.
void copy_floats(float* dst, bool dst_host, const float* src, bool src_host, std::int64_t n) {
  if (n <= 0) return;
  const auto count = static_cast<std::size_t>(n);
  float* s = const_cast<float*>(src);
  if (dst_host && src_host) {
    std::memmove(dst, s, count * sizeof(float));
  } else if (dst_host) {
    Kokkos::deep_copy(HostView(dst, count), DeviceView(s, count));
  } else if (src_host) {
    Kokkos::deep_copy(DeviceView(dst, count), HostView(s, count));
  } else {
    Kokkos::deep_copy(DeviceView(dst, count), DeviceView(s, count));
  }
}

std::vector<std::int64_t> offsets_of(const std::vector<std::int64_t>& counts) {
  std::vector<std::int64_t> offsets(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i) offsets[i] = offsets[i - 1] + counts[i - 1];
  return offsets;
}

std::int64_t total_of(const std::vector<std::int64_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
}

// Times one collective into the communicator's total.
class Timed {
 public:
  explicit Timed(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~Timed() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

#if defined(PTK_HAVE_MPI)
// MPI takes int counts: a part beyond 2^31 - 1 floats (8 GiB) is refused with its size rather than truncated.
std::vector<int> int_counts(const std::vector<std::int64_t>& counts, const char* what) {
  std::vector<int> out;
  for (auto c : counts) {
    require(c >= 0 && c <= INT_MAX, "dist: ", what, ": a part of ", c, " floats is more than MPI's int count allows");
    out.push_back(static_cast<int>(c));
  }
  return out;
}

bool query_gpu_aware() {
  if (const char* forced = env("PTK_MPI_GPU_AWARE")) return std::string(forced) == "1";
  const std::string backend = runtime::gpu_backend();
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (backend == "CUDA") return MPIX_Query_cuda_support() == 1;
#endif
#if defined(MPIX_ROCM_AWARE_SUPPORT) && MPIX_ROCM_AWARE_SUPPORT
  if (backend == "HIP") return MPIX_Query_rocm_support() == 1;
#endif
  return false;
}
#endif

}  // namespace

Comm& Comm::world() {
  static Comm comm;
  return comm;
}

void Comm::start(int rank, int size, bool gpu_aware, std::string library) {
  rank_ = rank;
  size_ = size;
  gpu_aware_ = gpu_aware;
  library_ = std::move(library);
  mpi_ = true;
  const char* staging = env("PTK_MPI_FORCE_STAGING");
  force_staging_ = staging != nullptr && std::string(staging) == "1";
}

bool Comm::direct(Memory memory) const { return !force_staging_ && (is_host(memory) || gpu_aware_); }

double Comm::take_seconds() {
  const double s = seconds_;
  seconds_ = 0.0;
  return s;
}

void Comm::allreduce_sum(float* data, std::int64_t n, Memory memory) {
  if (size_ == 1 || n <= 0) return;
  Kokkos::fence();  // the kernels that wrote the buffer
  Timed timed(seconds_);
  float* buffer = data;
  if (!direct(memory)) {
    staging_.resize(static_cast<std::size_t>(n));
    copy_floats(staging_.data(), true, data, is_host(memory), n);
    buffer = staging_.data();
  }
#if defined(PTK_HAVE_MPI)
  for (std::int64_t at = 0; at < n; at += INT_MAX)
    MPI_Allreduce(MPI_IN_PLACE, buffer + at, static_cast<int>(std::min<std::int64_t>(INT_MAX, n - at)), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
#endif
  if (buffer != data) copy_floats(data, is_host(memory), buffer, true, n);
}

struct Comm::Started {
#if defined(PTK_HAVE_MPI)
  MPI_Request request = MPI_REQUEST_NULL;
#endif
  std::vector<float> host;     // the staged copy, when MPI does not take the buffer itself
  float* data = nullptr;       // where the sum goes back to from host
  std::int64_t n = 0;
  Memory memory = Memory::host;
};

void Comm::start_allreduce_sum(float* data, std::int64_t n, Memory memory) {
  if (size_ == 1 || n <= 0) return;
  require(n <= INT_MAX, "dist: a bucket of ", n, " floats is more than MPI's int count allows");
  Kokkos::fence();  // the kernels that wrote the buffer
  Timed timed(seconds_);
  auto op = std::make_shared<Started>();
  float* buffer = data;
  if (!direct(memory)) {
    op->host.resize(static_cast<std::size_t>(n));
    copy_floats(op->host.data(), true, data, is_host(memory), n);
    buffer = op->host.data();
    op->data = data;
    op->n = n;
    op->memory = memory;
  }
#if defined(PTK_HAVE_MPI)
  MPI_Iallreduce(MPI_IN_PLACE, buffer, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &op->request);
#else
  (void)buffer;
#endif
  started_.push_back(std::move(op));
}

void Comm::progress() {
  if (started_.empty()) return;
  Timed timed(seconds_);
#if defined(PTK_HAVE_MPI)
  for (const auto& op : started_) {
    int done = 0;
    MPI_Test(&op->request, &done, MPI_STATUS_IGNORE);
  }
#endif
}

void Comm::wait_all() {
  if (started_.empty()) return;
  Timed timed(seconds_);
  for (const auto& op : started_) {
#if defined(PTK_HAVE_MPI)
    MPI_Wait(&op->request, MPI_STATUS_IGNORE);
#endif
    if (op->data != nullptr) copy_floats(op->data, is_host(op->memory), op->host.data(), true, op->n);
  }
  started_.clear();
}

void Comm::allreduce_sum(double* data, std::int64_t n) {
  if (size_ == 1 || n <= 0) return;
  Timed timed(seconds_);
#if defined(PTK_HAVE_MPI)
  require(n <= INT_MAX, "dist: allreduce of ", n, " doubles is more than MPI's int count allows");
  MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#endif
}

void Comm::reduce_scatter_sum(const float* full, float* mine, const std::vector<std::int64_t>& counts, Memory memory) {
  require(static_cast<int>(counts.size()) == size_, "dist: reduce_scatter: ", counts.size(), " counts for ", size_, " ranks");
  const std::int64_t n = total_of(counts), own = counts[static_cast<std::size_t>(rank_)];
  if (size_ == 1) {
    copy_floats(mine, is_host(memory), full, is_host(memory), own);
    return;
  }
  Kokkos::fence();
  Timed timed(seconds_);
  const float* in = full;
  float* out = mine;
  if (!direct(memory)) {
    staging_.resize(static_cast<std::size_t>(n));
    staging_out_.resize(static_cast<std::size_t>(own));
    copy_floats(staging_.data(), true, full, is_host(memory), n);
    in = staging_.data();
    out = staging_out_.data();
  }
#if defined(PTK_HAVE_MPI)
  const auto c = int_counts(counts, "reduce_scatter");
  MPI_Reduce_scatter(in, out, c.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
#endif
  if (out != mine) copy_floats(mine, is_host(memory), out, true, own);
}

void Comm::allgather(float* full, const std::vector<std::int64_t>& counts, Memory memory) {
  require(static_cast<int>(counts.size()) == size_, "dist: allgather: ", counts.size(), " counts for ", size_, " ranks");
  if (size_ == 1) return;
  Kokkos::fence();
  Timed timed(seconds_);
  const std::int64_t n = total_of(counts);
  float* buffer = full;
  if (!direct(memory)) {
    // Only this rank's part is needed on the host before the exchange; the whole buffer comes back after it.
    staging_.resize(static_cast<std::size_t>(n));
    const auto offset = offsets_of(counts)[static_cast<std::size_t>(rank_)];
    copy_floats(staging_.data() + offset, true, full + offset, is_host(memory), counts[static_cast<std::size_t>(rank_)]);
    buffer = staging_.data();
  }
#if defined(PTK_HAVE_MPI)
  const auto c = int_counts(counts, "allgather"), d = int_counts(offsets_of(counts), "allgather");
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer, c.data(), d.data(), MPI_FLOAT, MPI_COMM_WORLD);
#endif
  if (buffer != full) copy_floats(full, is_host(memory), buffer, true, n);
}

void Comm::gather_to_root(const float* mine, float* full_host, const std::vector<std::int64_t>& counts, Memory memory) {
  require(static_cast<int>(counts.size()) == size_, "dist: gather: ", counts.size(), " counts for ", size_, " ranks");
  const std::int64_t own = counts[static_cast<std::size_t>(rank_)];
  if (size_ == 1) {
    copy_floats(full_host, true, mine, is_host(memory), own);
    return;
  }
  Kokkos::fence();
  Timed timed(seconds_);
  const float* in = mine;
  if (!direct(memory)) {  // MPI_Gatherv's send side; the receive side is host memory
    staging_.resize(static_cast<std::size_t>(own));
    copy_floats(staging_.data(), true, mine, is_host(memory), own);
    in = staging_.data();
  }
#if defined(PTK_HAVE_MPI)
  const auto c = int_counts(counts, "gather"), d = int_counts(offsets_of(counts), "gather");
  MPI_Gatherv(in, c[static_cast<std::size_t>(rank_)], MPI_FLOAT, full_host, c.data(), d.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
#else
  (void)in;
#endif
}

std::vector<std::string> Comm::allgather(const std::string& text) {
  if (size_ == 1) return {text};
  std::vector<std::string> out(static_cast<std::size_t>(size_));
#if defined(PTK_HAVE_MPI)
  require(text.size() <= INT_MAX, "dist: allgather of a ", text.size(), "-byte string");
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_), 0);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (std::size_t r = 1; r < lengths.size(); ++r) displs[r] = displs[r - 1] + lengths[r - 1];
  std::string all(static_cast<std::size_t>(displs.back() + lengths.back()), '\0');
  MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD);
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r] = all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(lengths[r]));
#endif
  return out;
}

void Comm::barrier() {
#if defined(PTK_HAVE_MPI)
  if (mpi_) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

void Comm::abort(int code) {
#if defined(PTK_HAVE_MPI)
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

bool launched_by_mpi() {
  if (const char* forced = env("PTK_MPI")) return std::string(forced) != "0";
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MV2_COMM_WORLD_RANK"})
    if (env(name) != nullptr) return true;
  return false;
}

bool built_with_mpi() {
#if defined(PTK_HAVE_MPI)
  return true;
#else
  return false;
#endif
}

Session::Session(int* argc, char*** argv) {
  if (!launched_by_mpi()) return;
#if defined(PTK_HAVE_MPI)
  int provided = 0;
  // FUNNELED: only the thread that called MPI_Init calls MPI (Kokkos' OpenMP threads never do).
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  started_ = true;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string library(version, static_cast<std::size_t>(length));
  library = library.substr(0, library.find_first_of(",\n"));
  Comm::world().start(rank, size, query_gpu_aware(), library);
#else
  (void)argc;
  (void)argv;
  const char* size = env("OMPI_COMM_WORLD_SIZE") ? env("OMPI_COMM_WORLD_SIZE") : env("PMI_SIZE");
  if (size != nullptr && std::string(size) != "1")
    throw Error(std::string("dist: started by an MPI launcher as one of ") + size +
                " ranks, but this ptk was built without MPI (PTK_ENABLE_MPI=OFF): every rank would train alone. "
                "Install libopenmpi-dev and reconfigure, or run without mpirun");
#endif
}

Session::~Session() {
#if defined(PTK_HAVE_MPI)
  if (started_) MPI_Finalize();
#endif
}

std::string first_difference(const std::vector<std::pair<std::string, std::string>>& a,
                             const std::vector<std::pair<std::string, std::string>>& b) {
  std::map<std::string, std::string> in_b(b.begin(), b.end());
  for (const auto& [key, value] : a) {
    const auto it = in_b.find(key);
    const std::string other = it == in_b.end() ? "(missing)" : it->second;
    if (other != value) return key + ": " + value + " vs " + other;
  }
  std::map<std::string, std::string> in_a(a.begin(), a.end());
  for (const auto& [key, value] : b)
    if (in_a.count(key) == 0) return key + ": (missing) vs " + value;
  return "";
}

namespace {
std::string serialize(const std::vector<std::pair<std::string, std::string>>& settings) {
  std::string s;
  for (const auto& [key, value] : settings) s += key + '\t' + value + '\n';
  return s;
}
std::vector<std::pair<std::string, std::string>> deserialize(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = text.find('\n', at), tab = text.find('\t', at);
    out.emplace_back(text.substr(at, tab - at), text.substr(tab + 1, end - tab - 1));
    at = end + 1;
  }
  return out;
}
}  // namespace

void require_same_configuration(Comm& comm, const std::vector<std::pair<std::string, std::string>>& settings) {
  if (!comm.distributed()) return;
  const auto all = comm.allgather(serialize(settings));
  const auto root = deserialize(all[0]);
  for (std::size_t r = 1; r < all.size(); ++r) {
    const std::string diff = first_difference(root, deserialize(all[r]));
    if (!diff.empty())
      throw CollectiveError("dist: the ranks disagree at start-up, rank 0 vs rank " + std::to_string(r) + " on " + diff +
                            " (every rank must run the same ptk build with the same settings and data)");
  }
}

}  // namespace ptk::dist
