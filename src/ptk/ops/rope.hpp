#pragma once
// rope: rotary position embedding with half-split pairs (GPT-NeoX / Llama) over the last dim D (even) of a
// rank-4 X, laid out [B,T,H,D] (RopeLayout::bthd) or [B,H,T,D] (RopeLayout::bhtd). Position t is rotated by
// θ_i = (t + pos_offset) · base^(-2i/D); the cos/sin tables are computed here in double, once per (D, base) and
// kept (RopeTableCache).
// rope_backward accumulates dX += the inverse rotation of dY. E (f32, bf16, f16): the element type of X, Y, dY and
// dX; the tables and the rotation are fp32, each output rounded once.
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "ptk/kernels/rope.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

enum class RopeLayout { bthd, bhtd };

namespace detail {
template <class Space>
struct RopeTables {
  ConstMatrix<Space> cos, sin;  // [T, D/2]: positions pos_offset … pos_offset + T − 1
};

// The tables of one (D, base), positions 0 … rows − 1, computed in double once and grown (doubling) when a
// call needs later positions; a call gets a view of its rows, so a decode step (T = 1 at a growing offset) and
// a training step (T = block at offset 0) compute and upload nothing after the first. Values are those a
// per-call computation gives, bit for bit (the same double expression per position). Host-thread only, as
// every op; released when Kokkos finalizes.
template <class Space>
class RopeTableCache {
 public:
  static RopeTables<Space> get(std::int64_t T, std::int64_t D, std::int64_t pos_offset, double base) {
    static RopeTableCache cache;
    auto& e = cache.entries_[{D, base}];
    const std::int64_t need = pos_offset + T;
    if (e.rows < need) e = fill(std::max(need, 2 * e.rows), D, base);
    // Subviews hold their tables: a later call that grows them cannot free what a queued kernel reads.
    const auto rows = std::make_pair(pos_offset, need);
    return {Kokkos::subview(e.cos, rows, Kokkos::ALL), Kokkos::subview(e.sin, rows, Kokkos::ALL)};
  }

 private:
  struct Entry {
    std::int64_t rows = 0;
    Matrix<Space> cos, sin;
  };
  RopeTableCache() {
    Kokkos::push_finalize_hook([this] { entries_.clear(); });
  }
  static Entry fill(std::int64_t rows, std::int64_t D, double base) {
    const auto half = D / 2;
    std::vector<float> c(static_cast<std::size_t>(rows * half)), s(c.size());
    for (std::int64_t t = 0; t < rows; ++t)
      for (std::int64_t i = 0; i < half; ++i) {
        const double theta = static_cast<double>(t) * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(D));
        c[static_cast<std::size_t>(t * half + i)] = static_cast<float>(std::cos(theta));
        s[static_cast<std::size_t>(t * half + i)] = static_cast<float>(std::sin(theta));
      }
    Entry e{rows, Matrix<Space>("ptk::rope_cos", rows, half), Matrix<Space>("ptk::rope_sin", rows, half)};
    using Host = Kokkos::View<const float**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    Kokkos::deep_copy(e.cos, Host(c.data(), rows, half));
    Kokkos::deep_copy(e.sin, Host(s.data(), rows, half));
    return e;
  }
  std::map<std::pair<std::int64_t, double>, Entry> entries_;
};

template <class Space>
RopeTables<Space> rope_tables(std::int64_t T, std::int64_t D, std::int64_t pos_offset, double base) {
  return RopeTableCache<Space>::get(T, D, pos_offset, base);
}

template <class Space, class E>
void check_rope(const char* op, const char* name, const Tensor<Space, E>& x, std::int64_t pos_offset, float base) {
  check_tensor(op, name, x, 4, 4);
  require(x.dim(3) % 2 == 0, op, ": the last dimension D of ", name, " must be even, got shape ", x.shape());
  require(pos_offset >= 0, op, ": pos_offset must be >= 0, got ", pos_offset);
  require(std::isfinite(base) && base > 0.0f, op, ": base must be a positive number, got ", base);
}

// [O, T, H, D] over x's storage.
template <class Space, class E>
Tensor4Of<Space, E> rope_view(const Tensor<Space, E>& x, RopeLayout layout) {
  const auto B = x.dim(0), D = x.dim(3);
  if (layout == RopeLayout::bthd) return Tensor4Of<Space, E>(x.data(), B, x.dim(1), x.dim(2), D);
  return Tensor4Of<Space, E>(x.data(), B * x.dim(1), x.dim(2), 1, D);
}

inline std::int64_t rope_positions(const Shape& s, RopeLayout layout) { return layout == RopeLayout::bthd ? s[1] : s[2]; }
}  // namespace detail

template <class Space, class E = float>
Tensor<Space, E> rope(const Tensor<Space, E>& x, std::int64_t pos_offset = 0, float base = 10000.0f,
                      RopeLayout layout = RopeLayout::bthd) {
  detail::check_rope("rope", "X", x, pos_offset, base);
  const auto tables = detail::rope_tables<Space>(detail::rope_positions(x.shape(), layout), x.dim(3), pos_offset, base);
  auto out = Tensor<Space, E>::uninitialized(x.shape(), "ptk::rope");
  kernels::rope_forward<Space>(detail::rope_view(out, layout), detail::rope_view(x, layout), tables.cos, tables.sin);
  return out;
}

// dx (shaped as dout) += the backward of rope at the same pos_offset, base and layout.
template <class Space, class E = float>
void rope_backward(const Tensor<Space, E>& dx, const Tensor<Space, E>& dout, std::int64_t pos_offset = 0,
                   float base = 10000.0f, RopeLayout layout = RopeLayout::bthd) {
  detail::check_rope("rope_backward", "dout", dout, pos_offset, base);
  require(dx.shape() == dout.shape(), "rope_backward: dx has shape ", dx.shape(), " but dout has shape ",
          dout.shape());
  const auto tables = detail::rope_tables<Space>(detail::rope_positions(dout.shape(), layout), dout.dim(3), pos_offset, base);
  kernels::rope_backward<Space>(detail::rope_view(dx, layout), detail::rope_view(dout, layout), tables.cos, tables.sin);
}

}  // namespace ptk::ops
