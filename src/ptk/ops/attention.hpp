#pragma once
// attention: O[B,H,T,D] = softmax(scale · Q Kᵀ, causal) V for Q[B,H,T,D], K and V [B,Hkv,S,D] with H a multiple
// of Hkv (query head h reads kv head h / (H/Hkv): grouped-query attention; Hkv = H is multi-head attention);
// scale defaults to 1/sqrt(D); causal needs T == S. Also returns lse[B,H,T], the natural log of each
// row's softmax denominator Σ_j exp(scale · q·k_j) over the attended keys (−inf for a row with none),
// which the backward pass uses to recompute the probabilities. Memory is O(B·H·T·D): the [T,S]
// score matrix is never stored. E (f32, bf16, f16): the element type of Q and O, EKV that of K and V (E, or bf16 or
// f16 under f32 queries: a 16-bit KV cache read as it is stored); the arithmetic and lse are fp32, O is rounded once.
// attention_backward: dQ, dK, dV += the gradients for an upstream dO, from the forward's O and lse (flash-style:
// the probabilities are rebuilt tile by tile from lse; memory O(B·H·T·D); deterministic, no atomics); a kv head's
// dK and dV sum its query heads'. Over E as the forward: every tensor but lse stored as E, each gradient rounded once.
// detail::attention_heads and detail::attention_backward_heads take heads views (kernels/heads.hpp) instead: a
// projection's rows read, and the output's and the gradients' rows written, in place (the autograd's attention;
// its gradients may be written rather than added to: accumulate false).
#include <climits>
#include <cmath>
#include <optional>
#include <type_traits>

#include "ptk/kernels/attention.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

namespace detail {
template <class Space, class E>
Tensor4Of<Space, E> as4(const Tensor<Space, E>& t) {
  return Tensor4Of<Space, E>(t.data(), t.dim(0), t.dim(1), t.dim(2), t.dim(3));
}

template <class View>
Shape shape4(const View& x) {
  return {static_cast<std::int64_t>(x.extent(0)), static_cast<std::int64_t>(x.extent(1)),
          static_cast<std::int64_t>(x.extent(2)), static_cast<std::int64_t>(x.extent(3))};
}

// Q [B,H,T,D], K and V [B,Hkv,S,D] alike, with H a positive multiple of Hkv; causal needs T == S; each under 2^31
// elements, as the kernels count heads, rows and columns with int (a view's addresses are computed in size_t).
inline void check_grouped_heads(const char* op, const Shape& q, const Shape& k, const Shape& v, bool causal) {
  const auto shapes = lazy([&] { return "Q " + to_string(q) + ", K " + to_string(k) + ", V " + to_string(v); });
  require(k == v, op, ": K and V must have the same shape [B,Hkv,S,D], got ", shapes);
  require(q[0] == k[0] && q[3] == k[3], op, ": Q [B,H,T,D] and K [B,Hkv,S,D] must agree in B and D, got ", shapes);
  require(k[1] > 0 && q[1] % k[1] == 0, op, ": Q's H heads must be a multiple of K's Hkv heads, got ", shapes);
  require(!causal || q[2] == k[2], op, ": causal needs T == S, got ", shapes);
  require(element_count(q) <= INT_MAX && element_count(k) <= INT_MAX, op, ": ", shapes,
          " exceed 2^31 elements; ptk kernels index with 32-bit ints");
}

// A tensor whose shape follows from the others' (dO, O, lse, a gradient): `expected`, described as `what`.
inline void check_like(const char* op, const char* name, const Shape& got, const char* what, const Shape& expected) {
  require(got == expected, op, ": ", name, " has shape ", got, ", expected ", what, expected);
}

// out, lse from heads views (see the top of this file); lse [B,H,T].
template <class Space, class Tune = kernels::Tuning<Space>, class E = float, class EKV = E>
void attention_heads(const kernels::HeadsOf<Space, E>& out, const Tensor<Space>& lse,
                     const Same<kernels::ConstHeadsOf<Space, E>>& q, const Same<kernels::ConstHeadsOf<Space, EKV>>& k,
                     const Same<kernels::ConstHeadsOf<Space, EKV>>& v, std::optional<float> scale, bool causal) {
  static_assert(std::is_same_v<E, EKV> || std::is_same_v<E, float>, "K and V as Q, or 16-bit under f32 queries");
  const char* op = "attention";
  const Shape qs = shape4(q);
  check_grouped_heads(op, qs, shape4(k), shape4(v), causal);
  check_like(op, "O", shape4(out), "Q's ", qs);
  check_like(op, "lse", lse.shape(), "[B,H,T] = ", {qs[0], qs[1], qs[2]});
  kernels::attention_forward<Space, Tune, E, EKV>(out, Matrix<Space>(lse.data(), qs[0] * qs[1], qs[2]), q, k, v,
                                             scale.value_or(1.0f / std::sqrt(static_cast<float>(qs[3]))), causal);
}

// dq, dk, dv (empty views: not wanted) += the gradients, over heads views.
template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
void attention_backward_heads(const kernels::HeadsOf<Space, E>& dq, const kernels::HeadsOf<Space, E>& dk,
                              const kernels::HeadsOf<Space, E>& dv, const Same<kernels::ConstHeadsOf<Space, E>>& dout,
                              const Same<kernels::ConstHeadsOf<Space, E>>& q,
                              const Same<kernels::ConstHeadsOf<Space, E>>& k,
                              const Same<kernels::ConstHeadsOf<Space, E>>& v,
                              const Same<kernels::ConstHeadsOf<Space, E>>& out, const Tensor<Space>& lse,
                              std::optional<float> scale, bool causal, bool accumulate = true) {
  const char* op = "attention_backward";
  const Shape qs = shape4(q), ks = shape4(k);
  check_grouped_heads(op, qs, ks, shape4(v), causal);
  check_like(op, "dO", shape4(dout), "Q's ", qs);
  check_like(op, "O", shape4(out), "Q's ", qs);
  check_like(op, "lse", lse.shape(), "[B,H,T] = ", {qs[0], qs[1], qs[2]});
  if (dq.data()) check_like(op, "dQ", shape4(dq), "", qs);
  if (dk.data()) check_like(op, "dK", shape4(dk), "", ks);
  if (dv.data()) check_like(op, "dV", shape4(dv), "", ks);
  kernels::attention_backward<Space, Tune, E>(dq, dk, dv, dout, q, k, v, out,
                                              ConstMatrix<Space>(lse.data(), qs[0] * qs[1], qs[2]),
                                              scale.value_or(1.0f / std::sqrt(static_cast<float>(qs[3]))), causal,
                                              accumulate);
}
}  // namespace detail

template <class Space, class E = float>
struct AttentionOutputs {
  Tensor<Space, E> out;
  Tensor<Space> lse;
};

template <class Space, class Tune = kernels::Tuning<Space>, class E = float, class EKV = E>
AttentionOutputs<Space, E> attention(const Tensor<Space, E>& q, const Tensor<Space, EKV>& k,
                                     const Tensor<Space, EKV>& v, std::optional<float> scale = std::nullopt,
                                     bool causal = false) {
  check_tensor("attention", "Q", q, 4, 4);
  check_tensor("attention", "K", k, 4, 4);
  check_tensor("attention", "V", v, 4, 4);
  detail::check_grouped_heads("attention", q.shape(), k.shape(), v.shape(), causal);
  AttentionOutputs<Space, E> r{Tensor<Space, E>::uninitialized(q.shape(), "ptk::attention"),
                               Tensor<Space>::uninitialized({q.dim(0), q.dim(1), q.dim(2)}, "ptk::attention_lse")};
  using kernels::heads_of, detail::as4;
  detail::attention_heads<Space, Tune, E, EKV>(heads_of(as4(r.out)), r.lse, heads_of(as4(q)), heads_of(as4(k)),
                                               heads_of(as4(v)), scale, causal);
  return r;
}

// dq, dk, dv (shaped as Q, K, V; any may be undefined: not wanted) += the gradients of attention(q, k, v, scale,
// causal) for the upstream gradient dout (shaped as Q), given its out and lse. A row with lse = −inf (nothing
// attended) contributes nothing.
template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
void attention_backward(const Tensor<Space, E>& dq, const Tensor<Space, E>& dk, const Tensor<Space, E>& dv,
                        const Tensor<Space, E>& dout, const Tensor<Space, E>& q, const Tensor<Space, E>& k,
                        const Tensor<Space, E>& v, const Tensor<Space, E>& out, const Tensor<Space>& lse,
                        std::optional<float> scale = std::nullopt, bool causal = false) {
  const char* op = "attention_backward";
  check_tensor(op, "Q", q, 4, 4);
  check_tensor(op, "K", k, 4, 4);
  check_tensor(op, "V", v, 4, 4);
  check_tensor(op, "dO", dout, 4, 4);
  check_tensor(op, "O", out, 4, 4);
  check_tensor(op, "lse", lse, 3, 3);
  const auto grad = [&](const char* name, const Tensor<Space, E>& g, const Tensor<Space, E>& like) {
    if (!g.defined()) return kernels::HeadsOf<Space, E>();
    check_tensor(op, name, g, 4, 4);
    detail::check_like(op, name, g.shape(), "", like.shape());
    return kernels::heads_of(detail::as4(g));
  };
  const auto gq = grad("dQ", dq, q), gk = grad("dK", dk, k), gv = grad("dV", dv, v);
  using kernels::heads_of, detail::as4;
  detail::attention_backward_heads<Space, Tune, E>(gq, gk, gv, heads_of(as4(dout)), heads_of(as4(q)), heads_of(as4(k)),
                                                   heads_of(as4(v)), heads_of(as4(out)), lse, scale, causal);
}

}  // namespace ptk::ops
