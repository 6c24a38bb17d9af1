// The differentiable ops: argument checks, the kernels' calls on the arguments' space, and the backward nodes.
#include "ptk/autograd/functions.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "ptk/autograd/op_support.hpp"
#include "ptk/autograd/storage.hpp"
#include "ptk/kernels/adamw.hpp"
#include "ptk/kernels/add.hpp"
#include "ptk/ops/activations.hpp"
#include "ptk/ops/cross_entropy.hpp"
#include "ptk/ops/embedding.hpp"
#include "ptk/ops/layernorm.hpp"
#include "ptk/ops/linear.hpp"
#include "ptk/ops/matmul.hpp"

namespace ptk::ag {

using namespace detail;

Var add(const Var& a, const Var& b) {
  const Device device = check_args("add", {{"a", a}, {"b", b}});
  require(a.shape() == b.shape(), "add: a has shape ", a.shape(), " but b has shape ", b.shape());
  return on_device(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto y = Tensor<S>::uninitialized(a.shape(), "ptk::add");
    kernels::add_forward<S>(y.flat(), data_of<S>(a).flat(), data_of<S>(b).flat());
    return result<S>("add", y, device, {a, b}, [ia = a.shared(), ib = b.shared()](VarImpl& out) {
      // An input without a gradient yet takes dY itself (out's gradient is not read after this node), or a copy
      // when the first input took it; one with a gradient adds dY.
      const Tensor<S> g = out_grad<S>(out);
      bool shared = false;
      for (const auto& in : {ia, ib}) {
        if (!in->requires_grad) continue;
        if (!in->grad.template get<S>().defined() && in->grad_fn && !shared) {
          in->grad.template get<S>() = g;
          shared = true;
          continue;
        }
        bool fresh = false;
        Tensor<S>& d = grad_to_write<S>(*in, fresh);
        if (fresh) copy_values<S>(d.flat(), g.flat());
        else kernels::accumulate<S>(d.flat(), g.flat());
      }
    });
  });
}

Var matmul(const Var& a, const Var& b, bool trans_a, bool trans_b) {
  const Device device = check_args("matmul", {{"A", a}, {"B", b}});
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const Tensor<S> ta = data_of<S>(a), tb = data_of<S>(b);
    Tensor<S> c = ops::matmul<S, Tune>(ta, tb, trans_a, trans_b);
    return result<S>("matmul", c, device, {a, b}, [ia = a.shared(), ib = b.shared(), ta, tb, trans_a, trans_b](VarImpl& out) {
      const Tensor<S> da = ia->requires_grad ? grad_of<S>(*ia) : Tensor<S>();
      const Tensor<S> db = ib->requires_grad ? grad_of<S>(*ib) : Tensor<S>();
      ops::matmul_backward<S, Tune>(da, db, out_grad<S>(out), ta, tb, trans_a, trans_b);
    });
  });
}

namespace {
// linear under Autocast(E): X and W rounded to E (cast_of: no range check, no read-back; once per Var, so the q,
// k and v projections of one input share its copy, and a weight's copy is the one AdamW writes), Y = X_E · W_Eᵀ
// with fp32 accumulation and Y in f32; backward rounds dY to E too, dX += dY_E · W_E and dW += dY_Eᵀ · X_E into
// the fp32 gradients. The node keeps X_E and W_E for the backward pass.
template <class E>
Var linear_autocast(const Var& x, const Var& weight, const Var& bias, Device device, const Shape& ys) {
  const auto in = x.shape().back();
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const Tensor<S, E> x2 = cast_of<S, E>(x).reshape({x.numel() / in, in});
    const Tensor<S, E> w = cast_of<S, E>(weight);
    Tensor<S> y2 = ops::matmul<S, Tune, E, E>(x2, w, false, true);
    if (bias.defined()) kernels::bias_forward<S>(y2.rows(), y2.rows(), data_of<S>(bias).flat());
    return result<S>("linear", y2.reshape(ys), device, {x, weight, bias},
                     [ix = x.shared(), iw = weight.shared(), ib = bias.defined() ? bias.shared() : nullptr, x2, w](VarImpl& out) {
                       const Tensor<S> g2 = out_grad<S>(out).reshape({x2.dim(0), w.dim(0)});
                       const Tensor<S, E> gE = ops::cast<E>(g2);
                       if (ix->requires_grad) {
                         bool fresh = false;
                         Tensor<S>& gx = grad_to_write<S>(*ix, fresh);
                         ops::matmul_accumulate<S, Tune, E, E>(gx.reshape({x2.dim(0), x2.dim(1)}), gE, w, false, false,
                                                               1.0f, fresh ? 0.0f : 1.0f);
                       }
                       if (iw->requires_grad) ops::matmul_accumulate<S, Tune, E, E>(grad_of<S>(*iw), gE, x2, true, false);
                       if (ib && ib->requires_grad) kernels::bias_backward<S, Tune>(grad_of<S>(*ib).flat(), g2.rows());
                     });
  });
}
}  // namespace

Var linear(const Var& x, const Var& weight, const Var& bias) {
  const Device device = bias.defined() ? check_args("linear", {{"x", x}, {"weight", weight}, {"bias", bias}})
                                       : check_args("linear", {{"x", x}, {"weight", weight}});
  const Shape& xs = x.shape();
  require(weight.shape().size() == 2 && !xs.empty() && weight.shape()[1] == xs.back(), "linear: x has shape ",
          xs, " and weight has shape ", weight.shape(), "; weight must be [out, in] with in = ",
          xs.empty() ? 0 : xs.back());
  const auto in = xs.back(), out_features = weight.shape()[0];
  if (bias.defined())
    require(bias.shape() == Shape{out_features}, "linear: bias has shape ", bias.shape(), " for weight ",
            weight.shape(), "; it must be [", out_features, "]");
  Shape ys = xs;
  ys.back() = out_features;
  if (weight.dtype() != DType::f32) {  // a weight stored for inference (Var::store_as): no graph
    require(!x.requires_grad() || !grad_enabled(), "linear: a weight stored as ", dtype_name(weight.dtype()),
            " takes no part in a backward pass (inference only)");
    return on_compute(device, [&](auto tag) {
      using S = typename decltype(tag)::type;
      using Tune = typename decltype(tag)::tune;
      const Tensor<S> x2 = data_of<S>(x).reshape({x.numel() / in, in});
      const Tensor<S> b = bias.defined() ? data_of<S>(bias) : Tensor<S>();
      const Tensor<S> y2 = with_stored<S>(weight, [&](const auto& w) { return ops::linear<S, Tune>(x2, w, b); });
      return result<S>("linear", y2.reshape(ys), device, {}, {});  // no inputs: no graph
    });
  }
  if (autocast_dtype() == DType::bf16) return linear_autocast<bf16>(x, weight, bias, device, ys);
  if (autocast_dtype() == DType::f16) return linear_autocast<f16>(x, weight, bias, device, ys);
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const Tensor<S> x2 = data_of<S>(x).reshape({x.numel() / in, in});
    const Tensor<S> w = data_of<S>(weight);
    Tensor<S> y2 = ops::linear<S, Tune>(x2, w, bias.defined() ? data_of<S>(bias) : Tensor<S>());
    return result<S>("linear", y2.reshape(ys), device, {x, weight, bias},
                     [ix = x.shared(), iw = weight.shared(), ib = bias.defined() ? bias.shared() : nullptr, x2, w](VarImpl& out) {
                       const Tensor<S> g2 = out_grad<S>(out).reshape({x2.dim(0), w.dim(0)});
                       if (ix->requires_grad) {  // dX = dY · W, written where X has no gradient yet (beta 0)
                         bool fresh = false;
                         Tensor<S>& gx = grad_to_write<S>(*ix, fresh);
                         ops::matmul_accumulate<S, Tune>(gx.reshape(x2.shape()), g2, w, false, false, 1.0f,
                                                         fresh ? 0.0f : 1.0f);
                       }
                       if (iw->requires_grad) ops::matmul_accumulate<S, Tune>(grad_of<S>(*iw), g2, x2, true, false);
                       if (ib && ib->requires_grad) kernels::bias_backward<S, Tune>(grad_of<S>(*ib).flat(), g2.rows());
                     });
  });
}

namespace {
// Whether a weight stored as q8_0 or q4_0 is held in row tiles (storage.hpp store_blocks), on the device it lives on.
bool tiled(const Var& w) {
  return on_device(w.device(),
                   [&](auto tag) { return w.impl().stored.template get<typename decltype(tag)::type>().tiled(); });
}
}  // namespace

std::vector<Var> linears(const Var& x, const std::vector<Var>& weights) {
  require(!weights.empty(), "linears: no weight");
  bool group = weights.size() > 1 && weights.size() <= static_cast<std::size_t>(kernels::decode_group_max) &&
               !(grad_enabled() && x.requires_grad());
  for (const Var& w : weights) {
    check_args("linears", {{"x", x}, {"weight", w}});
    group = group && w.dtype() == weights[0].dtype() && tiled(w) == tiled(weights[0]) &&
            !(grad_enabled() && w.requires_grad()) &&
            (w.dtype() != DType::f32 || autocast_dtype() == DType::f32) && w.shape().size() == 2 &&
            !x.shape().empty() && w.shape()[1] == x.shape().back();
  }
  std::vector<Var> ys;
  if (!group) {  // a graph to record, an Autocast scope, mixed types or a wrong shape (linear says which)
    for (const Var& w : weights) ys.push_back(linear(x, w));
    return ys;
  }
  const Device device = x.device();
  const auto in = x.shape().back();
  on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const Tensor<S> x2 = data_of<S>(x).reshape({x.numel() / in, in});
    const auto run = [&](auto e) {
      using E = decltype(e);
      std::vector<Tensor<S, E>> ws;
      for (const Var& w : weights) ws.push_back(stored_of<S, E>(w));
      for (Tensor<S>& y2 : ops::linear_group<S, Tune, E>(x2, ws)) {
        Shape ys_shape = x.shape();
        ys_shape.back() = y2.dim(1);
        ys.push_back(result<S>("linear", y2.reshape(ys_shape), device, {}, {}));  // no graph (checked above)
      }
    };
    switch (weights[0].dtype()) {
      case DType::f32: return run(float{});
      case DType::bf16: return run(bf16{});
      case DType::f16: return run(f16{});
      case DType::q8_0: return tiled(weights[0]) ? run(q8_0x16{}) : run(q8_0{});
      default: return tiled(weights[0]) ? run(q4_0x16{}) : run(q4_0{});
    }
  });
  return ys;
}

Var layernorm(const Var& x, const Var& weight, const Var& bias, float eps) {
  const Device device = check_args("layernorm", {{"x", x}, {"weight", weight}, {"bias", bias}});
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const Tensor<S> tx = data_of<S>(x), tw = data_of<S>(weight);
    auto r = ops::layernorm<S, Tune>(tx, tw, data_of<S>(bias), eps);
    return result<S>("layernorm", r.out, device, {x, weight, bias},
                     [ix = x.shared(), iw = weight.shared(), ib = bias.shared(), tx, tw, mean = r.mean, rstd = r.rstd](VarImpl& out) {
                       ops::layernorm_backward<S, Tune>(grad_or_scratch<S>(ix), grad_or_scratch<S>(iw), grad_or_scratch<S>(ib),
                                               out_grad<S>(out), tx, tw, mean, rstd);
                     });
  });
}

Var gelu(const Var& x) {
  const Device device = check_args("gelu", {{"x", x}});
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const Tensor<S> tx = data_of<S>(x);
    return result<S>("gelu", ops::gelu<S, Tune>(tx), device, {x}, [ix = x.shared(), tx](VarImpl& out) {
      bool fresh = false;
      Tensor<S>& gx = grad_to_write<S>(*ix, fresh);
      ops::gelu_backward<S, Tune>(gx, tx, out_grad<S>(out), !fresh);
    });
  });
}

Var embedding(const Ids& ids, const Var& table) {
  const Device device = check_args("embedding", {{"table", table}});
  check_ids_device("embedding", "ids", ids, device);
  return on_device(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const auto idv = ids_view<S>(ids);
    check_ids_range("embedding", "token id", "position", ids, table.shape()[0], table.shape()[0], "table", table.shape());
    Tensor<S> y = ops::embedding(idv, data_of<S>(table), ids.shape(), ops::IdsChecked::yes);
    const ConstIndexVector<S> order = ids.impl().order.get<S>();
    return result<S>("embedding", y, device, {table}, [it = table.shared(), idv, order](VarImpl& out) {
      ops::embedding_backward(grad_of<S>(*it), out_grad<S>(out), idv, ops::IdsChecked::yes, order);
    });
  });
}

Var cross_entropy(const Var& logits, const Ids& targets, int ignore_index) {
  const Device device = check_args("cross_entropy", {{"logits", logits}});
  check_ids_device("cross_entropy", "targets", targets, device);
  return on_device(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const Tensor<S> tl = data_of<S>(logits);
    const auto tv = ids_view<S>(targets);
    check_ids_range("cross_entropy", "target", "row", targets, logits.shape().back(), ignore_index, "logits", logits.shape());
    auto r = ops::cross_entropy(tl, tv, ignore_index, ops::IdsChecked::yes);
    return result<S>("cross_entropy", r.loss, device, {logits},
                     [il = logits.shared(), tl, tv, lse = r.lse, counted = r.counted, ignore_index](VarImpl& out) {
                       ops::cross_entropy_backward<S>(grad_of<S>(*il), out_grad<S>(out), tl, lse, tv, counted, ignore_index,
                                                      ops::IdsChecked::yes);
                     });
  });
}

Var sum_product(const Var& a, const Var& b) {
  const Device device = check_args("sum_product", {{"a", a}, {"b", b}});
  require(a.shape() == b.shape(), "sum_product: a has shape ", a.shape(), " but b has shape ",
          b.shape());
  return on_device(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const Tensor<S> ta = data_of<S>(a), tb = data_of<S>(b);
    const auto total = static_cast<float>(kernels::dot<S>(ta.flat(), tb.flat()));
    return result<S>("sum_product", Tensor<S>::from_host({1}, std::vector<float>{total}), device, {a, b},
                     [ia = a.shared(), ib = b.shared(), ta, tb](VarImpl& out) {
                       const float g = out_grad<S>(out).to_vector()[0];
                       if (ia->requires_grad) kernels::accumulate<S>(grad_of<S>(*ia).flat(), tb.flat(), g);
                       if (ib->requires_grad) kernels::accumulate<S>(grad_of<S>(*ib).flat(), ta.flat(), g);
                     });
  });
}

// GradNorm's device table: the gradient buffers cut into chunks (kernels::GradChunk), and a double
// partial sum per chunk.
template <class S>
struct GradTable {
  std::vector<kernels::GradChunk> host;
  Kokkos::View<kernels::GradChunk*, S> chunks;
  Kokkos::View<double*, S> partial;
};

GradNorm::GradNorm(std::vector<Var> params) : params_(std::move(params)) {
  require(!params_.empty(), "GradNorm: no parameters");
  for (const auto& p : params_) check_args("GradNorm", {{"param", params_.front()}, {"param", p}});
}

void GradNorm::operator()(const Var& stats, float max_norm, float inv_scale, bool skip_nonfinite) {
  require(stats.numel() >= 2, "GradNorm: stats has shape ", stats.shape(), "; it needs 2 values");
  check_args("GradNorm", {{"param", params_.front()}, {"stats", stats}});
  on_device(stats.device(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    std::vector<kernels::GradChunk> chunks;
    for (const auto& p : params_) {
      if (!p.has_grad()) continue;
      const auto& g = p.impl().grad.get<S>();
      for (std::int64_t at = 0; at < g.numel(); at += kernels::grad_chunk_size)
        chunks.push_back({g.data() + at, static_cast<int>(std::min<std::int64_t>(kernels::grad_chunk_size, g.numel() - at))});
    }
    if (!table_) table_ = std::make_shared<GradTable<S>>();
    auto& table = *std::static_pointer_cast<GradTable<S>>(table_);
    const auto same = [](const kernels::GradChunk& a, const kernels::GradChunk& b) { return a.data == b.data && a.size == b.size; };
    if (chunks.size() != table.host.size() || !std::equal(chunks.begin(), chunks.end(), table.host.begin(), same)) {
      // The first step (gradients are created by the first backward) or a change of parameters.
      table.host = chunks;
      table.chunks = allocate<Kokkos::View<kernels::GradChunk*, S>>("ptk::grad_chunks", true, chunks.size());
      table.partial = allocate<Kokkos::View<double*, S>>("ptk::grad_partials", true, chunks.size());
      Kokkos::deep_copy(table.chunks, Kokkos::View<const kernels::GradChunk*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                          chunks.data(), chunks.size()));
    }
    kernels::global_norm<S>(data_of<S>(stats).flat(), table.partial, table.chunks, max_norm, inv_scale, skip_nonfinite);
  });
}

void adamw_update(const Var& param, const Var& m, const Var& v, const AdamwStep& step, const Var& stats) {
  const Device device = check_args("adamw_update", {{"param", param}, {"m", m}, {"v", v}, {"stats", stats}});
  require(m.shape() == param.shape() && v.shape() == param.shape(), "adamw_update: param ", param.shape(),
          ", m ", m.shape(), " and v ", v.shape(), " must have one shape");
  require(stats.numel() >= 2, "adamw_update: stats has shape ", stats.shape(), "; it needs 2 values");
  require(param.has_grad(), "adamw_update: param ", param.shape(), " has no gradient (call backward first)");
  on_device(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const kernels::AdamwStep k{step.lr,           step.beta1,       step.beta2,      step.eps,
                               step.weight_decay, step.correction1, step.correction2};
    VarImpl& p = param.impl();
    const auto update = [&](const auto& copy) {  // and the parameter's Autocast copy, where it has one
      using E = typename std::decay_t<decltype(copy)>::value_type;
      kernels::adamw_update<S, E>(data_of<S>(param).flat(), data_of<S>(m).flat(), data_of<S>(v).flat(),
                                  p.grad.get<S>().flat(), k, data_of<S>(stats).flat(), copy);
    };
    if (p.cast_dtype == DType::bf16) update(p.cast.get<S>().as_bf16.flat());
    else if (p.cast_dtype == DType::f16) update(p.cast.get<S>().as_f16.flat());
    else update(Kokkos::View<float*, Kokkos::LayoutRight, S>());
  });
}

}  // namespace ptk::ag
