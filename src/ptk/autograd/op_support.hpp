#pragma once
// What the differentiable ops' files (functions.cpp, functions_llama.cpp) share: argument checks and the
// wrapping of a kernel's output into a Var with its backward node. Internal to the autograd.
#include <functional>
#include <initializer_list>
#include <memory>
#include <utility>

#include "ptk/autograd/storage.hpp"

namespace ptk::ag::detail {

struct Arg {
  const char* name;
  const Var& var;
};

// Every argument defined and on one device; returns that device.
inline Device check_args(const char* op, std::initializer_list<Arg> args) {
  const Arg* first = nullptr;
  for (const auto& a : args) {
    require(a.var.defined(), op, ": ", a.name, " is an undefined Var");
    if (!first) first = &a;
    if (a.var.device() != first->var.device())  // (the message is built only when it is needed)
      require(false, op, ": ", first->name, " ", first->var.shape(), " is on ", describe(first->var.device()),
              " but ", a.name, " ", a.var.shape(), " is on ", describe(a.var.device()),
              "; move one with an explicit copy");
  }
  return first->var.device();
}

inline void check_ids_device(const char* op, const char* name, const Ids& ids, Device device) {
  require(ids.defined(), op, ": ", name, " is undefined");
  if (ids.device() != device)
    require(false, op, ": ", name, " ", ids.shape(), " is on ", describe(ids.device()),
            " but the tensors are on ", describe(device));
}

// Every id in [0, limit) or equal to `allowed`, checked on the ids' host copy (no device read-back); the
// message is the one the ops' device check gives ("<what> <id> at <where> <n> is outside ...").
inline void check_ids_range(const char* op, const char* what, const char* where, const Ids& ids, std::int64_t limit,
                     std::int64_t allowed, const char* against, const Shape& against_shape) {
  const auto& host = ids.host_values();
  for (std::size_t n = 0; n < host.size(); ++n)
    if ((host[n] < 0 || host[n] >= limit) && host[n] != allowed)
      require(false, op, ": ", what, " ", host[n], " at ", where, " ", n, " is outside [0, ", limit, ")",
              allowed == limit ? "" : " and is not ignore_index " + std::to_string(allowed), " (", against, " shape ",
              against_shape, ")");
}

template <class S>
ConstIndexVector<S> ids_view(const Ids& ids) {
  return ids.impl().values.get<S>();
}

// Wraps an op's output; records a node when gradients are enabled and an input requires one.
template <class S>
Var result(const char* op, Tensor<S> value, Device device, std::initializer_list<Var> inputs,
           std::function<void(VarImpl&)> backward) {
  auto impl = std::make_shared<VarImpl>();
  impl->shape = value.shape();
  impl->device = device;
  impl->data.get<S>() = std::move(value);
  bool wanted = false;
  for (const auto& in : inputs) wanted = wanted || (in.defined() && in.requires_grad());
  if (wanted && grad_enabled()) {
    impl->requires_grad = true;
    auto node = std::make_shared<Node>();
    node->op = op;
    for (const auto& in : inputs)
      if (in.defined()) node->inputs.push_back(in.shared());
    node->backward = std::move(backward);
    impl->grad_fn = std::move(node);
  }
  return Var(std::move(impl));
}

template <class S>
Tensor<S>& out_grad(VarImpl& out) {
  return out.grad.get<S>();
}

// The gradient buffer to add into: the input's own when it wants one, else a scratch tensor that is dropped
// (for kernels that always produce several gradients at once).
template <class S>
Tensor<S> grad_or_scratch(const std::shared_ptr<VarImpl>& v) {
  return v->requires_grad ? grad_of<S>(*v) : Tensor<S>(v->shape, "ptk::unused_grad");
}

}  // namespace ptk::ag::detail
