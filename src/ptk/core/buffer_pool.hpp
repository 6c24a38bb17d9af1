#pragma once
// Buffers reused across training steps instead of allocated per op. While a ReuseBuffers scope is
// alive, every Tensor (and id buffer) takes a free cached View of exactly its element count from a
// per-type cache, and allocates only when none is free. A cached View is free when the cache holds
// its only reference (View::use_count() == 1): a Tensor, an alias or a View copy that still refers to
// it keeps it out of reuse, so reuse can never alias live data. A training step asks for the same
// sizes in the same order every step, so after the first step nothing is allocated (a caching
// allocator as PyTorch's, without block splitting). Outside any scope (ptk op, the parity tests)
// allocation is as before. The end of the outermost scope frees the cached Views nobody holds.
// Reuse is safe on a GPU too: every ptk kernel runs in order on the default execution space instance,
// so a kernel that writes a reused buffer starts after every earlier kernel that read it, and Kokkos'
// deep_copy fences. Used from one host thread at a time, as the rest of ptk.
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "ptk/core/allocate.hpp"

namespace ptk {

namespace detail {
// Scope depth and the clear functions of every cache that was used.
struct PoolRegistry {
  int depth = 0;
  std::vector<void (*)()> clears;
  static PoolRegistry& get() {
    static PoolRegistry* registry = new PoolRegistry;  // never destroyed: outlives every static View
    return *registry;
  }
};
}  // namespace detail

inline bool buffers_reused() { return detail::PoolRegistry::get().depth > 0; }

template <class ViewType>
class BufferPool {
 public:
  // A View of these extents, contents unspecified: a free cached one, else a new one (kept in the cache).
  template <class... Extents>
  static ViewType take(const std::string& label, Extents... extents) {
    auto& list = cache()[Key{static_cast<std::size_t>(extents)...}];
    for (const auto& v : list)
      if (v.use_count() == 1) return v;
    if (!registered()) {
      registered() = true;
      detail::PoolRegistry::get().clears.push_back(&BufferPool::clear);
    }
    list.push_back(allocate<ViewType>(label, false, extents...));
    return list.back();
  }

  // Drops the cache's references (Views still held elsewhere live on with their holders).
  static void clear() { cache().clear(); }

 private:
  using Key = std::vector<std::size_t>;
  static std::map<Key, std::vector<ViewType>>& cache() {
    static auto* c = new std::map<Key, std::vector<ViewType>>;  // never destroyed (see above)
    return *c;
  }
  static bool& registered() {
    static bool r = false;
    return r;
  }
};

// A View for a kernel's working data or an op's output, contents unspecified: from the cache while
// buffers are reused, else a new allocation.
template <class ViewType, class... Extents>
ViewType work_view(const std::string& label, Extents... extents) {
  return buffers_reused() ? BufferPool<ViewType>::take(label, extents...) : allocate<ViewType>(label, false, extents...);
}

// While alive, Tensor allocations reuse cached buffers (see above). Scopes nest; the outermost one's
// end frees the cache. It must end before Kokkos is finalized.
class ReuseBuffers {
 public:
  ReuseBuffers() { ++detail::PoolRegistry::get().depth; }
  ~ReuseBuffers() {
    auto& registry = detail::PoolRegistry::get();
    if (--registry.depth == 0)
      for (auto clear : registry.clears) clear();
  }
  ReuseBuffers(const ReuseBuffers&) = delete;
  ReuseBuffers& operator=(const ReuseBuffers&) = delete;
};

}  // namespace ptk
