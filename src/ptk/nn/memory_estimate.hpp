#pragma once
// Memory needed to train the decoder (nn/decoder.hpp) in float32 with AdamW, as `ptk info --model` reports.
//
// The model (arch gpt2): token embedding wte [V, C] (tied: also the LM head), position embedding
// wpe [T, C], L blocks of {ln1 (γ, β) [C] ×2, qkv [C, 3C] + bias [3C], attention projection
// [C, C] + [C], ln2 [C] ×2, MLP fc [C, 4C] + [4C], MLP projection [4C, C] + [C]} and a final
// layernorm [C] ×2:
//     parameters P = V·C + T·C + L·(12·C² + 13·C) + 2·C
// GPT-2 small (L=12, H=12, C=768, T=1024, V=50257): P = 124,439,808.
//
// Training memory, 4 bytes per float:
//     parameters P, gradients P, AdamW moments m and v 2·P,
//     activations A kept for the backward pass at batch B and sequence T, and as much again for
//     their gradients during the backward pass (an upper bound: a backward pass may reuse them):
//     A = L·(B·T·(17·C + 4) + B·H·T) + B·T·(2·C + 3) + 2·B·T·V
// where, per block and token: ln1 out C, qkv 3C, attention out C, attention projection C,
// residual C, ln2 out C, fc 4C, gelu 4C, MLP projection C, residual C (= 17·C) and the mean and
// 1/std of both layernorms (4); per block, sequence, head and query the log-sum-exp that ptk's
// fused attention saves instead of the T×T probabilities (B·H·T); outside the blocks, per token, the embedding sum C, the final layernorm C
// with its mean and 1/std (2), the loss (1), the logits and their softmax (2·V).
//
// The model (arch llama), with D = C/H, K = kv_heads·D (kv_heads 0 means H), F = ffn_hidden (0 means the
// default 32·ceil(floor(8·C/3) / 32), as nn::mlp_hidden): embed_tokens [V, C], L blocks of {input_layernorm [C],
// q_proj [C, C], k_proj and v_proj [K, C], o_proj [C, C], post_attention_layernorm [C], gate_proj and up_proj
// [F, C], down_proj [C, F]}, norm [C] and an untied lm_head [V, C]:
//     parameters P = 2·V·C + L·(2·C² + 2·K·C + 3·F·C + 2·C) + C
// and activations, per block and token: input norm C and its 1/rms (1), q C, k K, v K, rotated q C and k K,
// attention out C, o_proj C, residual C, post-attention norm C and 1/rms (1), gate F, up F, silu F, product F,
// down_proj C, residual C (= 9·C + 3·K + 4·F + 2); the lse (B·H·T) as for gpt2; outside the blocks, per token,
// the embedding C, the final norm C and its 1/rms (1), the loss (1), the logits and their softmax (2·V):
//     A = L·(B·T·(9·C + 3·K + 4·F + 2) + B·H·T) + B·T·(2·C + 2) + 2·B·T·V
// Mixed precision (ptk train --dtype bf16|f16, ag::Autocast) adds, at 2 bytes a value: the 16-bit copy of every
// linear layer's weight (P_lin: gpt2 L·12·C² + V·C, the tied head; llama L·(2·C² + 2·K·C + 3·F·C) + V·C), and the
// 16-bit copy of every linear layer's input, which its node keeps for dW (per token gpt2 L·7·C + C: ln1 out, attention
// out, ln2 out, gelu out and the final layernorm's; llama L·(3·C + F) + C). The f32 activations stay as counted:
// the nodes still hold the Vars they came from, so this design trades no memory for its 16-bit GEMMs yet.
// Not counted: the framework's workspace, allocator slack and the CUDA context (~0.5 GiB).
#include <cstdint>
#include <limits>

#include "ptk/core/dtype_name.hpp"
#include "ptk/nn/arch.hpp"

namespace ptk::nn {

struct ModelShape {
  std::int64_t layers = 0, heads = 0, channels = 0, context = 0, vocab = 0, batch = 1;
  Arch arch = Arch::gpt2;
  std::int64_t kv_heads = 0;    // llama: 0 = heads
  std::int64_t ffn_hidden = 0;  // llama: 0 = the default width
};

struct MemoryEstimate {
  std::int64_t parameters = 0;   // counts of floats
  std::int64_t activations = 0;
  std::int64_t parameter_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0, activation_bytes = 0,
               activation_gradient_bytes = 0;
  std::int64_t copy_bytes = 0;  // mixed precision: the 16-bit copies of the linear layers' weights and inputs
  std::int64_t total_bytes() const {
    return saturate(static_cast<double>(parameter_bytes) + gradient_bytes + optimizer_bytes + activation_bytes +
                    activation_gradient_bytes + copy_bytes);
  }

  // Every count is evaluated in double (exact below 2^53, which covers every model that fits in memory), sums and
  // differences included, and only the result saturates at the int64 maximum, so a hostile shape (--width 100000
  // --layers 100, --block 2^31 - 1, T = V = 2^32) gives "does not fit", never an overflowed, negative or wrapped
  // size. A saturated value means "more than kSaturated": ptk info prints it as "> ...", and it never fits.
  static constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();
  static constexpr std::int64_t saturate(double x) {
    return x >= 0 && x < 9.2e18 ? static_cast<std::int64_t>(x) : kSaturated;  // NaN (never made) saturates too
  }
  static constexpr bool saturated(std::int64_t x) { return x >= kSaturated; }
};

constexpr std::int64_t gpt2_parameters(const ModelShape& m) {
  const double L = m.layers, C = m.channels, T = m.context, V = m.vocab;
  return MemoryEstimate::saturate(V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C);
}

// The activations (above) of `layers` blocks with the logits of `logit_rows` positions a sequence (T in training, 1
// in a prefill, which keeps the last position's only), in double.
constexpr double gpt2_activation_count(const ModelShape& m, double layers, double logit_rows) {
  const double H = m.heads, C = m.channels, T = m.context, V = m.vocab, B = m.batch;
  return layers * (B * T * (17 * C + 4) + B * H * T) + B * T * (2 * C + 3) + 2 * B * logit_rows * V;
}

constexpr std::int64_t gpt2_activations(const ModelShape& m) {
  return MemoryEstimate::saturate(gpt2_activation_count(m, static_cast<double>(m.layers), static_cast<double>(m.context)));
}

// K = kv_heads·D and F (above), in double.
constexpr double llama_kv_width(const ModelShape& m) {
  return static_cast<double>(m.kv_heads > 0 ? m.kv_heads : m.heads) * static_cast<double>(m.channels / m.heads);
}
constexpr double llama_ffn(const ModelShape& m) {
  if (m.ffn_hidden > 0) return static_cast<double>(m.ffn_hidden);
  // floor(8·C/3) exactly where 8·C fits in int64; beyond, in double (a hostile shape: the estimate saturates anyway).
  const double two_thirds = m.channels <= std::numeric_limits<std::int64_t>::max() / 8
                                ? static_cast<double>(8 * m.channels / 3)
                                : 8.0 * static_cast<double>(m.channels) / 3;
  return 32 * static_cast<double>(static_cast<std::int64_t>((two_thirds + 31) / 32));
}

constexpr std::int64_t llama_parameters(const ModelShape& m) {
  const double L = m.layers, C = m.channels, V = m.vocab, K = llama_kv_width(m), F = llama_ffn(m);
  return MemoryEstimate::saturate(2 * V * C + L * (2 * C * C + 2 * K * C + 3 * F * C + 2 * C) + C);
}

constexpr double llama_activation_count(const ModelShape& m, double layers, double logit_rows) {
  const double H = m.heads, C = m.channels, T = m.context, V = m.vocab, B = m.batch;
  const double K = llama_kv_width(m), F = llama_ffn(m);
  return layers * (B * T * (9 * C + 3 * K + 4 * F + 2) + B * H * T) + B * T * (2 * C + 2) + 2 * B * logit_rows * V;
}

constexpr std::int64_t llama_activations(const ModelShape& m) {
  return MemoryEstimate::saturate(llama_activation_count(m, static_cast<double>(m.layers), static_cast<double>(m.context)));
}

// The values mixed precision keeps a 16-bit copy of (above): linear weights and, at batch B, linear inputs.
constexpr double mixed_precision_copies(const ModelShape& m) {
  const double L = m.layers, C = m.channels, T = m.context, V = m.vocab, B = m.batch;
  if (m.arch == Arch::llama) {
    const double K = llama_kv_width(m), F = llama_ffn(m);
    return L * (2 * C * C + 2 * K * C + 3 * F * C) + V * C + B * T * (L * (3 * C + F) + C);
  }
  return L * 12 * C * C + V * C + B * T * (L * 7 * C + C);
}

constexpr MemoryEstimate estimate_training_memory(const ModelShape& m, DType dtype = DType::f32) {
  MemoryEstimate e;
  if (dtype == DType::bf16 || dtype == DType::f16) e.copy_bytes = MemoryEstimate::saturate(2 * mixed_precision_copies(m));
  constexpr double f = sizeof(float);
  e.parameters = m.arch == Arch::llama ? llama_parameters(m) : gpt2_parameters(m);
  e.activations = m.arch == Arch::llama ? llama_activations(m) : gpt2_activations(m);
  e.parameter_bytes = MemoryEstimate::saturate(f * static_cast<double>(e.parameters));
  e.gradient_bytes = e.parameter_bytes;
  e.optimizer_bytes = MemoryEstimate::saturate(2 * f * static_cast<double>(e.parameters));
  e.activation_bytes = MemoryEstimate::saturate(f * static_cast<double>(e.activations));
  e.activation_gradient_bytes = e.activation_bytes;
  return e;
}

}  // namespace ptk::nn

namespace ptk::nn {

// Memory to generate with a KV cache (nn/inference.hpp) at batch B = m.batch and context T = m.context:
//     weights            P floats (as above, for the shape's arch);
//     KV cache           2·L·B·T·K values of the cache's type (f32; bf16 and f16 half the bytes), K = kv_heads·D
//                        (GPT-2: every head keeps its keys, K = C);
//     workspace          a full-context prefill's live tensors: without a graph each layer's are released (into
//                        the reuse cache, which hands them to the next layer) before the next layer runs, so one
//                        layer's activations and the embeddings at B·T positions, and the logits of the last
//                        position only: the activations above for L = 1 with 2·B·V in place of 2·B·T·V (an upper
//                        bound: within a layer not all of them are alive at once; a decode step needs 1/T of it).
// The weights at their stored size: the linear layers' (P_lin above: gpt2 L·12·C², its head being the f32 token
// table; llama L·(2·C² + 2·K·C + 3·F·C) + V·C) in weight_dtype (f32 4 bytes, bf16 and f16 2, q8_0 34/32, q4_0 18/32),
// every other parameter f32; plus, while the model loads (nn/model_files.hpp: converted one tensor at a time), the
// conversion buffer of its largest linear weight in weight_dtype (staging). A ptk checkpoint is read whole as f32
// before it is converted: its caller counts it with weight_dtype f32.
struct InferenceEstimate {
  std::int64_t parameter_bytes = 0, kv_cache_bytes = 0, workspace_bytes = 0, staging_bytes = 0;
  std::int64_t total_bytes() const {
    return MemoryEstimate::saturate(static_cast<double>(parameter_bytes) + kv_cache_bytes + workspace_bytes +
                                    staging_bytes);
  }
};

// Bytes a value stored as dtype takes (a q8_0 / q4_0 block of 32 values: 34 / 18 bytes).
constexpr double bytes_per_value(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4.0;
    case DType::bf16:
    case DType::f16: return 2.0;
    case DType::q8_0: return 34.0 / 32;
    case DType::q4_0: return 18.0 / 32;
  }
  return 4.0;
}

constexpr InferenceEstimate estimate_inference_memory(const ModelShape& m, DType kv_dtype = DType::f32,
                                                      DType weight_dtype = DType::f32) {
  constexpr double f = sizeof(float);
  const double kv_bytes = kv_dtype == DType::f32 ? 4.0 : 2.0;  // a cache is f32, bf16 or f16
  const double L = m.layers, B = m.batch, T = m.context, C = m.channels, V = m.vocab;
  const double K = m.arch == Arch::llama ? llama_kv_width(m) : C;
  const double F = m.arch == Arch::llama ? llama_ffn(m) : 4 * C;
  // One layer, the last position's logits: in double, never from a saturated count (no difference of huge values).
  const double workspace = m.arch == Arch::llama ? llama_activation_count(m, 1, 1) : gpt2_activation_count(m, 1, 1);
  const double all = m.arch == Arch::llama ? 2 * V * C + L * (2 * C * C + 2 * K * C + 3 * F * C + 2 * C) + C
                                           : V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
  const double linear = m.arch == Arch::llama ? L * (2 * C * C + 2 * K * C + 3 * F * C) + V * C : L * 12 * C * C;
  const double largest = m.arch == Arch::llama ? (V > F ? V : F) * C : 4 * C * C;
  InferenceEstimate e;
  e.parameter_bytes = MemoryEstimate::saturate(f * (all - linear) + bytes_per_value(weight_dtype) * linear);
  e.kv_cache_bytes = MemoryEstimate::saturate(kv_bytes * 2 * L * B * T * K);
  e.workspace_bytes = MemoryEstimate::saturate(f * workspace);
  e.staging_bytes = MemoryEstimate::saturate(bytes_per_value(weight_dtype) * largest);
  return e;
}

}  // namespace ptk::nn
