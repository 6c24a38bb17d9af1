// The one-rank world: a process that no MPI launcher started, or a build without MPI. Every collective's result is
// this rank's own data, so the sums are the identity and the scatters and gathers local copies.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "ptk/dist/backend.hpp"

namespace ptk::dist {

std::size_t size_of(Type type) {
  switch (type) {
    case Type::f32: return sizeof(float);
    case Type::f64: return sizeof(double);
    case Type::i64: return sizeof(std::int64_t);
    case Type::byte: return 1;
  }
  return 1;
}

namespace {

// memmove, but for no bytes from or to an empty vector's null data() (which memmove's contract excludes).
void copy_bytes(void* dst, const void* src, std::size_t n) {
  if (n > 0) std::memmove(dst, src, n);
}

class OneRank final : public Backend {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string library() const override { return "none"; }
  // Staged buffers only: its copies are host copies.
  bool gpu_aware() const override { return false; }

  void allreduce_sum(void*, int, Type) override {}
  void start_allreduce_sum(void*, int, Type) override {}
  void progress() override {}
  void wait_all() override {}
  void reduce_scatter_sum(const void* in, void* out, const int* counts, Type type) override {
    copy_bytes(out, in, static_cast<std::size_t>(counts[0]) * size_of(type));
  }
  void allgatherv(void*, const int*, const int*, Type) override {}
  void gatherv(const void* in, void* out, const int* counts, const int* displs, Type type) override {
    copy_bytes(static_cast<char*>(out) + static_cast<std::size_t>(displs[0]) * size_of(type), in,
               static_cast<std::size_t>(counts[0]) * size_of(type));
  }
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

}  // namespace

std::unique_ptr<Backend> one_rank_backend() { return std::make_unique<OneRank>(); }

}  // namespace ptk::dist
