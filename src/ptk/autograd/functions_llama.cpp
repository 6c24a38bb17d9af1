// The differentiable ops the Llama decoder adds: rmsnorm, silu, swiglu, mul and rope.
#include <cmath>
#include <optional>

#include "ptk/autograd/functions.hpp"
#include "ptk/autograd/op_support.hpp"
#include "ptk/kernels/mul.hpp"
#include "ptk/ops/activations.hpp"
#include "ptk/ops/rmsnorm.hpp"
#include "ptk/ops/rope.hpp"

namespace ptk::ag {

using namespace detail;

Var rmsnorm(const Var& x, const Var& weight, float eps) {
  const Device device = check_args("rmsnorm", {{"x", x}, {"weight", weight}});
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const Tensor<S> tx = data_of<S>(x), tw = data_of<S>(weight);
    auto r = ops::rmsnorm<S, Tune>(tx, tw, eps);
    return result<S>("rmsnorm", r.out, device, {x, weight},
                     [ix = x.shared(), iw = weight.shared(), tx, tw, rstd = r.rstd](VarImpl& out) {
                       ops::rmsnorm_backward<S, Tune>(grad_or_scratch<S>(ix), grad_or_scratch<S>(iw), out_grad<S>(out), tx, tw, rstd);
                     });
  });
}

Var silu(const Var& x) {
  const Device device = check_args("silu", {{"x", x}});
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const Tensor<S> tx = data_of<S>(x);
    return result<S>("silu", ops::silu<S, Tune>(tx), device, {x}, [ix = x.shared(), tx](VarImpl& out) {
      ops::silu_backward<S, Tune>(grad_of<S>(*ix), tx, out_grad<S>(out));
    });
  });
}

Var swiglu(const Var& gate, const Var& up) {
  const Device device = check_args("swiglu", {{"gate", gate}, {"up", up}});
  require(gate.shape() == up.shape(), "swiglu: gate has shape ", gate.shape(), " but up has shape ", up.shape());
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const Tensor<S> tg = data_of<S>(gate), tu = data_of<S>(up);
    return result<S>("swiglu", ops::swiglu<S, Tune>(tg, tu), device, {gate, up},
                     [ig = gate.shared(), iu = up.shared(), tg, tu](VarImpl& out) {
                       ops::swiglu_backward<S, Tune>(ig->requires_grad ? grad_of<S>(*ig) : Tensor<S>(),
                                                     iu->requires_grad ? grad_of<S>(*iu) : Tensor<S>(), tg, tu,
                                                     out_grad<S>(out));
                     });
  });
}

Var mul(const Var& a, const Var& b) {
  const Device device = check_args("mul", {{"a", a}, {"b", b}});
  require(a.shape() == b.shape(), "mul: a has shape ", a.shape(), " but b has shape ", b.shape());
  return on_device(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const Tensor<S> ta = data_of<S>(a), tb = data_of<S>(b);
    auto y = Tensor<S>::uninitialized(a.shape(), "ptk::mul");
    kernels::mul_forward<S>(y.flat(), ta.flat(), tb.flat());
    return result<S>("mul", y, device, {a, b}, [ia = a.shared(), ib = b.shared(), ta, tb](VarImpl& out) {
      const Vector<S> da = ia->requires_grad ? grad_of<S>(*ia).flat() : Vector<S>();
      const Vector<S> db = ib->requires_grad ? grad_of<S>(*ib).flat() : Vector<S>();
      kernels::mul_backward<S>(da, db, out_grad<S>(out).flat(), ta.flat(), tb.flat());
    });
  });
}

namespace {

// x [B, T, heads·D] -> its head dim D; the error names the op and the shape.
std::int64_t head_dim(const char* op, const char* name, const Var& x, int heads) {
  const Shape& s = x.shape();
  require(s.size() == 3 && s[0] > 0 && s[1] > 0 && s[2] > 0, op, ": ", name, " must be a non-empty [B, T, heads * D], got shape ",
          s);
  require(heads > 0 && s[2] % heads == 0, op, ": ", name, " ", s, " has ", s[2],
          " channels, not divisible by its ", heads, " heads");
  return s[2] / heads;
}

}  // namespace

Var rope(const Var& x, int n_head, int pos_offset, float base) {
  const Device device = check_args("rope", {{"x", x}});
  const auto D = head_dim("rope", "x", x, n_head);
  require(D % 2 == 0, "rope: x ", x.shape(), " with ", n_head, " heads has head dim ", D,
          "; rope rotates pairs, so it must be even");
  const Shape heads{x.shape()[0], x.shape()[1], n_head, D};
  return on_device(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const Tensor<S> y = ops::rope(data_of<S>(x).reshape(heads), pos_offset, base, ops::RopeLayout::bthd);
    return result<S>("rope", y.reshape(x.shape()), device, {x}, [ix = x.shared(), heads, pos_offset, base](VarImpl& out) {
      ops::rope_backward(grad_of<S>(*ix).reshape(heads), out_grad<S>(out).reshape(heads), pos_offset, base,
                         ops::RopeLayout::bthd);
    });
  });
}

}  // namespace ptk::ag
