#pragma once
// Host staging for the collectives (used by comm.cpp; no Kokkos in this header).
//
// A backend that cannot take device memory (an MPI that is not GPU-aware, the one-rank backend) gets a host copy of
// a device buffer instead; PTK_MPI_FORCE_STAGING=1 stages host buffers too, so that this path runs on a CPU build.
// Staged is that copy for the length of one collective: it fills the host copy from the part of the buffer the
// collective reads, and writes the whole copy back at commit() or when it leaves scope.
#include <cstdint>
#include <exception>
#include <vector>

#include "ptk/dist/comm.hpp"

namespace ptk::dist {

// Whether a buffer in `memory` is host memory (device memory is, in a host-only build).
bool is_host(Memory memory);
// n floats between buffers in host or device memory.
void copy_floats(float* dst, bool dst_host, const float* src, bool src_host, std::int64_t n);

class Staged {
 public:
  enum class Back { no, yes };
  // `data` (n floats in `memory`) as the backend takes it: itself when `direct`, else `host` resized to n, filled
  // from data's [in_begin, in_end) (the part the collective reads; an output-only buffer reads nothing), and copied
  // back whole when `back` says so.
  Staged(float* data, std::int64_t n, Memory memory, bool direct, std::vector<float>& host, Back back,
         std::int64_t in_begin, std::int64_t in_end);
  // A buffer the collective only reads.
  Staged(const float* data, std::int64_t n, Memory memory, bool direct, std::vector<float>& host)
      : Staged(const_cast<float*>(data), n, memory, direct, host, Back::no, 0, n) {}
  // Copies back unless an exception is unwinding it: a collective that failed left nothing worth returning, and a
  // destructor must not throw on top of it.
  ~Staged() {
    if (std::uncaught_exceptions() == unwinding_) commit();
  }
  Staged(const Staged&) = delete;
  Staged& operator=(const Staged&) = delete;

  float* get() const { return buffer_; }
  // The staged copy back into the buffer (once; nothing when direct or not Back::yes).
  void commit();

 private:
  float* data_;
  float* buffer_;
  std::int64_t n_;
  bool data_host_, back_;
  int unwinding_ = std::uncaught_exceptions();
};

}  // namespace ptk::dist
