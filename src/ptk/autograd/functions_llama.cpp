// The differentiable ops the Llama decoder adds: rmsnorm, silu, mul, rope and grouped-query causal attention.
#include <cmath>
#include <optional>

#include "ptk/autograd/functions.hpp"
#include "ptk/autograd/op_support.hpp"
#include "ptk/kernels/heads.hpp"
#include "ptk/kernels/mul.hpp"
#include "ptk/ops/activations.hpp"
#include "ptk/ops/attention.hpp"
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

Var causal_attention(const Var& q, const Var& k, const Var& v, int n_head, int n_kv_head) {
  const char* op = "causal_attention";
  const Device device = check_args(op, {{"q", q}, {"k", k}, {"v", v}});
  require(n_head > 0 && n_kv_head > 0 && n_head % n_kv_head == 0, op, ": n_head = ", n_head,
          " must be a positive multiple of n_kv_head = ", n_kv_head);
  const auto D = head_dim(op, "q", q, n_head);
  const Shape& qs = q.shape();
  const Shape kv{qs[0], qs[1], n_kv_head * D};
  require(k.shape() == kv && v.shape() == kv, op, ": q ", qs, " has ", n_head, " heads of ", D, "; k ",
          k.shape(), " and v ", v.shape(), " must both be ", kv, " (", n_kv_head,
          " kv heads)");
  const auto B = qs[0], T = qs[1], H = static_cast<std::int64_t>(n_head);
  const int group = n_head / n_kv_head;
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const auto as_rows = [](const Tensor<S>& t) { return Tensor3<S>(t.data(), t.dim(0), t.dim(1), t.dim(2)); };
    const auto as_heads = [](const Tensor<S>& t) { return Tensor4<S>(t.data(), t.dim(0), t.dim(1), t.dim(2), t.dim(3)); };
    auto qh = Tensor<S>::uninitialized({B, H, T, D}, "ptk::q"), kh = Tensor<S>::uninitialized({B, H, T, D}, "ptk::k"),
         vh = Tensor<S>::uninitialized({B, H, T, D}, "ptk::v");
    kernels::split_heads<S>(as_heads(qh), as_rows(data_of<S>(q)), 0);
    kernels::split_heads<S>(as_heads(kh), as_rows(data_of<S>(k)), 0, group);
    kernels::split_heads<S>(as_heads(vh), as_rows(data_of<S>(v)), 0, group);
    auto r = ops::attention<S, Tune>(qh, kh, vh, std::nullopt, /*causal=*/true);
    auto y = Tensor<S>::uninitialized(qs, "ptk::attention_rows");
    kernels::merge_heads<S>(as_rows(y), as_heads(r.out), 0, false);
    return result<S>(op, y, device, {q, k, v},
                     [iq = q.shared(), ik = k.shared(), iv = v.shared(), qh, kh, vh, o = r.out, lse = r.lse, as_rows,
                      as_heads, group](VarImpl& out) {
                       auto dout = Tensor<S>::uninitialized(o.shape(), "ptk::attention_dout");
                       kernels::split_heads<S>(as_heads(dout), as_rows(out_grad<S>(out)), 0);
                       Tensor<S> dq(qh.shape(), "ptk::dq"), dk(kh.shape(), "ptk::dk"), dv(vh.shape(), "ptk::dv");
                       ops::attention_backward<S, Tune>(dq, dk, dv, dout, qh, kh, vh, o, lse, std::nullopt, true);
                       // Each kv head's gradient is the sum of its group's (merge_heads adds them in order).
                       if (iq->requires_grad) kernels::merge_heads<S>(as_rows(grad_of<S>(*iq)), as_heads(dq), 0, true);
                       if (ik->requires_grad) kernels::merge_heads<S>(as_rows(grad_of<S>(*ik)), as_heads(dk), 0, true, group);
                       if (iv->requires_grad) kernels::merge_heads<S>(as_rows(grad_of<S>(*iv)), as_heads(dv), 0, true, group);
                     });
  });
}

}  // namespace ptk::ag
