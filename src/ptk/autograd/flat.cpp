#include "ptk/autograd/flat.hpp"

#include <algorithm>
#include <utility>

#include "ptk/autograd/op_support.hpp"
#include "ptk/autograd/storage.hpp"
#include "ptk/core/allocate.hpp"
#include "ptk/kernels/add.hpp"
#include "ptk/kernels/adamw.hpp"

namespace ptk::ag {

using detail::check_args;

namespace {

template <class S>
struct FlatBuffers {
  Vector<S> values, grads;
};

template <class S>
Vector<S> slice(const Vector<S>& v, std::int64_t begin, std::int64_t end) {
  return Kokkos::subview(v, std::make_pair(static_cast<std::size_t>(begin), static_cast<std::size_t>(end)));
}

}  // namespace

FlatParameters::FlatParameters(const std::vector<Var>& params) : params_(params) {
  require(!params_.empty(), "FlatParameters: no parameters");
  device_ = params_.front().device();
  for (const auto& p : params_) {
    check_args("FlatParameters", {{"param", params_.front()}, {"param", p}});
    offsets_.push_back(size_);
    size_ += p.numel();
  }
  on_device(device_, [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto b = std::make_shared<FlatBuffers<S>>();
    b->values = allocate<Vector<S>>("ptk::flat_values", false, static_cast<std::size_t>(size_));
    b->grads = allocate<Vector<S>>("ptk::flat_grads", true, static_cast<std::size_t>(size_));
    for (std::size_t i = 0; i < params_.size(); ++i) {
      VarImpl& impl = params_[i].impl();
      const std::int64_t begin = offsets_[i], end = begin + params_[i].numel();
      const Vector<S> values = slice<S>(b->values, begin, end), grads = slice<S>(b->grads, begin, end);
      copy_values<S>(values, impl.data.get<S>().flat());
      impl.data.get<S>() = Tensor<S>::over(impl.shape, values);
      auto& grad = impl.grad.get<S>();
      if (grad.defined()) copy_values<S>(grads, grad.flat());
      grad = Tensor<S>::over(impl.shape, grads);
    }
    Kokkos::fence();
    buffers_ = b;
  });
}

float* FlatParameters::values() const {
  return on_device(device_, [&](auto tag) {
    using S = typename decltype(tag)::type;
    return std::static_pointer_cast<FlatBuffers<S>>(buffers_)->values.data();
  });
}

float* FlatParameters::grads() const {
  return on_device(device_, [&](auto tag) {
    using S = typename decltype(tag)::type;
    return std::static_pointer_cast<FlatBuffers<S>>(buffers_)->grads.data();
  });
}

void FlatParameters::zero_grads() const {
  on_device(device_, [&](auto tag) {
    using S = typename decltype(tag)::type;
    fill<S>(std::static_pointer_cast<FlatBuffers<S>>(buffers_)->grads, 0.0f);
  });
}

void FlatParameters::scale_grads(std::int64_t begin, std::int64_t end, float factor) const {
  require(0 <= begin && begin <= end && end <= size_, "FlatParameters::scale_grads: range [", begin, ", ", end,
          ") outside [0, ", size_, ")");
  on_device(device_, [&](auto tag) {
    using S = typename decltype(tag)::type;
    kernels::scale<S>(slice<S>(std::static_pointer_cast<FlatBuffers<S>>(buffers_)->grads, begin, end), factor);
  });
}

double FlatParameters::grad_squares(std::int64_t begin, std::int64_t end) const {
  require(0 <= begin && begin <= end && end <= size_, "FlatParameters::grad_squares: range [", begin, ", ", end,
          ") outside [0, ", size_, ")");
  return on_device(device_, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const Vector<S> g = slice<S>(std::static_pointer_cast<FlatBuffers<S>>(buffers_)->grads, begin, end);
    return kernels::dot<S>(g, g);
  });
}

void FlatParameters::set_grads(std::int64_t begin, const Var& from) const {
  require(0 <= begin && begin + from.numel() <= size_, "FlatParameters::set_grads: ", from.numel(), " floats at ", begin,
          " run past the ", size_, " parameters");
  check_args("FlatParameters::set_grads", {{"param", params_.front()}, {"from", from}});
  on_device(device_, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const Vector<S> g = std::static_pointer_cast<FlatBuffers<S>>(buffers_)->grads;
    copy_values<S>(slice<S>(g, begin, begin + from.numel()), data_of<S>(from).flat());
  });
}

void FlatParameters::adamw(std::int64_t begin, std::int64_t end, const Var& m, const Var& v, const AdamwStep& step,
                           const std::vector<float>& weight_decay, const Var& stats) const {
  require(0 <= begin && begin <= end && end <= size_, "FlatParameters::adamw: range [", begin, ", ", end,
          ") outside [0, ", size_, ")");
  require(m.numel() == end - begin && v.numel() == end - begin, "FlatParameters::adamw: m ", m.shape(), " and v ",
          v.shape(), " must hold the ", end - begin, " floats of the range");
  require(weight_decay.size() == params_.size(), "FlatParameters::adamw: ", weight_decay.size(),
          " weight decays for ", params_.size(), " parameters");
  check_args("FlatParameters::adamw", {{"param", params_.front()}, {"m", m}, {"v", v}, {"stats", stats}});
  on_device(device_, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const auto& b = *std::static_pointer_cast<FlatBuffers<S>>(buffers_);
    const Vector<S> mm = data_of<S>(m).flat(), vv = data_of<S>(v).flat();
    // Parameter by parameter over the range: each has its own weight decay.
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const std::int64_t lo = std::max(begin, offsets_[i]), hi = std::min(end, offsets_[i] + params_[i].numel());
      if (lo >= hi) continue;
      const kernels::AdamwStep k{step.lr,          step.beta1,       step.beta2,      step.eps,
                                 weight_decay[i],  step.correction1, step.correction2};
      kernels::adamw_update<S>(slice<S>(b.values, lo, hi), slice<S>(mm, lo - begin, hi - begin),
                               slice<S>(vv, lo - begin, hi - begin), slice<S>(b.grads, lo, hi), k,
                               data_of<S>(stats).flat());
    }
  });
}

float* FlatParameters::data_pointer(const Var& v) {
  return on_device(v.device(), [&](auto tag) { return data_of<typename decltype(tag)::type>(v).data(); });
}

}  // namespace ptk::ag
