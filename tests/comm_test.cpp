// dist::Comm's one policy for long collectives: cut into backend calls of at most max_count() elements, with the
// same result as one call. In one process (ctest comm) on the one-rank world and on a fake two-rank backend that
// records its calls; under mpirun -np 2 (ctest comm_mpi, label mpi) the same tests run on MPI's world, where each
// rank contributes other values, so a piece sent to the wrong place or twice, or never, changes a sum.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <numeric>

#include "ptk/autograd/flat.hpp"
#include "ptk/dist/backend.hpp"
#include "ptk/dist/comm.hpp"

namespace {

using namespace ptk;

// Sets a communicator's max_count for one scope.
class MaxCount {
 public:
  MaxCount(dist::Comm& comm, std::int64_t n) : comm_(comm), saved_(comm.max_count()) { comm.set_max_count(n); }
  ~MaxCount() { comm_.set_max_count(saved_); }

 private:
  dist::Comm& comm_;
  std::int64_t saved_;
};

// Values that add exactly in float (halves below 2^20): every order of summation gives the same bits.
float value(int rank, std::int64_t i) { return static_cast<float>(rank + 1) * 1000.0f + 0.5f * static_cast<float>(i % 977); }

// Uneven parts, one per rank: 37, 50, 63, ... floats.
std::vector<std::int64_t> parts(int ranks) {
  std::vector<std::int64_t> counts;
  for (int r = 0; r < ranks; ++r) counts.push_back(37 + 13 * r);
  return counts;
}

struct Results {
  std::vector<float> sum, sum_started, scattered, gathered_all, gathered_root;
  std::vector<double> sum_double;
  std::vector<std::string> strings;
};

// Every collective of comm once, over data that differs by rank (device memory for the float sums and the scatter:
// staged through the host where the backend cannot take it).
Results run_collectives(dist::Comm& comm) {
  const int rank = comm.rank(), ranks = comm.size();
  Results out;
  const std::int64_t n = 1003;
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = value(rank, i);
  const ag::Var device = ag::Var::from_vector({n}, x, ag::Device::device);
  comm.allreduce_sum(ag::FlatParameters::data_pointer(device), n, dist::Memory::device);
  out.sum = device.values();
  const ag::Var started = ag::Var::from_vector({n}, x, ag::Device::device);
  comm.start_allreduce_sum(ag::FlatParameters::data_pointer(started), n, dist::Memory::device);
  comm.progress();
  comm.wait_all();
  out.sum_started = started.values();
  out.sum_double.assign(x.begin(), x.end());
  comm.allreduce_sum(out.sum_double.data(), n);

  const auto counts = parts(ranks);
  const std::int64_t total = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  std::int64_t offset = 0;
  for (int r = 0; r < rank; ++r) offset += counts[static_cast<std::size_t>(r)];
  const std::int64_t own = counts[static_cast<std::size_t>(rank)];
  std::vector<float> full(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; ++i) full[static_cast<std::size_t>(i)] = value(rank, i);
  const ag::Var full_device = ag::Var::from_vector({total}, full, ag::Device::device), mine = ag::Var::zeros({own}, ag::Device::device);
  comm.reduce_scatter_sum(ag::FlatParameters::data_pointer(full_device), ag::FlatParameters::data_pointer(mine), counts,
                          dist::Memory::device);
  out.scattered = mine.values();

  // This rank's part holds its own values, the rest zeros until the allgather fills them.
  out.gathered_all.assign(static_cast<std::size_t>(total), 0.0f);
  for (std::int64_t i = offset; i < offset + own; ++i) out.gathered_all[static_cast<std::size_t>(i)] = value(rank, i);
  comm.allgather(out.gathered_all.data(), counts, dist::Memory::host);
  out.gathered_root.assign(rank == 0 ? static_cast<std::size_t>(total) : 0, 0.0f);
  comm.gather_to_root(out.gathered_all.data() + offset, out.gathered_root.data(), counts, dist::Memory::host);

  out.strings = comm.allgather("rank " + std::to_string(rank) + ": " + std::string(static_cast<std::size_t>(20 + 9 * rank), 'x'));
  return out;
}

void expect_results(const Results& got, int rank, int ranks) {
  for (std::int64_t i = 0; i < 1003; ++i) {
    float sum = 0.0f;
    for (int r = 0; r < ranks; ++r) sum += value(r, i);
    const auto at = static_cast<std::size_t>(i);
    EXPECT_EQ(got.sum[at], sum) << "allreduce element " << i;
    EXPECT_EQ(got.sum_started[at], sum) << "started allreduce element " << i;
    EXPECT_EQ(got.sum_double[at], static_cast<double>(sum)) << "double allreduce element " << i;
  }
  const auto counts = parts(ranks);
  std::int64_t offset = 0;
  for (int r = 0; r < rank; ++r) offset += counts[static_cast<std::size_t>(r)];
  ASSERT_EQ(static_cast<std::int64_t>(got.scattered.size()), counts[static_cast<std::size_t>(rank)]);
  for (std::size_t j = 0; j < got.scattered.size(); ++j) {
    float sum = 0.0f;
    for (int r = 0; r < ranks; ++r) sum += value(r, offset + static_cast<std::int64_t>(j));
    EXPECT_EQ(got.scattered[j], sum) << "reduce_scatter element " << j;
  }
  std::int64_t at = 0;
  for (int q = 0; q < ranks; ++q)
    for (std::int64_t j = 0; j < counts[static_cast<std::size_t>(q)]; ++j, ++at) {
      EXPECT_EQ(got.gathered_all[static_cast<std::size_t>(at)], value(q, at)) << "allgather element " << at;
      if (rank == 0) {
        EXPECT_EQ(got.gathered_root[static_cast<std::size_t>(at)], value(q, at)) << "gather element " << at;
      }
    }
  ASSERT_EQ(static_cast<int>(got.strings.size()), ranks);
  for (int q = 0; q < ranks; ++q)
    EXPECT_EQ(got.strings[static_cast<std::size_t>(q)], "rank " + std::to_string(q) + ": " + std::string(static_cast<std::size_t>(20 + 9 * q), 'x'));
}

// The world of this process (one rank, or MPI's under mpirun): every collective in one call and cut into pieces
// of 7, 2 and 1 elements gives the expected values, and the same bits.
TEST(Comm, CutCollectivesEqualOneCall) {
  dist::Comm& comm = dist::Comm::world();
  const Results whole = run_collectives(comm);
  expect_results(whole, comm.rank(), comm.size());
  for (const std::int64_t max : {7, 2, 1}) {
    SCOPED_TRACE("max_count " + std::to_string(max));
    const MaxCount cut(comm, max);
    const Results pieces = run_collectives(comm);
    expect_results(pieces, comm.rank(), comm.size());
    EXPECT_EQ(pieces.sum, whole.sum);
    EXPECT_EQ(pieces.scattered, whole.scattered);
  }
  EXPECT_EQ(comm.max_count(), INT_MAX);
  EXPECT_THROW(comm.set_max_count(0), Error);
  EXPECT_THROW(comm.set_max_count(std::int64_t{INT_MAX} + 1), Error);
}

// Rank 0 of two whose other rank holds the same buffers: a sum doubles every element. It records every call, so a
// piece skipped (x1), sent twice (x4) or longer than max_count shows, in one process.
class Twin final : public dist::Backend {
 public:
  std::vector<int> calls;  // the element count of every call

  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string library() const override { return "twin"; }
  bool gpu_aware() const override { return false; }
  void allreduce_sum(void* data, int n, dist::Type type) override {
    calls.push_back(n);
    if (type == dist::Type::f32)
      for (int i = 0; i < n; ++i) static_cast<float*>(data)[i] *= 2;
    if (type == dist::Type::f64)
      for (int i = 0; i < n; ++i) static_cast<double*>(data)[i] *= 2;
  }
  void start_allreduce_sum(void* data, int n, dist::Type type) override { allreduce_sum(data, n, type); }
  void progress() override {}
  void wait_all() override {}
  // Rank 0's piece is first in a round, the other rank's (the same values) after it.
  void reduce_scatter_sum(const void* in, void* out, const int* counts, dist::Type) override {
    calls.push_back(counts[0] + counts[1]);
    for (int i = 0; i < counts[0]; ++i) static_cast<float*>(out)[i] = 2 * static_cast<const float*>(in)[i];
  }
  void allgatherv(void*, const int*, const int*, dist::Type) override {}
  void gatherv(const void*, void*, const int*, const int*, dist::Type) override {}
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

TEST(Comm, CutCollectivesReachTheBackendInPieces) {
  auto owned = std::make_unique<Twin>();
  Twin& twin = *owned;
  dist::Comm comm(std::move(owned));
  comm.set_max_count(7);
  std::vector<float> x(100);
  std::iota(x.begin(), x.end(), 1.0f);
  std::vector<float> y = x;
  comm.allreduce_sum(y.data(), 100, dist::Memory::host);
  std::vector<double> d(x.begin(), x.end());
  comm.allreduce_sum(d.data(), 100);
  std::vector<float> z = x;
  comm.start_allreduce_sum(z.data(), 100, dist::Memory::host);
  comm.wait_all();
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], 2 * x[i]) << i;
    EXPECT_EQ(d[i], 2.0 * x[i]) << i;
    EXPECT_EQ(z[i], 2 * x[i]) << i;
  }
  EXPECT_EQ(twin.calls.size(), 3u * 15u);  // ceil(100 / 7) calls each
  for (int c : twin.calls) EXPECT_LE(c, 7);

  // Parts of 40 and 23 floats: rounds of 3 a rank (7 / 2), packed; rank 0 gets its part doubled.
  twin.calls.clear();
  std::vector<float> mine(40, -1.0f);
  comm.reduce_scatter_sum(x.data(), mine.data(), {40, 23}, dist::Memory::host);
  for (std::size_t i = 0; i < mine.size(); ++i) EXPECT_EQ(mine[i], 2 * x[i]) << i;
  EXPECT_EQ(twin.calls.size(), 14u);  // ceil(40 / 3)
  for (int c : twin.calls) EXPECT_LE(c, 7);
  EXPECT_THROW(comm.reduce_scatter_sum(x.data(), mine.data(), {40}, dist::Memory::host), Error);
}

}  // namespace
