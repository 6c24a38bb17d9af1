// The one attention autograd op, for every architecture: causal, grouped-query, over the heads of q, k and v
// columns that may share one rows tensor (GPT-2's fused qkv) or not (Llama's projections).
#include <array>
#include <optional>

#include "ptk/autograd/functions.hpp"
#include "ptk/autograd/op_support.hpp"
#include "ptk/kernels/heads.hpp"
#include "ptk/ops/attention.hpp"

namespace ptk::ag {

using namespace detail;

namespace {

// x.rows [B, T, W] holds `heads` heads of `dim` from column x.offset: the error names the op, the argument and
// the shapes.
void check_columns(const char* op, const char* name, HeadColumns x, int heads, int dim, const Shape& like) {
  const Shape& s = x.rows.shape();
  require(s.size() == 3 && s[0] > 0 && s[1] > 0, op, ": ", name, " rows must be a non-empty [B, T, W], got ", s);
  require(s[0] == like[0] && s[1] == like[1], op, ": ", name, " rows ", s, " and q rows ", like,
          " must agree in B and T");
  require(x.offset >= 0 && x.offset + static_cast<std::int64_t>(heads) * dim <= s[2], op, ": ", heads, " ", name,
          " heads of ", dim, " from column ", x.offset, " do not fit ", name, " rows ", s);
}

}  // namespace

Var causal_attention(HeadColumns q, HeadColumns k, HeadColumns v, const HeadLayout& layout) {
  const char* op = "causal_attention";
  const Device device = check_args(op, {{"q", q.rows}, {"k", k.rows}, {"v", v.rows}});
  const int H = layout.heads, Hkv = layout.kv_heads, D = layout.dim;
  require(H > 0 && Hkv > 0 && D > 0 && H % Hkv == 0, op, ": ", H, " query heads must be a positive multiple of ", Hkv,
          " kv heads, of a positive dim (got ", D, ")");
  const Shape& qs = q.rows.shape();
  check_columns(op, "q", q, H, D, qs);
  check_columns(op, "k", k, Hkv, D, qs);
  check_columns(op, "v", v, Hkv, D, qs);
  const auto B = qs[0], T = qs[1];
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const auto as_rows = [](const Tensor<S>& t) { return Tensor3<S>(t.data(), t.dim(0), t.dim(1), t.dim(2)); };
    const auto as_heads = [](const Tensor<S>& t) { return Tensor4<S>(t.data(), t.dim(0), t.dim(1), t.dim(2), t.dim(3)); };
    const auto split = [&](HeadColumns x, std::int64_t heads, const char* label) {
      auto t = Tensor<S>::uninitialized({B, heads, T, D}, label);
      kernels::split_heads<S>(as_heads(t), as_rows(data_of<S>(x.rows)), x.offset);
      return t;
    };
    const Tensor<S> qh = split(q, H, "ptk::q"), kh = split(k, Hkv, "ptk::k"), vh = split(v, Hkv, "ptk::v");
    auto r = ops::attention<S, Tune>(qh, kh, vh, std::nullopt, /*causal=*/true);
    auto y = Tensor<S>::uninitialized({B, T, static_cast<std::int64_t>(H) * D}, "ptk::attention_rows");
    kernels::merge_heads<S>(as_rows(y), as_heads(r.out), 0, false);
    const int offsets[3] = {q.offset, k.offset, v.offset};
    return result<S>(op, y, device, {q.rows, k.rows, v.rows},
                     [in = std::array{q.rows.shared(), k.rows.shared(), v.rows.shared()}, offsets, qh, kh, vh,
                      o = r.out, lse = r.lse, as_rows, as_heads](VarImpl& out) {
                       auto dout = Tensor<S>::uninitialized(o.shape(), "ptk::attention_dout");
                       kernels::split_heads<S>(as_heads(dout), as_rows(out_grad<S>(out)), 0);
                       const Tensor<S>* like[3] = {&qh, &kh, &vh};
                       Tensor<S> d[3];
                       for (int i = 0; i < 3; ++i)
                         if (in[i]->requires_grad) d[i] = Tensor<S>(like[i]->shape(), "ptk::attention_grad");
                       ops::attention_backward<S, Tune>(d[0], d[1], d[2], dout, qh, kh, vh, o, lse, std::nullopt, true);
                       // Into each input's columns (q, k and v may be one tensor: each adds its own columns).
                       for (int i = 0; i < 3; ++i)
                         if (d[i].defined()) kernels::merge_heads<S>(as_rows(grad_of<S>(*in[i])), as_heads(d[i]), offsets[i], true);
                     });
  });
}

}  // namespace ptk::ag
