#include "ptk/autograd/variable.hpp"

#include <unordered_set>
#include <utility>

#include "ptk/autograd/storage.hpp"

namespace ptk::ag {

namespace {
thread_local bool g_grad_enabled = true;

using HostFloats = Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
}  // namespace

Device parse_device(const std::string& name) {
  if (name == "host") return canonical(Device::host);
  if (name == "default") return canonical(Device::device);
  throw Error("device must be host or default, got '" + name + "'");
}

std::string describe(Device device) {
  return on_device(canonical(device), [&](auto tag) {
    using S = typename decltype(tag)::type;
    return std::string(device == Device::host || kOneSpace ? "host (" : "default (") + S::name() + ")";
  });
}

Var Var::zeros(const Shape& shape, Device device, bool requires_grad) {
  auto impl = std::make_shared<VarImpl>();
  impl->shape = shape;
  impl->device = canonical(device);
  impl->requires_grad = requires_grad;
  on_device(impl->device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    impl->data.get<S>() = Tensor<S>(shape, "ptk::var");
  });
  return Var(std::move(impl));
}

Var Var::from_vector(const Shape& shape, const std::vector<float>& values, Device device, bool requires_grad) {
  Var v = zeros(shape, device, requires_grad);
  v.assign(values);
  return v;
}

VarImpl& Var::impl() const {
  require(impl_ != nullptr, "ptk::ag::Var: use of an undefined Var");
  return *impl_;
}
const Shape& Var::shape() const { return impl().shape; }
std::int64_t Var::numel() const { return element_count(impl().shape); }
Device Var::device() const { return impl().device; }
bool Var::requires_grad() const { return impl().requires_grad; }
bool Var::has_graph() const { return impl().grad_fn != nullptr; }

std::vector<float> Var::values() const {
  return on_device(device(), [&](auto tag) { return data_of<typename decltype(tag)::type>(*this).to_vector(); });
}

void Var::assign(const std::vector<float>& values) const {
  require(static_cast<std::int64_t>(values.size()) == numel(), "ptk::ag::Var::assign: ", values.size(),
          " values for shape ", to_string(shape()));
  on_device(device(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    Kokkos::deep_copy(data_of<S>(*this).storage(), HostFloats(const_cast<float*>(values.data()), values.size()));
  });
}

float Var::item() const {
  require(numel() == 1, "ptk::ag::Var::item: needs one element, got shape ", to_string(shape()));
  return values()[0];
}

bool Var::has_grad() const {
  return on_device(device(), [&](auto tag) { return impl().grad.get<typename decltype(tag)::type>().defined(); });
}

std::vector<float> Var::grad() const {
  if (!has_grad()) return std::vector<float>(static_cast<std::size_t>(numel()), 0.0f);
  return on_device(device(), [&](auto tag) { return impl().grad.get<typename decltype(tag)::type>().to_vector(); });
}

// Zero-filled in place rather than freed: the next step's gradient reuses the allocation.
void Var::zero_grad() const {
  on_device(device(), [&](auto tag) {
    auto& g = impl().grad.get<typename decltype(tag)::type>();
    if (g.defined()) Kokkos::deep_copy(g.storage(), 0.0f);
  });
}

void Var::backward() const {
  require(numel() == 1, "ptk::ag::Var::backward: the loss must have one element, got shape ", to_string(shape()));
  require(requires_grad(), "ptk::ag::Var::backward: the loss does not require a gradient (no parameter that requires "
                           "one reaches it, or it was computed under NoGrad)");
  // Post-order depth-first walk from the loss; reversed, every Var comes before the inputs of its node. The
  // walk holds shared pointers: releasing a node below may free Vars that only the node kept alive.
  std::vector<std::shared_ptr<VarImpl>> order;
  std::unordered_set<const VarImpl*> seen{impl_.get()};
  std::vector<std::pair<std::shared_ptr<VarImpl>, std::size_t>> stack{{impl_, 0}};
  while (!stack.empty()) {
    auto& [var, next] = stack.back();
    static const std::vector<std::shared_ptr<VarImpl>> kNone;
    const auto& inputs = var->grad_fn ? var->grad_fn->inputs : kNone;
    if (next < inputs.size()) {
      auto input = inputs[next++];
      if (input->requires_grad && seen.insert(input.get()).second) stack.emplace_back(std::move(input), 0);
    } else {
      order.push_back(var);
      stack.pop_back();
    }
  }

  on_device(device(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    Kokkos::deep_copy(grad_of<S>(*impl_).storage(), 1.0f);
  });
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    VarImpl& var = **it;
    if (!var.grad_fn) continue;  // a leaf: keeps its gradient
    if (has_grad_buffer(var)) var.grad_fn->backward(var);
    var.grad_fn.reset();
    var.grad = Buffer{};
  }
}

Ids Ids::from_vector(const Shape& shape, const std::vector<int>& values, Device device) {
  require(static_cast<std::int64_t>(values.size()) == element_count(shape) && !values.empty(), "ptk::ag::Ids: ",
          values.size(), " values for shape ", to_string(shape));
  Ids ids;
  ids.impl_ = std::make_shared<IdsImpl>();
  ids.impl_->shape = shape;
  ids.impl_->device = canonical(device);
  on_device(ids.impl_->device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    IndexVector<S> v("ptk::ids", values.size());
    Kokkos::deep_copy(v, Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                             values.data(), values.size()));
    ids.impl_->values.get<S>() = v;
  });
  return ids;
}

IdsImpl& Ids::impl() const {
  require(impl_ != nullptr, "ptk::ag::Ids: use of an undefined Ids");
  return *impl_;
}
const Shape& Ids::shape() const { return impl().shape; }
Device Ids::device() const { return impl().device; }

bool grad_enabled() { return g_grad_enabled; }
NoGrad::NoGrad() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGrad::~NoGrad() { g_grad_enabled = previous_; }

}  // namespace ptk::ag
