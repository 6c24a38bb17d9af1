#pragma once
// Every View ptk allocates for a tensor, a work buffer or a cache goes through allocate(), so that running
// out of memory is one ptk::OutOfMemory whose one-line message names the size, the label and the memory
// space, on every Kokkos version and backend. Kokkos reports the failure differently by version: 3.x
// prints a paragraph to std::cerr and throws std::runtime_error("Memory allocation failure" + a traceback),
// 4.x throws std::runtime_error with its own text. allocate() silences the print and replaces both.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>

#include "ptk/core/error.hpp"

namespace ptk {

// "1.50 GiB" (binary units, three significant digits).
inline std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  std::ostringstream s;
  s.precision(bytes < 10 ? 3 : bytes < 100 ? 4 : 5);
  s << bytes << ' ' << units[u];
  return s.str();
}

namespace detail {
// Swallows what Kokkos 3 writes to std::cerr while it fails an allocation (the failure is rethrown as one
// line). std::cerr is touched from the calling thread only; ptk allocates from one host thread.
class QuietStderr {
 public:
  QuietStderr() : saved_(std::cerr.rdbuf(&sink_)) {}
  ~QuietStderr() { std::cerr.rdbuf(saved_); }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;
  const std::string text() const { return sink_.str(); }

 private:
  std::stringbuf sink_;
  std::streambuf* saved_;
};
}  // namespace detail

// A new View of these extents; with `initialize`, value-initialized (zeros), else contents unspecified.
template <class ViewType, class... Extents>
ViewType allocate(const std::string& label, bool initialize, Extents... extents) {
  double bytes = sizeof(typename ViewType::value_type);
  ((bytes *= static_cast<double>(extents)), ...);
  std::string reason;
  {
    detail::QuietStderr quiet;
    try {
      if (initialize) return ViewType(label, extents...);
      return ViewType(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), extents...);
    } catch (const std::exception& e) {  // std::bad_alloc or Kokkos' std::runtime_error
      reason = e.what();
    }
  }
  const auto newline = reason.find('\n');
  if (newline != std::string::npos) reason.resize(newline);
  throw OutOfMemory("out of memory: cannot allocate " + human_bytes(bytes) + " for '" + label + "' in " +
                    ViewType::memory_space::name() + " (" + reason + ")");
}

}  // namespace ptk
