#include "ptk/dist/staging.hpp"

#include <Kokkos_Core.hpp>

#include <cstring>

namespace ptk::dist {

namespace {
using DeviceMemory = Kokkos::DefaultExecutionSpace::memory_space;
constexpr bool kHostOnly = Kokkos::SpaceAccessibility<Kokkos::HostSpace, DeviceMemory>::accessible;
using HostView = Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using DeviceView = Kokkos::View<float*, DeviceMemory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
}  // namespace

bool is_host(Memory memory) { return memory == Memory::host || kHostOnly; }

void copy_floats(float* dst, bool dst_host, const float* src, bool src_host, std::int64_t n) {
  if (n <= 0 || dst == src) return;
  const auto count = static_cast<std::size_t>(n);
  float* s = const_cast<float*>(src);  // Kokkos' unmanaged views want a non-const pointer; nothing writes it
  if (dst_host && src_host) std::memmove(dst, s, count * sizeof(float));
  else if (dst_host) Kokkos::deep_copy(HostView(dst, count), DeviceView(s, count));
  else if (src_host) Kokkos::deep_copy(DeviceView(dst, count), HostView(s, count));
  else Kokkos::deep_copy(DeviceView(dst, count), DeviceView(s, count));
}

Staged::Staged(float* data, std::int64_t n, Memory memory, bool direct, std::vector<float>& host, Back back,
               std::int64_t in_begin, std::int64_t in_end)
    : data_(data), buffer_(data), n_(n), data_host_(is_host(memory)), back_(!direct && back == Back::yes) {
  if (direct) return;
  host.resize(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  buffer_ = host.data();
  copy_floats(buffer_ + in_begin, true, data + in_begin, data_host_, in_end - in_begin);
}

void Staged::commit() {
  if (!back_) return;
  back_ = false;
  copy_floats(data_, data_host_, buffer_, true, n_);
}

}  // namespace ptk::dist
