#pragma once
// Kokkos' profiling hooks (Kokkos::Tools callbacks) as a test's eyes: while a Watch is alive, every allocation,
// deallocation, deep copy, fence and kernel launch Kokkos reports is counted, by label, into *g_events (when set).
// Used by the training step's steady state (train_step_test.cpp) and the launches of a prefill and a decode step
// (launches_test.cpp, Watch(true)). Kokkos 3.4 reports no fences to tools; Kokkos 4 does.
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

namespace ptk::test {

// Every event the hooks report while a Watch is alive, by kind and label.
struct Events {
  std::map<std::string, int> allocations, deallocations, deep_copies, fences, launches;
  static int total(const std::map<std::string, int>& m) {
    int n = 0;
    for (const auto& e : m) n += e.second;
    return n;
  }
  static std::string list(const std::map<std::string, int>& m) {
    std::ostringstream s;
    for (const auto& e : m) s << "\n    " << e.second << " x " << e.first;
    return s.str();
  }
};

inline Events* g_events = nullptr;
// Kokkos may report an event from any thread (a View's last reference can drop in a worker): the maps are
// guarded, else two reports at once can corrupt them (seen once under ctest -j2: the test spun forever
// walking a broken map).
inline std::mutex g_events_mutex;

inline void on_allocate(Kokkos_Profiling_SpaceHandle, const char* label, const void*, uint64_t) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  if (g_events) ++g_events->allocations[label];
}
inline void on_deallocate(Kokkos_Profiling_SpaceHandle, const char* label, const void*, uint64_t) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  if (g_events) ++g_events->deallocations[label];
}
inline void on_deep_copy(Kokkos_Profiling_SpaceHandle, const char* dst, const void*, Kokkos_Profiling_SpaceHandle,
                         const char* src, const void*, uint64_t) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  if (g_events) ++g_events->deep_copies[std::string(src) + " -> " + dst];
}
inline void on_fence(const char* name, uint32_t, uint64_t*) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  if (g_events) ++g_events->fences[name];
}
// parallel_for, parallel_reduce and parallel_scan alike: a launch, named by its label.
inline void on_launch(const char* name, uint32_t, uint64_t*) {
  const std::lock_guard<std::mutex> lock(g_events_mutex);
  if (g_events) ++g_events->launches[name];
}

// Registers the callbacks for its lifetime (and unregisters them: the rest of the suite runs untooled). Launches are
// watched only when asked: with a kernel callback registered, Kokkos 4 fences after every kernel for the tool
// ("Kokkos Profile Tool Fence"), which the training step's test would count as its own.
class Watch {
 public:
  explicit Watch(bool launches = false) {
    if (launches) set(on_allocate, on_deallocate, on_deep_copy, on_fence, on_launch);
    else set(on_allocate, on_deallocate, on_deep_copy, on_fence, nullptr);
  }
  ~Watch() {
    g_events = nullptr;
    set(nullptr, nullptr, nullptr, nullptr, nullptr);
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  using Launch = void (*)(const char*, uint32_t, uint64_t*);
  template <class A, class D, class C, class F>
  static void set(A allocate, D deallocate, C deep_copy, F fence, Launch launch) {
    namespace tools = Kokkos::Tools::Experimental;
    tools::set_allocate_data_callback(allocate);
    tools::set_deallocate_data_callback(deallocate);
    tools::set_begin_deep_copy_callback(deep_copy);
    tools::set_begin_fence_callback(fence);
    tools::set_begin_parallel_for_callback(launch);
    tools::set_begin_parallel_reduce_callback(launch);
    tools::set_begin_parallel_scan_callback(launch);
  }
};

// Counts into `events` while alive (one scope: a step, a prefill).
class Recording {
 public:
  explicit Recording(Events& events) {
    const std::lock_guard<std::mutex> lock(g_events_mutex);
    g_events = &events;
  }
  ~Recording() {
    const std::lock_guard<std::mutex> lock(g_events_mutex);
    g_events = nullptr;
  }
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
};

}  // namespace ptk::test
