#include "ptk/autograd/variable.hpp"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ptk/autograd/storage.hpp"
#include "ptk/core/buffer_pool.hpp"
#include "ptk/ops/convert.hpp"

namespace ptk::ag {

namespace {
thread_local bool g_grad_enabled = true;
thread_local DType g_autocast = DType::f32;

using HostFloats = Kokkos::View<float*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
}  // namespace

Device parse_device(const std::string& name) {
  if (name == "host") return canonical(Device::host);
  if (name == "default") return canonical(Device::device);
  throw InputError("device must be host or default, got '" + name + "'");
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
          " values for shape ", shape());
  on_device(device(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    Kokkos::deep_copy(data_of<S>(*this).storage(), HostFloats(const_cast<float*>(values.data()), values.size()));
  });
  impl().drop_cast();
}

float Var::item() const {
  require(numel() == 1, "ptk::ag::Var::item: needs one element, got shape ", shape());
  return values()[0];
}

void Var::store_as(DType dtype) const {
  VarImpl& v = impl();
  if (dtype == DType::f32 || dtype == v.dtype) return;
  require(v.dtype == DType::f32, "store_as: a Var stored as ", dtype_name(v.dtype), " cannot be stored again");
  require(!v.grad_fn, "store_as: only a leaf (a parameter) can be stored as ", dtype_name(dtype));
  on_device(v.device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto& x = v.data.template get<S>();
    auto& st = v.stored.template get<S>();
    switch (dtype) {
      case DType::bf16: st.as_bf16 = ops::convert<bf16>(x, "weight"); break;
      case DType::f16: st.as_f16 = ops::convert<f16>(x, "weight"); break;
      case DType::q8_0: store_blocks(st, ops::convert<q8_0>(x, "weight")); break;
      default: store_blocks(st, ops::convert<q4_0>(x, "weight")); break;
    }
    x = Tensor<S>();
  });
  v.grad = Buffer{};
  v.requires_grad = false;
  v.dtype = dtype;
}

Var Var::from_stored(const Shape& shape, DType dtype, const void* host_data, Device device) {
  auto impl = std::make_shared<VarImpl>();
  impl->shape = shape;
  impl->device = canonical(device);
  impl->dtype = dtype;
  on_device(impl->device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto& st = impl->stored.template get<S>();
    switch (dtype) {
      case DType::f32: impl->data.template get<S>() = Tensor<S>::from_host(shape, static_cast<const float*>(host_data)); break;
      case DType::bf16: st.as_bf16 = Tensor<S, bf16>::from_host(shape, static_cast<const bf16*>(host_data)); break;
      case DType::f16: st.as_f16 = Tensor<S, f16>::from_host(shape, static_cast<const f16*>(host_data)); break;
      case DType::q8_0: store_blocks(st, Tensor<S, q8_0>::from_host(shape, static_cast<const q8_0*>(host_data))); break;
      case DType::q4_0: store_blocks(st, Tensor<S, q4_0>::from_host(shape, static_cast<const q4_0*>(host_data))); break;
    }
  });
  return Var(std::move(impl));
}

DType Var::dtype() const { return impl().dtype; }

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
    using S = typename decltype(tag)::type;
    auto& g = impl().grad.get<S>();
    if (g.defined()) fill<S>(g.storage(), 0.0f);
  });
}

void Var::backward() const { backward_scaled(1.0f); }

void Var::backward(const std::function<void(const Var& leaf)>& leaf_done) const { backward_scaled(1.0f, leaf_done); }

void Var::backward_scaled(float seed, const std::function<void(const Var& leaf)>& leaf_done) const {
  require(numel() == 1, "ptk::ag::Var::backward: the loss must have one element, got shape ", shape());
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

  // For leaf_done: how many nodes still to run add into each leaf's gradient.
  std::unordered_map<const VarImpl*, int> pending;
  if (leaf_done)
    for (const auto& var : order)
      if (var->grad_fn)
        for (const auto& input : var->grad_fn->inputs)
          if (input->requires_grad && !input->grad_fn) ++pending[input.get()];

  on_device(device(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    fill<S>(grad_of<S>(*impl_).storage(), seed);
  });
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    VarImpl& var = **it;
    if (!var.grad_fn) continue;  // a leaf: keeps its gradient
    if (has_grad_buffer(var)) var.grad_fn->backward(var);
    if (leaf_done)
      for (const auto& input : var.grad_fn->inputs) {
        const auto left = pending.find(input.get());
        if (left != pending.end() && --left->second == 0) leaf_done(Var(input));
      }
    var.grad_fn.reset();
    var.grad = Buffer{};
  }
}

Ids Ids::from_vector(const Shape& shape, const std::vector<int>& values, Device device) {
  return from_vectors(shape, {&values}, device)[0];
}

std::vector<Ids> Ids::from_vectors(const Shape& shape, const std::vector<const std::vector<int>*>& parts, Device device) {
  const auto n = static_cast<std::size_t>(element_count(shape));
  for (const auto* part : parts)
    require(part->size() == n && n > 0, "ptk::ag::Ids: ", part->size(), " values for shape ", shape);
  // The buffer: every part's ids, then every part's order (its positions sorted by (id, position)),
  // sorted here on the host where the ids are, so no kernel sorts them on the device.
  std::vector<int> all;
  all.reserve(2 * n * parts.size());
  for (const auto* part : parts) all.insert(all.end(), part->begin(), part->end());
  const auto N = static_cast<std::int64_t>(n);
  for (const auto* part : parts) {
    std::vector<std::int64_t> keys(n);  // id·N + position: unique, ordered by (id, position)
    for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<std::int64_t>((*part)[i]) * N + static_cast<std::int64_t>(i);
    std::sort(keys.begin(), keys.end());
    for (const auto key : keys) all.push_back(static_cast<int>((key % N + N) % N));  // ids may be negative
  }
  std::vector<Ids> out;
  on_device(canonical(device), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const auto buffer = work_view<IndexVector<S>>("ptk::ids", all.size());
    Kokkos::deep_copy(buffer, Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                  all.data(), all.size()));
    for (std::size_t i = 0; i < parts.size(); ++i) {
      Ids ids;
      ids.impl_ = std::make_shared<IdsImpl>();
      ids.impl_->shape = shape;
      ids.impl_->device = canonical(device);
      ids.impl_->host = *parts[i];
      // Subviews share the buffer's ownership: a backward closure holding these ids keeps it alive.
      ids.impl_->values.get<S>() = Kokkos::subview(buffer, std::make_pair(i * n, (i + 1) * n));
      const std::size_t o = (parts.size() + i) * n;
      ids.impl_->order.get<S>() = Kokkos::subview(buffer, std::make_pair(o, o + n));
      out.push_back(std::move(ids));
    }
  });
  return out;
}

IdsImpl& Ids::impl() const {
  require(impl_ != nullptr, "ptk::ag::Ids: use of an undefined Ids");
  return *impl_;
}
const Shape& Ids::shape() const { return impl().shape; }
Device Ids::device() const { return impl().device; }
const std::vector<int>& Ids::host_values() const { return impl().host; }

ReuseBuffers::ReuseBuffers() : scope_(std::make_unique<ptk::ReuseBuffers>()) {}
ReuseBuffers::~ReuseBuffers() = default;

std::vector<std::vector<float>> read_together(const std::vector<Var>& vars) {
  require(!vars.empty(), "ptk::ag::read_together: no Vars");
  std::int64_t total = 0;
  for (const auto& v : vars) total += v.numel();
  std::vector<std::vector<float>> out;
  on_device(vars.front().device(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto all = Tensor<S>::uninitialized({total}, "ptk::read_together");
    std::size_t offset = 0;
    for (const auto& v : vars) {
      require(v.device() == vars.front().device(), "ptk::ag::read_together: Vars on ", describe(vars.front().device()),
              " and ", describe(v.device()));
      const auto n = static_cast<std::size_t>(v.numel());
      copy_values<S>(Vector<S>(all.data() + offset, n), data_of<S>(v).flat());
      offset += n;
    }
    const auto host = all.to_vector();
    offset = 0;
    for (const auto& v : vars) {
      const auto n = static_cast<std::size_t>(v.numel());
      out.emplace_back(host.begin() + static_cast<std::ptrdiff_t>(offset), host.begin() + static_cast<std::ptrdiff_t>(offset + n));
      offset += n;
    }
  });
  return out;
}

bool grad_enabled() { return g_grad_enabled; }
NoGrad::NoGrad() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGrad::~NoGrad() { g_grad_enabled = previous_; }

DType autocast_dtype() { return g_autocast; }
Autocast::Autocast(DType dtype) : previous_(g_autocast) {
  require(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16, "ptk::ag::Autocast: ",
          dtype_name(dtype), " is a storage type for inference weights; autocast takes f32, bf16 or f16");
  g_autocast = dtype;
}
Autocast::~Autocast() { g_autocast = previous_; }

}  // namespace ptk::ag
