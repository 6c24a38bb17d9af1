// Shapes: params by Llama name (see ptk/nn/decoder.hpp), idx and targets [B, T] -> logits [B, T, V], loss, and
//         d loss / d param for every parameter (same names and shapes).
// Math:   the Llama forward (embedding, L pre-rmsnorm blocks of rope + grouped-query causal attention and a
//         silu-gated MLP, a final rmsnorm, an untied head) and its backward, composed from the oracle's ops in
//         double; a kv head's keys and values are copied to each query head of its group, and the copies'
//         gradients summed back. The model's kernels play no part.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ptk/reference/gpt.hpp"
#include "ptk/reference/rmsnorm.hpp"
#include "ptk/reference/rmsnorm_backward.hpp"
#include "ptk/reference/rope.hpp"
#include "ptk/reference/silu.hpp"

namespace ptk {
namespace reference {

struct LlamaShape {
    std::int64_t n_layer, n_head, n_kv_head, n_embd, ffn_hidden, vocab_size;
    double rope_base;
    float norm_eps;
};

struct LlamaStep {
    std::vector<double> logits;
    double loss = 0.0;
    Params grads;
};

namespace llama_detail {
using gpt_detail::Vec;
using gpt_detail::zeros;

// rows[B, T, Hr·D] <-> heads[B, H, T, D], head h reading row head h / G (G = H / Hr); add_rows sums a group.
inline void to_heads(Vec& heads, const Vec& rows, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t D,
                     std::int64_t G) {
    const std::int64_t W = H / G * D;
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t t = 0; t < T; ++t)
                for (std::int64_t d = 0; d < D; ++d)
                    heads[static_cast<std::size_t>(((b * H + h) * T + t) * D + d)] =
                        rows[static_cast<std::size_t>((b * T + t) * W + (h / G) * D + d)];
}
inline void add_rows(Vec& rows, const Vec& heads, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t D,
                     std::int64_t G) {
    const std::int64_t W = H / G * D;
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t t = 0; t < T; ++t)
                for (std::int64_t d = 0; d < D; ++d)
                    rows[static_cast<std::size_t>((b * T + t) * W + (h / G) * D + d)] +=
                        heads[static_cast<std::size_t>(((b * H + h) * T + t) * D + d)];
}

inline void add_into(Vec& x, const Vec& y) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

struct BlockActivations {
    Vec x_in, n1, rstd1, q, k, v, qr, kr, qh, kh, vh, att, lse, a, x_mid, n2, rstd2, gate, up, sg, prod;
};
}  // namespace llama_detail

inline LlamaStep llama_step(const LlamaShape& s, const Params& p, const std::vector<int>& idx,
                            const std::vector<int>& targets, std::int64_t B, std::int64_t T) {
    using namespace llama_detail;
    using gpt_detail::linear;
    using gpt_detail::linear_backward;
    const std::int64_t C = s.n_embd, V = s.vocab_size, H = s.n_head, Hkv = s.n_kv_head, D = C / H, G = H / Hkv;
    const std::int64_t KV = Hkv * D, F = s.ffn_hidden, N = B * T, L = s.n_layer;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
    const auto P = [&](const std::string& name) -> const Vec& { return p.at(name); };

    Vec x = zeros(N * C);
    embedding_forward(x.data(), idx.data(), P("model.embed_tokens.weight").data(), N, C);
    std::vector<BlockActivations> acts(static_cast<std::size_t>(L));
    for (std::int64_t l = 0; l < L; ++l) {
        const std::string h = "model.layers." + std::to_string(l) + ".";
        auto& A = acts[static_cast<std::size_t>(l)];
        A.x_in = x;
        A.n1 = zeros(N * C), A.rstd1 = zeros(N);
        rmsnorm_forward(A.n1.data(), A.rstd1.data(), x.data(), P(h + "input_layernorm.weight").data(), N, C, s.norm_eps);
        A.q = linear(A.n1, P(h + "self_attn.q_proj.weight"), nullptr, N, C, C);
        A.k = linear(A.n1, P(h + "self_attn.k_proj.weight"), nullptr, N, C, KV);
        A.v = linear(A.n1, P(h + "self_attn.v_proj.weight"), nullptr, N, C, KV);
        A.qr = zeros(N * C), A.kr = zeros(N * KV);
        rope_forward(A.qr.data(), A.q.data(), B, T, H, D, s.rope_base, 0);
        rope_forward(A.kr.data(), A.k.data(), B, T, Hkv, D, s.rope_base, 0);
        A.qh = zeros(N * C), A.kh = zeros(N * C), A.vh = zeros(N * C);
        to_heads(A.qh, A.qr, B, T, H, D, 1);
        to_heads(A.kh, A.kr, B, T, H, D, G);
        to_heads(A.vh, A.v, B, T, H, D, G);
        A.att = zeros(N * C), A.lse = zeros(B * H * T);
        attention_forward_lse(A.att.data(), A.lse.data(), A.qh.data(), A.kh.data(), A.vh.data(), B, H, T, T, D, scale, true);
        A.a = zeros(N * C);
        add_rows(A.a, A.att, B, T, H, D, 1);
        add_into(x, linear(A.a, P(h + "self_attn.o_proj.weight"), nullptr, N, C, C));
        A.x_mid = x;
        A.n2 = zeros(N * C), A.rstd2 = zeros(N);
        rmsnorm_forward(A.n2.data(), A.rstd2.data(), x.data(), P(h + "post_attention_layernorm.weight").data(), N, C,
                        s.norm_eps);
        A.gate = linear(A.n2, P(h + "mlp.gate_proj.weight"), nullptr, N, C, F);
        A.up = linear(A.n2, P(h + "mlp.up_proj.weight"), nullptr, N, C, F);
        A.sg = zeros(N * F), A.prod = zeros(N * F);
        silu_forward(A.sg.data(), A.gate.data(), N * F);
        for (std::size_t i = 0; i < A.prod.size(); ++i) A.prod[i] = A.sg[i] * A.up[i];
        add_into(x, linear(A.prod, P(h + "mlp.down_proj.weight"), nullptr, N, F, C));
    }
    Vec xf = zeros(N * C), rstdf = zeros(N);
    rmsnorm_forward(xf.data(), rstdf.data(), x.data(), P("model.norm.weight").data(), N, C, s.norm_eps);
    LlamaStep r;
    r.logits = linear(xf, P("lm_head.weight"), nullptr, N, C, V);
    cross_entropy_forward(&r.loss, static_cast<double*>(nullptr), static_cast<double*>(nullptr), r.logits.data(),
                          targets.data(), N, V, -100);

    // Backward.
    for (const auto& kv : p) r.grads[kv.first] = zeros(static_cast<std::int64_t>(kv.second.size()));
    const auto G_ = [&](const std::string& name) -> Vec& { return r.grads.at(name); };
    Vec dlogits = zeros(N * V);
    cross_entropy_backward(dlogits.data(), 1.0, r.logits.data(), targets.data(), N, V, -100);
    Vec dxf = zeros(N * C), dx = zeros(N * C);
    linear_backward(dxf, G_("lm_head.weight"), nullptr, dlogits, xf, P("lm_head.weight"), N, C, V);
    rmsnorm_backward(dx.data(), G_("model.norm.weight").data(), dxf.data(), x.data(), P("model.norm.weight").data(),
                     rstdf.data(), N, C);
    for (std::int64_t l = L - 1; l >= 0; --l) {
        const std::string h = "model.layers." + std::to_string(l) + ".";
        const auto& A = acts[static_cast<std::size_t>(l)];
        // x_out = x_mid + down(silu(gate(n2)) ∘ up(n2)).
        Vec dprod = zeros(N * F), dgate = zeros(N * F), dup = zeros(N * F), dsg = zeros(N * F), dn2 = zeros(N * C);
        linear_backward(dprod, G_(h + "mlp.down_proj.weight"), nullptr, dx, A.prod, P(h + "mlp.down_proj.weight"), N, F, C);
        for (std::size_t i = 0; i < dprod.size(); ++i) dsg[i] = dprod[i] * A.up[i], dup[i] = dprod[i] * A.sg[i];
        silu_backward(dgate.data(), A.gate.data(), dsg.data(), N * F);
        linear_backward(dn2, G_(h + "mlp.gate_proj.weight"), nullptr, dgate, A.n2, P(h + "mlp.gate_proj.weight"), N, C, F);
        linear_backward(dn2, G_(h + "mlp.up_proj.weight"), nullptr, dup, A.n2, P(h + "mlp.up_proj.weight"), N, C, F);
        rmsnorm_backward(dx.data(), G_(h + "post_attention_layernorm.weight").data(), dn2.data(), A.x_mid.data(),
                         P(h + "post_attention_layernorm.weight").data(), A.rstd2.data(), N, C);
        // x_mid = x_in + o(attention(rope(q(n1)), rope(k(n1)), v(n1))).
        Vec da = zeros(N * C), datt = zeros(N * C);
        linear_backward(da, G_(h + "self_attn.o_proj.weight"), nullptr, dx, A.a, P(h + "self_attn.o_proj.weight"), N, C, C);
        to_heads(datt, da, B, T, H, D, 1);
        Vec dqh = zeros(N * C), dkh = zeros(N * C), dvh = zeros(N * C);
        attention_backward(dqh.data(), dkh.data(), dvh.data(), datt.data(), A.qh.data(), A.kh.data(), A.vh.data(),
                           A.lse.data(), B, H, T, T, D, scale, true);
        Vec dqr = zeros(N * C), dkr = zeros(N * KV), dv = zeros(N * KV), dq = zeros(N * C), dk = zeros(N * KV);
        add_rows(dqr, dqh, B, T, H, D, 1);
        add_rows(dkr, dkh, B, T, H, D, G);
        add_rows(dv, dvh, B, T, H, D, G);
        rope_backward(dq.data(), dqr.data(), B, T, H, D, s.rope_base, 0);
        rope_backward(dk.data(), dkr.data(), B, T, Hkv, D, s.rope_base, 0);
        Vec dn1 = zeros(N * C);
        linear_backward(dn1, G_(h + "self_attn.q_proj.weight"), nullptr, dq, A.n1, P(h + "self_attn.q_proj.weight"), N, C, C);
        linear_backward(dn1, G_(h + "self_attn.k_proj.weight"), nullptr, dk, A.n1, P(h + "self_attn.k_proj.weight"), N, C, KV);
        linear_backward(dn1, G_(h + "self_attn.v_proj.weight"), nullptr, dv, A.n1, P(h + "self_attn.v_proj.weight"), N, C, KV);
        rmsnorm_backward(dx.data(), G_(h + "input_layernorm.weight").data(), dn1.data(), A.x_in.data(),
                         P(h + "input_layernorm.weight").data(), A.rstd1.data(), N, C);
    }
    embedding_backward(G_("model.embed_tokens.weight").data(), dx.data(), idx.data(), N, V, C);
    return r;
}

}  // namespace reference
}  // namespace ptk
