// The one attention autograd op, for every architecture: causal, grouped-query, over the heads of q, k and v
// columns that may share one rows tensor (GPT-2's fused qkv) or not (Llama's projections).
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

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

// The `count` heads of D from column `offset` of rows [B, T, W]: what the kernels read and write, in place (no split
// or merge copies).
template <class S>
kernels::Heads<S> heads_in(const Tensor<S>& rows, int offset, int count, int D) {
  return kernels::heads_of<S>(rows.data(), static_cast<int>(rows.dim(0)), static_cast<int>(rows.dim(1)),
                              static_cast<int>(rows.dim(2)), offset, count, D);
}

// Whether the column runs [offsets[i], offsets[i] + counts[i] · D) of the inputs i that are `t` tile its W columns
// exactly (no gap, no overlap): only then do the kernels write every element of t's gradient, once.
bool tiles_columns(const std::array<std::shared_ptr<VarImpl>, 3>& in, const int (&offsets)[3], const int (&counts)[3],
                   int D, const VarImpl* t, std::int64_t W) {
  std::array<std::pair<std::int64_t, std::int64_t>, 3> runs;
  int n = 0;
  for (int i = 0; i < 3; ++i)
    if (in[i].get() == t) runs[n++] = {offsets[i], offsets[i] + static_cast<std::int64_t>(counts[i]) * D};
  std::sort(runs.begin(), runs.begin() + n);
  std::int64_t end = 0;
  for (int r = 0; r < n; ++r) {
    if (runs[r].first != end) return false;
    end = runs[r].second;
  }
  return end == W;
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
    auto y = Tensor<S>::uninitialized({B, T, static_cast<std::int64_t>(H) * D}, "ptk::attention_rows");
    auto lse = Tensor<S>::uninitialized({B, H, T}, "ptk::attention_lse");
    ops::detail::attention_heads<S, Tune>(heads_in(y, 0, H, D), lse, heads_in(data_of<S>(q.rows), q.offset, H, D),
                                          heads_in(data_of<S>(k.rows), k.offset, Hkv, D),
                                          heads_in(data_of<S>(v.rows), v.offset, Hkv, D), std::nullopt, true);
    const int offsets[3] = {q.offset, k.offset, v.offset}, counts[3] = {H, Hkv, Hkv};
    return result<S>(op, y, device, {q.rows, k.rows, v.rows},
                     [in = std::array{q.rows.shared(), k.rows.shared(), v.rows.shared()}, offsets, counts, D, y,
                      lse](VarImpl& out) {
                       // Each input's gradient goes into its own columns (q, k and v may be one tensor): written
                       // where every wanted one is new (grad_to_write), else added, a new one zero-filled first.
                       kernels::Heads<S> d[3], x[3];
                       bool fresh[3] = {false, false, false}, all_fresh = true;
                       int first[3];  // the first of q, k, v that is the same tensor as this one
                       for (int i = 0; i < 3; ++i) {
                         x[i] = heads_in(in[i]->data.template get<S>(), offsets[i], counts[i], D);
                         first[i] = i;
                         for (int j = i - 1; j >= 0; --j)
                           if (in[j] == in[i]) first[i] = j;
                         if (!in[i]->requires_grad) continue;
                         Tensor<S>& g =
                             first[i] == i ? grad_to_write<S>(*in[i], fresh[i]) : in[i]->grad.template get<S>();
                         fresh[i] = fresh[first[i]];
                         all_fresh = all_fresh && fresh[i] &&
                                     tiles_columns(in, offsets, counts, D, in[i].get(), in[i]->shape.back());
                         d[i] = heads_in(g, offsets[i], counts[i], D);
                       }
                       if (!all_fresh)
                         for (int i = 0; i < 3; ++i)
                           if (fresh[i] && first[i] == i) fill<S>(in[i]->grad.template get<S>().storage(), 0.0f);
                       ops::detail::attention_backward_heads<S, Tune>(d[0], d[1], d[2],
                                                                      heads_in(out_grad<S>(out), 0, counts[0], D),
                                                                      x[0], x[1], x[2], heads_in(y, 0, counts[0], D),
                                                                      lse, std::nullopt, true, !all_fresh);
                     });
  });
}

}  // namespace ptk::ag
