#pragma once
// ptk::Tensor<Space, E>: a shape plus one contiguous, row-major buffer of E (float unless said: dtype.hpp) in
// Space's memory. Kernels never see a Tensor: they get rank-N LayoutRight Views over its buffer. A q8_0 or q4_0
// tensor stores its last dimension in blocks of 32 values (the dimension must be a multiple of 32), so its buffer
// holds numel / 32 blocks and its views count blocks in the last dimension; a tensor of row tiles (q8_0x16, q4_0x16)
// also groups its second-last dimension by 16 (a multiple of 16), and its views count those groups.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ptk/core/buffer_pool.hpp"
#include "ptk/core/dtype.hpp"
#include "ptk/core/error.hpp"

namespace ptk {

// Every View in ptk names its execution space as the View's device, so a kernel knows where to
// run from the View type alone and Serial and OpenMP Views over host memory stay distinct types.
template <class Space>
using Vector = Kokkos::View<float*, Kokkos::LayoutRight, Space>;
template <class Space>
using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Space>;
template <class Space>
using Tensor3 = Kokkos::View<float***, Kokkos::LayoutRight, Space>;
template <class Space>
using ConstVector = Kokkos::View<const float*, Kokkos::LayoutRight, Space>;
template <class Space>
using ConstMatrix = Kokkos::View<const float**, Kokkos::LayoutRight, Space>;
template <class Space>
using ConstTensor3 = Kokkos::View<const float***, Kokkos::LayoutRight, Space>;
template <class Space>
using Tensor4 = Kokkos::View<float****, Kokkos::LayoutRight, Space>;
template <class Space>
using ConstTensor4 = Kokkos::View<const float****, Kokkos::LayoutRight, Space>;
// Rows of stored items of any element type E (dtype.hpp): [rows, values / Element<E>::block].
template <class Space, class E = float>
using VectorOf = Kokkos::View<E*, Kokkos::LayoutRight, Space>;
template <class Space, class E = float>
using ConstVectorOf = Kokkos::View<const E*, Kokkos::LayoutRight, Space>;
template <class Space, class E = float>
using MatrixOf = Kokkos::View<E**, Kokkos::LayoutRight, Space>;
template <class Space, class E = float>
using ConstMatrixOf = Kokkos::View<const E**, Kokkos::LayoutRight, Space>;
template <class Space, class E = float>
using Tensor3Of = Kokkos::View<E***, Kokkos::LayoutRight, Space>;
template <class Space, class E = float>
using ConstTensor3Of = Kokkos::View<const E***, Kokkos::LayoutRight, Space>;
template <class Space, class E = float>
using Tensor4Of = Kokkos::View<E****, Kokkos::LayoutRight, Space>;
template <class Space, class E = float>
using ConstTensor4Of = Kokkos::View<const E****, Kokkos::LayoutRight, Space>;
// Token ids and class targets.
template <class Space>
using IndexVector = Kokkos::View<int*, Kokkos::LayoutRight, Space>;
template <class Space>
using ConstIndexVector = Kokkos::View<const int*, Kokkos::LayoutRight, Space>;

// T, where a template argument must be named rather than deduced (an argument converts to it).
template <class T>
struct SameType {
  using type = T;
};
template <class T>
using Same = typename SameType<T>::type;

// v[i] = value for every i, asynchronously on a GPU (no fence, unlike deep_copy(v, value)).
template <class Space, class E = float>
void fill(const Kokkos::View<E*, Kokkos::LayoutRight, Space>& v, Same<E> value) {
  Kokkos::parallel_for(
      "ptk::fill", Kokkos::RangePolicy<Space>(0, v.extent(0)), KOKKOS_LAMBDA(const std::size_t i) { v(i) = value; });
}

// dst[i] = src[i], asynchronously on a GPU (no fence, unlike deep_copy); the extents must match.
template <class Space>
void copy_values(const Vector<Space>& dst, const ConstVector<Space>& src) {
  Kokkos::parallel_for(
      "ptk::copy", Kokkos::RangePolicy<Space>(0, dst.extent(0)), KOKKOS_LAMBDA(const std::size_t i) { dst(i) = src(i); });
}

// Whether a new Tensor's elements are set: zeros, or left as they are for an output that a kernel
// writes in full. Builds without NDEBUG (the debug preset) fill the latter with NaN, so that an
// element a kernel fails to write shows up in the parity tests.
enum class Init { zeros, none };

template <class Space, class E = float>
class Tensor {
 public:
  using execution_space = Space;
  using value_type = E;
  using Storage = Kokkos::View<E*, Kokkos::LayoutRight, Space>;
  using Rows = MatrixOf<Space, E>;
  static constexpr int block = Element<E>::block;
  static constexpr int item_rows = item_rows_v<E>;  // rows an item spans: 16 for row tiles, else 1

  Tensor() = default;

  // Zero-filled; every dimension must be positive.
  explicit Tensor(Shape shape, const std::string& label = "ptk::tensor") : Tensor(std::move(shape), label, Init::zeros) {}
  Tensor(Shape shape, const std::string& label, Init init) : Tensor(std::move(shape), label, init, buffers_reused()) {}

  // For an output its kernel overwrites entirely: not zero-filled.
  static Tensor uninitialized(Shape shape, const std::string& label = "ptk::tensor") {
    return Tensor(std::move(shape), label, Init::none);
  }
  // Zero-filled and never taken from the reuse cache (ReuseBuffers): for what outlives a step, such as
  // a parameter's gradient (taking a cached buffer for it would leave the next step one short).
  static Tensor persistent(Shape shape, const std::string& label = "ptk::tensor") {
    return Tensor(std::move(shape), label, Init::zeros, false);
  }

  // A tensor over existing storage (a whole buffer or a slice of one, which it keeps alive): never a copy.
  static Tensor over(Shape shape, Storage storage) {
    require(static_cast<std::int64_t>(storage.extent(0)) == items(shape), "ptk::Tensor::over: ", storage.extent(0),
            " items of storage for shape ", shape);
    Tensor t;
    t.shape_ = std::move(shape);
    t.storage_ = std::move(storage);
    return t;
  }

  // Copies host data (items(shape) of them) into a new tensor in Space.
  static Tensor from_host(Shape shape, const E* data) {
    Tensor t(std::move(shape), "ptk::tensor", Init::none);
    Kokkos::View<const E*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> src(
        data, static_cast<std::size_t>(t.items()));
    Kokkos::deep_copy(t.storage_, src);
    return t;
  }
  static Tensor from_host(Shape shape, const std::vector<E>& data) {
    require(static_cast<std::int64_t>(data.size()) == items(shape), "ptk::Tensor::from_host: ", data.size(),
            " items for shape ", shape);
    return from_host(std::move(shape), data.data());
  }

  // Stored items for a shape: its values, or its blocks of 32 (the last dimension must hold whole blocks), or its
  // tiles of 16 rows' blocks.
  static std::int64_t items(const Shape& shape) {
    if constexpr (block > 1)
      require(!shape.empty() && shape.back() % block == 0, "ptk::Tensor: the last dimension of a ",
              dtype_name(Element<E>::dtype), " tensor must be a multiple of ", block, ", got shape ", shape);
    if constexpr (item_rows > 1)
      require(shape.size() >= 2 && shape[shape.size() - 2] % item_rows == 0, "ptk::Tensor: a tensor of row tiles needs ",
              "a second-last dimension that is a multiple of ", item_rows, ", got shape ", shape);
    return element_count(shape) / block / item_rows;
  }
  std::int64_t items() const { return element_count(shape_) / block / item_rows; }

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t numel() const { return element_count(shape_); }
  bool defined() const { return storage_.data() != nullptr; }
  // Negative indices count from the end, as in NumPy.
  std::int64_t dim(int i) const {
    const int r = rank();
    require(i >= -r && i < r, "ptk::Tensor::dim(", i, ") out of range for shape ", shape_);
    return shape_[static_cast<std::size_t>(i < 0 ? i + r : i)];
  }
  E* data() const { return storage_.data(); }
  const Storage& storage() const { return storage_; }

  Storage flat() const { return Storage(data(), static_cast<std::size_t>(items())); }

  // [prod(leading dims), last dim (in items)]: the row view the normalizations and softmax work on.
  Rows rows() const {
    require(rank() >= 1, "ptk::Tensor::rows: needs rank >= 1, got shape ", shape_);
    const auto cols = shape_.back();
    return Rows(data(), static_cast<std::size_t>(numel() / cols / item_rows), static_cast<std::size_t>(cols / block));
  }

  // [batch, rows, cols] with batch 1 for a rank-2 tensor.
  Kokkos::View<E***, Kokkos::LayoutRight, Space> batched_matrices() const {
    require(rank() == 2 || rank() == 3, "ptk::Tensor: expected rank 2 or 3, got shape ", shape_);
    const auto r = static_cast<std::size_t>(dim(-2) / item_rows), c = static_cast<std::size_t>(dim(-1) / block);
    return Kokkos::View<E***, Kokkos::LayoutRight, Space>(data(), rank() == 3 ? static_cast<std::size_t>(shape_[0]) : 1, r, c);
  }

  // The same storage under another shape with as many elements (an alias, never a copy).
  Tensor reshape(Shape shape) const {
    require(element_count(shape) == numel() && items(shape) == items(), "ptk::Tensor::reshape: shape ", shape, " does not hold the ",
            numel(), " elements of shape ", shape_);
    Tensor t;
    t.shape_ = std::move(shape);
    t.storage_ = storage_;
    return t;
  }

  // A same-shaped copy in another execution space's memory (always a copy, never an alias).
  template <class Dst>
  Tensor<Dst, E> to() const {
    Tensor<Dst, E> out(shape_, "ptk::tensor", Init::none);
    Kokkos::deep_copy(out.storage(), storage_);
    return out;
  }

  // The stored items, on the host.
  std::vector<E> to_vector() const {
    std::vector<E> host(static_cast<std::size_t>(items()));
    Kokkos::View<E*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dst(host.data(), host.size());
    Kokkos::deep_copy(dst, storage_);
    return host;
  }

 private:
  Tensor(Shape shape, const std::string& label, Init init, bool cached) : shape_(std::move(shape)) {
    for (auto d : shape_)
      require(d > 0, "ptk::Tensor: every dimension must be positive, got shape ", shape_);
    const auto n = static_cast<std::size_t>(items(shape_));
    if (cached) {
      storage_ = BufferPool<Storage>::take(label, n);
      if (init == Init::zeros) fill<Space, E>(storage_, E{});
    } else {
      storage_ = allocate<Storage>(label, init == Init::zeros, n);
    }
#if !defined(NDEBUG)
    if (init == Init::none) fill<Space, E>(storage_, nan_item<E>());
#endif
  }

  Shape shape_;
  Storage storage_;
};

}  // namespace ptk
