// dist::Comm: each collective written once over any Backend (backend.hpp). Around the backend's call: the fence
// (the kernels that wrote a buffer must be done before another process reads it), the timing, host staging
// (staging.hpp) and the one policy for collectives longer than an int count: cut them into backend calls of at most
// max_count() elements, which gives the same result (every collective here is elementwise).
#include "ptk/dist/comm.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>

#include "ptk/dist/backend.hpp"
#include "ptk/dist/staging.hpp"

namespace ptk::dist {

namespace {

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

// The backend calls of a collective over the ranks' parts (counts[r] elements each, contiguous in rank order).
// When the whole fits one call (at most max_count elements): one round on the buffer as it is. Otherwise round k
// takes elements [k·P, (k+1)·P) of every part, P = max_count / ranks (at least 1), packed in rank order, so that a
// round's total, and with it every count and displacement, fits max_count.
struct Round {
  std::vector<int> counts, displs;   // of the round as the backend sees it
  std::vector<std::int64_t> at;      // where each rank's piece begins within its part
  std::int64_t total = 0;
};

class Rounds {
 public:
  Rounds(const std::vector<std::int64_t>& counts, std::int64_t max_count)
      : counts_(counts), offsets_(offsets_of(counts)), whole_(total_of(counts) <= max_count) {
    const std::int64_t longest = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
    piece_ = whole_ ? std::max<std::int64_t>(longest, 1)
                    : std::max<std::int64_t>(1, max_count / static_cast<std::int64_t>(counts.size()));
    rounds_ = whole_ ? 1 : (longest + piece_ - 1) / piece_;
  }
  // One round over the buffer itself: nothing to pack.
  bool whole() const { return whole_; }
  std::int64_t count() const { return rounds_; }
  std::int64_t offset(int rank) const { return offsets_[static_cast<std::size_t>(rank)]; }

  Round round(std::int64_t k) const {
    Round r;
    for (std::size_t q = 0; q < counts_.size(); ++q) {
      const std::int64_t lo = std::min(k * piece_, counts_[q]), hi = std::min(lo + piece_, counts_[q]);
      r.counts.push_back(static_cast<int>(hi - lo));
      r.displs.push_back(static_cast<int>(whole_ ? offsets_[q] : r.total));
      r.at.push_back(lo);
      r.total += hi - lo;
    }
    return r;
  }

 private:
  const std::vector<std::int64_t>& counts_;
  std::vector<std::int64_t> offsets_;
  bool whole_;
  std::int64_t piece_ = 1, rounds_ = 1;
};

// memcpy, but for no bytes from or to an empty vector's null data() (which memcpy's contract excludes).
void copy_bytes(void* dst, const void* src, std::size_t n) {
  if (n > 0) std::memcpy(dst, src, n);
}

// Rank q's piece of a round between the whole buffer and the packed round.
void pack(const void* whole, void* packed, const Rounds& rounds, const Round& r, int q, std::size_t elem) {
  const auto i = static_cast<std::size_t>(q);
  copy_bytes(static_cast<char*>(packed) + static_cast<std::size_t>(r.displs[i]) * elem,
              static_cast<const char*>(whole) + static_cast<std::size_t>(rounds.offset(q) + r.at[i]) * elem,
              static_cast<std::size_t>(r.counts[i]) * elem);
}
void unpack(const void* packed, void* whole, const Rounds& rounds, const Round& r, int q, std::size_t elem) {
  const auto i = static_cast<std::size_t>(q);
  copy_bytes(static_cast<char*>(whole) + static_cast<std::size_t>(rounds.offset(q) + r.at[i]) * elem,
              static_cast<const char*>(packed) + static_cast<std::size_t>(r.displs[i]) * elem,
              static_cast<std::size_t>(r.counts[i]) * elem);
}

}  // namespace

// The sums start_allreduce_sum began: their host copies live until wait_all() writes them back.
struct Comm::Started {
  std::vector<float> host;
  std::optional<Staged> staged;
};

Comm& Comm::world() {
  static Comm comm(one_rank_backend());
  return comm;
}

Comm::Comm(std::unique_ptr<Backend> backend) : max_count_(INT_MAX) { install(std::move(backend)); }

Comm::~Comm() = default;

void Comm::install(std::unique_ptr<Backend> backend) {
  backend_ = std::move(backend);
  rank_ = backend_->rank();
  size_ = backend_->size();
  gpu_aware_ = backend_->gpu_aware();
  library_ = backend_->library();
  const char* staging = env("PTK_MPI_FORCE_STAGING");
  force_staging_ = staging != nullptr && std::string(staging) == "1";
  if (const char* max = env("PTK_MPI_MAX_COUNT")) {
    char* end = nullptr;
    const long long n = std::strtoll(max, &end, 10);
    require(*end == '\0' && n >= 1 && n <= INT_MAX, "dist: PTK_MPI_MAX_COUNT=", max, " is not a count from 1 to ",
            INT_MAX);
    set_max_count(n);
  }
}

void Comm::set_max_count(std::int64_t n) {
  require(n >= 1 && n <= INT_MAX, "dist: a backend call carries 1 to ", INT_MAX, " elements, not ", n);
  max_count_ = n;
}

bool Comm::direct(Memory memory) const { return !force_staging_ && (is_host(memory) || gpu_aware_); }

double Comm::take_seconds() {
  const double s = seconds_;
  seconds_ = 0.0;
  return s;
}

void Comm::check_counts(const std::vector<std::int64_t>& counts, const char* what) const {
  require(static_cast<int>(counts.size()) == size_, "dist: ", what, ": ", counts.size(), " counts for ", size_, " ranks");
  for (const auto c : counts) require(c >= 0, "dist: ", what, ": a part of ", c, " elements");
}

// ---- each collective once, in pieces (no staging here: a cut collective's buffers are in host memory)

void Comm::allreduce_pieces(void* data, std::int64_t n, Type type, bool start) {
  // Pointer arithmetic only: the pieces may be in device memory (a GPU-aware backend).
  auto* bytes = static_cast<char*>(data);
  const std::size_t elem = size_of(type);
  for (std::int64_t at = 0; at < n; at += max_count_) {
    const int count = static_cast<int>(std::min(max_count_, n - at));
    if (start) backend_->start_allreduce_sum(bytes + static_cast<std::size_t>(at) * elem, count, type);
    else backend_->allreduce_sum(bytes + static_cast<std::size_t>(at) * elem, count, type);
  }
}

void Comm::reduce_scatter_pieces(const void* in, void* out, const std::vector<std::int64_t>& counts, Type type) {
  const Rounds rounds(counts, max_count_);
  const std::size_t elem = size_of(type);
  for (std::int64_t k = 0; k < rounds.count(); ++k) {
    const Round r = rounds.round(k);
    const void* send = in;
    if (!rounds.whole()) {
      packed_.resize(static_cast<std::size_t>(r.total) * elem);
      for (int q = 0; q < size_; ++q) pack(in, packed_.data(), rounds, r, q, elem);
      send = packed_.data();
    }
    char* mine = static_cast<char*>(out) + static_cast<std::size_t>(r.at[static_cast<std::size_t>(rank_)]) * elem;
    backend_->reduce_scatter_sum(send, mine, r.counts.data(), type);
  }
}

void Comm::allgather_pieces(void* data, const std::vector<std::int64_t>& counts, Type type) {
  const Rounds rounds(counts, max_count_);
  const std::size_t elem = size_of(type);
  for (std::int64_t k = 0; k < rounds.count(); ++k) {
    const Round r = rounds.round(k);
    if (rounds.whole()) {
      backend_->allgatherv(data, r.counts.data(), r.displs.data(), type);
      continue;
    }
    packed_.resize(static_cast<std::size_t>(r.total) * elem);
    pack(data, packed_.data(), rounds, r, rank_, elem);
    backend_->allgatherv(packed_.data(), r.counts.data(), r.displs.data(), type);
    for (int q = 0; q < size_; ++q) unpack(packed_.data(), data, rounds, r, q, elem);
  }
}

void Comm::gather_pieces(const void* in, void* out, const std::vector<std::int64_t>& counts, Type type) {
  const Rounds rounds(counts, max_count_);
  const std::size_t elem = size_of(type);
  for (std::int64_t k = 0; k < rounds.count(); ++k) {
    const Round r = rounds.round(k);
    const char* send = static_cast<const char*>(in) + static_cast<std::size_t>(r.at[static_cast<std::size_t>(rank_)]) * elem;
    if (rounds.whole()) {
      backend_->gatherv(send, out, r.counts.data(), r.displs.data(), type);
      continue;
    }
    packed_.resize(static_cast<std::size_t>(r.total) * elem);
    backend_->gatherv(send, packed_.data(), r.counts.data(), r.displs.data(), type);
    if (rank_ == 0)
      for (int q = 0; q < size_; ++q) unpack(packed_.data(), out, rounds, r, q, elem);
  }
}

// ---- the public collectives: fence, time, stage, then the pieces above

void Comm::allreduce_sum(float* data, std::int64_t n, Memory memory) {
  if (n <= 0) return;
  Kokkos::fence();  // the kernels that wrote the buffer
  Timed timed(seconds_);
  Staged buffer(data, n, memory, direct(memory), staging_, Staged::Back::yes, 0, n);
  allreduce_pieces(buffer.get(), n, Type::f32, false);
}

void Comm::allreduce_sum(double* data, std::int64_t n) {
  if (n <= 0) return;
  Timed timed(seconds_);
  allreduce_pieces(data, n, Type::f64, false);
}

void Comm::start_allreduce_sum(float* data, std::int64_t n, Memory memory) {
  if (n <= 0) return;
  Kokkos::fence();
  Timed timed(seconds_);
  auto op = std::make_unique<Started>();
  op->staged.emplace(data, n, memory, direct(memory), op->host, Staged::Back::yes, 0, n);
  allreduce_pieces(op->staged->get(), n, Type::f32, true);
  started_.push_back(std::move(op));
}

void Comm::progress() {
  if (started_.empty()) return;
  Timed timed(seconds_);
  backend_->progress();
}

void Comm::wait_all() {
  if (started_.empty()) return;
  Timed timed(seconds_);
  backend_->wait_all();
  for (auto& op : started_) op->staged->commit();
  started_.clear();
}

void Comm::reduce_scatter_sum(const float* full, float* mine, const std::vector<std::int64_t>& counts, Memory memory) {
  check_counts(counts, "reduce_scatter");
  const std::int64_t n = total_of(counts), own = counts[static_cast<std::size_t>(rank_)];
  Kokkos::fence();
  Timed timed(seconds_);
  // A collective cut into rounds packs its pieces in host memory.
  const bool pass = direct(memory) && n <= max_count_;
  const Staged in(full, n, memory, pass, staging_);
  Staged out(mine, own, memory, pass, staging_out_, Staged::Back::yes, 0, 0);
  reduce_scatter_pieces(in.get(), out.get(), counts, Type::f32);
}

void Comm::allgather(float* full, const std::vector<std::int64_t>& counts, Memory memory) {
  check_counts(counts, "allgather");
  const std::int64_t n = total_of(counts), offset = offsets_of(counts)[static_cast<std::size_t>(rank_)];
  Kokkos::fence();
  Timed timed(seconds_);
  // Only this rank's part is needed on the host before the exchange; the whole buffer comes back after it.
  Staged buffer(full, n, memory, direct(memory) && n <= max_count_, staging_, Staged::Back::yes, offset,
                offset + counts[static_cast<std::size_t>(rank_)]);
  allgather_pieces(buffer.get(), counts, Type::f32);
}

void Comm::gather_to_root(const float* mine, float* full_host, const std::vector<std::int64_t>& counts, Memory memory) {
  check_counts(counts, "gather");
  const std::int64_t own = counts[static_cast<std::size_t>(rank_)];
  Kokkos::fence();
  Timed timed(seconds_);
  // MPI_Gatherv's send side; the receive side is host memory.
  const Staged in(mine, own, memory, direct(memory) && total_of(counts) <= max_count_, staging_);
  gather_pieces(in.get(), full_host, counts, Type::f32);
}

std::vector<std::string> Comm::allgather(const std::string& text) {
  // The lengths, then the bytes: two allgathers.
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(size_), 0);
  lengths[static_cast<std::size_t>(rank_)] = static_cast<std::int64_t>(text.size());
  allgather_pieces(lengths.data(), std::vector<std::int64_t>(lengths.size(), 1), Type::i64);
  const auto offsets = offsets_of(lengths);
  std::string all(static_cast<std::size_t>(total_of(lengths)), '\0');
  all.replace(static_cast<std::size_t>(offsets[static_cast<std::size_t>(rank_)]), text.size(), text);
  allgather_pieces(all.data(), lengths, Type::byte);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  return out;
}

void Comm::barrier() { backend_->barrier(); }

void Comm::abort(int code) {
  backend_->abort(code);
  std::_Exit(code);  // not reached: g++ does not carry [[noreturn]] through a virtual call
}

}  // namespace ptk::dist
