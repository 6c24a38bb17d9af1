// Shapes: params by GPT-2 name (see ptk/nn/decoder.hpp), idx and targets [B, T] -> loss, and d loss / d param for every
//         parameter (same names and shapes).
// Math:   the GPT-2 forward (embeddings, L pre-layernorm blocks of causal attention and a gelu MLP, ln_f, logits
//         against wte) and its backward, composed from the oracle's ops in double; the model's kernels play no part.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ptk/reference/attention_backward.hpp"
#include "ptk/reference/cross_entropy.hpp"
#include "ptk/reference/embedding.hpp"
#include "ptk/reference/gelu.hpp"
#include "ptk/reference/layernorm.hpp"
#include "ptk/reference/layernorm_backward.hpp"
#include "ptk/reference/matmul.hpp"
#include "ptk/reference/matmul_backward.hpp"
#include "ptk/reference/activations_backward.hpp"

namespace ptk {
namespace reference {

struct GptShape {
    std::int64_t n_layer, n_head, n_embd, block_size, vocab_size;
};

using Params = std::map<std::string, std::vector<double>>;

struct GptStep {
    double loss = 0.0;
    std::vector<double> logits;  // [B, T, V]
    Params grads;
};

namespace gpt_detail {
using Vec = std::vector<double>;

inline Vec zeros(std::int64_t n) { return Vec(static_cast<std::size_t>(n), 0.0); }

// y[N, out] = x[N, in] · w[out, in]ᵀ + b[out] (b may be empty).
inline Vec linear(const Vec& x, const Vec& w, const Vec* b, std::int64_t N, std::int64_t in, std::int64_t out) {
    Vec y = zeros(N * out);
    matmul_forward(y.data(), x.data(), w.data(), 1, N, out, in, false, true, true, true);
    if (b)
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t o = 0; o < out; ++o) y[static_cast<std::size_t>(n * out + o)] += (*b)[static_cast<std::size_t>(o)];
    return y;
}

// dx += dy · w, dw += dyᵀ · x, db += Σ_n dy.
inline void linear_backward(Vec& dx, Vec& dw, Vec* db, const Vec& dy, const Vec& x, const Vec& w, std::int64_t N,
                            std::int64_t in, std::int64_t out) {
    matmul_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), 1, N, out, in, false, true, true, true);
    if (db)
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t o = 0; o < out; ++o) (*db)[static_cast<std::size_t>(o)] += dy[static_cast<std::size_t>(n * out + o)];
}

// rows[B, T, W] at column offset <-> heads[B, H, T, D].
inline void to_heads(Vec& heads, const Vec& rows, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t D,
                     std::int64_t W, std::int64_t offset) {
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t t = 0; t < T; ++t)
                for (std::int64_t d = 0; d < D; ++d)
                    heads[static_cast<std::size_t>(((b * H + h) * T + t) * D + d)] =
                        rows[static_cast<std::size_t>((b * T + t) * W + offset + h * D + d)];
}
inline void add_rows(Vec& rows, const Vec& heads, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t D,
                     std::int64_t W, std::int64_t offset) {
    for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t t = 0; t < T; ++t)
                for (std::int64_t d = 0; d < D; ++d)
                    rows[static_cast<std::size_t>((b * T + t) * W + offset + h * D + d)] +=
                        heads[static_cast<std::size_t>(((b * H + h) * T + t) * D + d)];
}

struct BlockActivations {
    Vec x_in, ln1, mean1, rstd1, qkv, q, k, v, att, lse, a, x_mid, ln2, mean2, rstd2, fc, g;
};
}  // namespace gpt_detail

inline GptStep gpt_step(const GptShape& s, const Params& p, const std::vector<int>& idx, const std::vector<int>& targets,
                        std::int64_t B, std::int64_t T) {
    using namespace gpt_detail;
    const std::int64_t C = s.n_embd, V = s.vocab_size, H = s.n_head, D = C / H, N = B * T, L = s.n_layer;
    const float eps = 1e-5f;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
    const auto P = [&](const std::string& name) -> const Vec& { return p.at(name); };
    std::vector<int> pos(static_cast<std::size_t>(N));
    for (std::int64_t n = 0; n < N; ++n) pos[static_cast<std::size_t>(n)] = static_cast<int>(n % T);

    // Forward, keeping what the backward needs.
    Vec x = zeros(N * C), tmp = zeros(N * C);
    embedding_forward(x.data(), idx.data(), P("wte.weight").data(), N, C);
    embedding_forward(tmp.data(), pos.data(), P("wpe.weight").data(), N, C);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];
    std::vector<BlockActivations> acts(static_cast<std::size_t>(L));
    for (std::int64_t l = 0; l < L; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        auto& A = acts[static_cast<std::size_t>(l)];
        A.x_in = x;
        A.ln1 = zeros(N * C), A.mean1 = zeros(N), A.rstd1 = zeros(N);
        layernorm_forward(A.ln1.data(), A.mean1.data(), A.rstd1.data(), x.data(), P(h + "ln_1.weight").data(),
                          P(h + "ln_1.bias").data(), N, C, eps);
        A.qkv = linear(A.ln1, P(h + "attn.c_attn.weight"), &P(h + "attn.c_attn.bias"), N, C, 3 * C);
        A.q = zeros(N * C), A.k = zeros(N * C), A.v = zeros(N * C);
        to_heads(A.q, A.qkv, B, T, H, D, 3 * C, 0);
        to_heads(A.k, A.qkv, B, T, H, D, 3 * C, C);
        to_heads(A.v, A.qkv, B, T, H, D, 3 * C, 2 * C);
        A.att = zeros(N * C), A.lse = zeros(B * H * T);
        attention_forward_lse(A.att.data(), A.lse.data(), A.q.data(), A.k.data(), A.v.data(), B, H, T, T, D, scale, true);
        A.a = zeros(N * C);
        add_rows(A.a, A.att, B, T, H, D, C, 0);
        const Vec proj = linear(A.a, P(h + "attn.c_proj.weight"), &P(h + "attn.c_proj.bias"), N, C, C);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
        A.x_mid = x;
        A.ln2 = zeros(N * C), A.mean2 = zeros(N), A.rstd2 = zeros(N);
        layernorm_forward(A.ln2.data(), A.mean2.data(), A.rstd2.data(), x.data(), P(h + "ln_2.weight").data(),
                          P(h + "ln_2.bias").data(), N, C, eps);
        A.fc = linear(A.ln2, P(h + "mlp.c_fc.weight"), &P(h + "mlp.c_fc.bias"), N, C, 4 * C);
        A.g = zeros(N * 4 * C);
        gelu_forward(A.g.data(), A.fc.data(), N * 4 * C);
        const Vec mlp = linear(A.g, P(h + "mlp.c_proj.weight"), &P(h + "mlp.c_proj.bias"), N, 4 * C, C);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] += mlp[i];
    }
    Vec xf = zeros(N * C), meanf = zeros(N), rstdf = zeros(N);
    layernorm_forward(xf.data(), meanf.data(), rstdf.data(), x.data(), P("ln_f.weight").data(), P("ln_f.bias").data(), N,
                      C, eps);
    const Vec logits = linear(xf, P("wte.weight"), nullptr, N, C, V);
    GptStep r;
    r.logits = logits;
    cross_entropy_forward(&r.loss, static_cast<double*>(nullptr), static_cast<double*>(nullptr), logits.data(),
                          targets.data(), N, V, -100);

    // Backward.
    for (const auto& kv : p) r.grads[kv.first] = zeros(static_cast<std::int64_t>(kv.second.size()));
    const auto G = [&](const std::string& name) -> Vec& { return r.grads.at(name); };
    Vec dlogits = zeros(N * V);
    cross_entropy_backward(dlogits.data(), 1.0, logits.data(), targets.data(), N, V, -100);
    Vec dxf = zeros(N * C);
    linear_backward(dxf, G("wte.weight"), nullptr, dlogits, xf, P("wte.weight"), N, C, V);
    Vec dx = zeros(N * C);
    layernorm_backward(dx.data(), G("ln_f.weight").data(), G("ln_f.bias").data(), dxf.data(), x.data(),
                       P("ln_f.weight").data(), meanf.data(), rstdf.data(), N, C);
    for (std::int64_t l = L - 1; l >= 0; --l) {
        const std::string h = "h." + std::to_string(l) + ".";
        const auto& A = acts[static_cast<std::size_t>(l)];
        // x_out = x_mid + mlp(x_mid): dx flows to x_mid directly and through the MLP.
        Vec dg = zeros(N * 4 * C), dfc = zeros(N * 4 * C), dln2 = zeros(N * C);
        linear_backward(dg, G(h + "mlp.c_proj.weight"), &G(h + "mlp.c_proj.bias"), dx, A.g, P(h + "mlp.c_proj.weight"), N,
                        4 * C, C);
        gelu_backward(dfc.data(), A.fc.data(), dg.data(), N * 4 * C);
        linear_backward(dln2, G(h + "mlp.c_fc.weight"), &G(h + "mlp.c_fc.bias"), dfc, A.ln2, P(h + "mlp.c_fc.weight"), N, C,
                        4 * C);
        layernorm_backward(dx.data(), G(h + "ln_2.weight").data(), G(h + "ln_2.bias").data(), dln2.data(), A.x_mid.data(),
                           P(h + "ln_2.weight").data(), A.mean2.data(), A.rstd2.data(), N, C);
        // x_mid = x_in + attn(x_in).
        Vec da = zeros(N * C), datt = zeros(N * C);
        linear_backward(da, G(h + "attn.c_proj.weight"), &G(h + "attn.c_proj.bias"), dx, A.a, P(h + "attn.c_proj.weight"),
                        N, C, C);
        to_heads(datt, da, B, T, H, D, C, 0);
        Vec dq = zeros(N * C), dk = zeros(N * C), dv = zeros(N * C), dqkv = zeros(N * 3 * C), dln1 = zeros(N * C);
        attention_backward(dq.data(), dk.data(), dv.data(), datt.data(), A.q.data(), A.k.data(), A.v.data(), A.lse.data(),
                           B, H, T, T, D, scale, true);
        add_rows(dqkv, dq, B, T, H, D, 3 * C, 0);
        add_rows(dqkv, dk, B, T, H, D, 3 * C, C);
        add_rows(dqkv, dv, B, T, H, D, 3 * C, 2 * C);
        linear_backward(dln1, G(h + "attn.c_attn.weight"), &G(h + "attn.c_attn.bias"), dqkv, A.ln1,
                        P(h + "attn.c_attn.weight"), N, C, 3 * C);
        layernorm_backward(dx.data(), G(h + "ln_1.weight").data(), G(h + "ln_1.bias").data(), dln1.data(), A.x_in.data(),
                           P(h + "ln_1.weight").data(), A.mean1.data(), A.rstd1.data(), N, C);
    }
    embedding_backward(G("wte.weight").data(), dx.data(), idx.data(), N, V, C);
    embedding_backward(G("wpe.weight").data(), dx.data(), pos.data(), N, s.block_size, C);
    return r;
}

}  // namespace reference
}  // namespace ptk
