#pragma once
// Parameters in one buffer, for data-parallel training (nn/data_parallel.hpp). No Kokkos here.
//
// FlatParameters moves the values and the gradients of a fixed list of parameters into two contiguous buffers, in
// list order: parameter i occupies [offset(i), offset(i) + numel) of each, and its Var's data and gradient become
// slices of them (the values are copied in once; the Vars stay usable as before). A collective then moves the whole
// model, or any contiguous range of it (a bucket, a shard), with one call, and the optimizer updates any range of it.
#include <cstdint>
#include <memory>
#include <vector>

#include "ptk/autograd/functions.hpp"
#include "ptk/autograd/variable.hpp"

namespace ptk::ag {

class FlatParameters {
 public:
  // Every parameter on one device; none may be bound to another FlatParameters already.
  explicit FlatParameters(const std::vector<Var>& params);

  std::int64_t size() const { return size_; }
  Device device() const { return device_; }
  std::size_t count() const { return offsets_.size(); }
  std::int64_t offset(std::size_t i) const { return offsets_[i]; }
  std::int64_t numel(std::size_t i) const { return params_[i].numel(); }

  // The buffers themselves, in the device's memory (for communication).
  float* values() const;
  float* grads() const;

  void zero_grads() const;
  // grads[begin, end) *= factor
  void scale_grads(std::int64_t begin, std::int64_t end, float factor) const;
  // Σ g² over grads[begin, end), accumulated in double and read back.
  double grad_squares(std::int64_t begin, std::int64_t end) const;

  // grads[begin, begin + from.numel()) = from (a Var of this device): a shard reduced elsewhere, put in its place.
  void set_grads(std::int64_t begin, const Var& from) const;

  // AdamW (the kernel of ag::adamw_update) on values[begin, end) from grads[begin, end); m and v hold the range's
  // moments (end - begin floats each), stats [norm, clip factor]; parameter i decays with weight_decay[i].
  void adamw(std::int64_t begin, std::int64_t end, const Var& m, const Var& v, const AdamwStep& step,
             const std::vector<float>& weight_decay, const Var& stats) const;

  // A device pointer to v's data (a Var of this device), for communication into or out of it.
  static float* data_pointer(const Var& v);

 private:
  std::vector<Var> params_;
  std::vector<std::int64_t> offsets_;
  std::int64_t size_ = 0;
  Device device_ = Device::host;
  std::shared_ptr<void> buffers_;  // the two Kokkos buffers (flat.cpp)
};

}  // namespace ptk::ag
