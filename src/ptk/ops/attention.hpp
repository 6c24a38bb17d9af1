#pragma once
// attention: O[B,H,T,D] = softmax(scale · Q Kᵀ, causal) V for Q[B,H,T,D], K and V [B,Hkv,S,D] with H a multiple
// of Hkv (query head h reads kv head h / (H/Hkv): grouped-query attention; Hkv = H is multi-head attention);
// scale defaults to 1/sqrt(D); causal needs T == S. Also returns lse[B,H,T], the natural log of each
// row's softmax denominator Σ_j exp(scale · q·k_j) over the attended keys (−inf for a row with none),
// which the backward pass uses to recompute the probabilities. Memory is O(B·H·T·D): the [T,S]
// score matrix is never stored. E (f32, bf16, f16): the element type of Q, K, V and O; the arithmetic and lse are
// fp32, O is rounded once.
// attention_backward: dQ, dK, dV += the gradients for an upstream dO, from the forward's O and lse (flash-style:
// the probabilities are rebuilt tile by tile from lse; memory O(B·H·T·D); deterministic, no atomics); a kv head's
// dK and dV sum its query heads'. Over E as the forward: every tensor but lse stored as E, each gradient rounded once.
#include <cmath>
#include <optional>

#include "ptk/kernels/attention.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

namespace detail {
// Q [B,H,T,D], K and V [B,Hkv,S,D] alike, with H a positive multiple of Hkv.
template <class Space, class E, class Shapes>
void check_grouped_heads(const char* op, const Tensor<Space, E>& q, const Tensor<Space, E>& k, const Tensor<Space, E>& v,
                         const Shapes& shapes) {
  require(k.shape() == v.shape(), op, ": K and V must have the same shape [B,Hkv,S,D], got ", shapes);
  require(q.dim(0) == k.dim(0) && q.dim(3) == k.dim(3), op,
          ": Q [B,H,T,D] and K [B,Hkv,S,D] must agree in B and D, got ", shapes);
  require(k.dim(1) > 0 && q.dim(1) % k.dim(1) == 0, op, ": Q's H heads must be a multiple of K's Hkv heads, got ",
          shapes);
}
}  // namespace detail

template <class Space, class E = float>
struct AttentionOutputs {
  Tensor<Space, E> out;
  Tensor<Space> lse;
};

template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
AttentionOutputs<Space, E> attention(const Tensor<Space, E>& q, const Tensor<Space, E>& k, const Tensor<Space, E>& v,
                                     std::optional<float> scale = std::nullopt, bool causal = false) {
  check_tensor("attention", "Q", q, 4, 4);
  check_tensor("attention", "K", k, 4, 4);
  check_tensor("attention", "V", v, 4, 4);
  const auto shapes =
      lazy([&] { return "Q " + to_string(q.shape()) + ", K " + to_string(k.shape()) + ", V " + to_string(v.shape()); });
  detail::check_grouped_heads("attention", q, k, v, shapes);
  const auto B = q.dim(0), H = q.dim(1), T = q.dim(2), D = q.dim(3);
  require(!causal || T == k.dim(2), "attention: causal needs T == S, got ", shapes);
  AttentionOutputs<Space, E> r{Tensor<Space, E>::uninitialized(q.shape(), "ptk::attention"),
                               Tensor<Space>::uninitialized({B, H, T}, "ptk::attention_lse")};
  const auto heads = [&](const Tensor<Space, E>& t) {
    return Tensor3Of<Space, E>(t.data(), B * t.dim(1), t.dim(2), t.dim(3));
  };
  kernels::attention_forward<Space, Tune, E>(heads(r.out), Matrix<Space>(r.lse.data(), B * H, T), heads(q), heads(k), heads(v),
                                    scale.value_or(1.0f / std::sqrt(static_cast<float>(D))), causal);
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
  const auto shapes =
      lazy([&] { return "Q " + to_string(q.shape()) + ", K " + to_string(k.shape()) + ", V " + to_string(v.shape()); });
  detail::check_grouped_heads(op, q, k, v, shapes);
  const auto B = q.dim(0), H = q.dim(1), T = q.dim(2), D = q.dim(3);
  require(!causal || T == k.dim(2), op, ": causal needs T == S, got ", shapes);
  require(dout.shape() == q.shape(), op, ": dO has shape ", dout.shape(), " but Q has shape ",
          q.shape());
  require(out.shape() == q.shape(), op, ": O has shape ", out.shape(), " but Q has shape ",
          q.shape());
  require(lse.shape() == Shape{B, H, T}, op, ": lse has shape ", lse.shape(), ", expected [B,H,T] = ",
          Shape{B, H, T});
  const auto grad = [&](const char* name, const Tensor<Space, E>& g, const Tensor<Space, E>& like) {
    if (!g.defined()) return Tensor3Of<Space, E>();
    require(g.shape() == like.shape(), op, ": ", name, " has shape ", g.shape(), ", expected ",
            like.shape());
    return Tensor3Of<Space, E>(g.data(), B * g.dim(1), g.dim(2), g.dim(3));
  };
  const auto gq = grad("dQ", dq, q), gk = grad("dK", dk, k), gv = grad("dV", dv, v);
  const auto heads = [&](const Tensor<Space, E>& t) {
    return ConstTensor3Of<Space, E>(t.data(), B * t.dim(1), t.dim(2), t.dim(3));
  };
  kernels::attention_backward<Space, Tune, E>(gq, gk, gv, heads(dout), heads(q), heads(k), heads(v), heads(out),
                                     ConstMatrix<Space>(lse.data(), B * H, T),
                                     scale.value_or(1.0f / std::sqrt(static_cast<float>(D))), causal);
}

}  // namespace ptk::ops
