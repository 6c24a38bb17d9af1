#pragma once
// The decoder, written in ptk::ag ops (no Kokkos here), in one of two architectures (GptConfig::arch), each
// with its reference implementation's parameter names so that its checkpoints load in any implementation of it.
//
// Arch::gpt2 (GPT-2's names):
//   wte [V, C], wpe [block_size, C];  per block h.{i}: ln_1 → causal self-attention (attn.c_attn [3C, C] + [3C],
//   q, k, v in that order, heads consecutive chunks of C/H; attn.c_proj [C, C] + [C]) → residual → ln_2 →
//   mlp.c_fc [4C, C] + [4C] → gelu (tanh) → mlp.c_proj [C, 4C] + [C] → residual;  ln_f;  logits = x · wteᵀ.
// Linear weights are [out, in] (y = x Wᵀ + b), layernorm eps norm_eps (1e-5), attention scale 1/sqrt(C/H).
//
// Arch::llama (Hugging Face LlamaForCausalLM's names; no biases; untied head), D = C/H, Hkv = kv_heads, F = mlp_hidden:
//   model.embed_tokens.weight [V, C];  per layer model.layers.{i}.: input_layernorm.weight [C] (rmsnorm) →
//   self_attn.q_proj.weight [C, C], k_proj.weight [Hkv·D, C], v_proj.weight [Hkv·D, C] → rope on q and k
//   (half-split pairs, positions 0..T-1, base rope_base) → causal attention, scale 1/sqrt(D), query head h
//   reading kv head h / (H/Hkv) (grouped-query attention) → self_attn.o_proj.weight [C, C] → residual →
//   post_attention_layernorm.weight [C] → mlp.down_proj.weight [C, F] · (silu(mlp.gate_proj.weight [F, C] · h)
//   ∘ mlp.up_proj.weight [F, C] · h) → residual;  model.norm.weight [C];  logits = x · lm_head.weight [V, C]ᵀ.
//   rmsnorm eps norm_eps. This is exactly LlamaForCausalLM's math (rotate_half rope).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ptk/autograd/functions.hpp"
#include "ptk/nn/arch.hpp"

namespace ptk::nn {

using ptk::to_string;  // (Shape's, which the overload below would hide in this namespace)
// "gpt2" or "llama".
std::string to_string(Arch arch);
// The inverse of to_string; anything else throws ptk::Error naming the value and the valid ones.
Arch parse_arch(const std::string& name);

struct GptConfig {
  int n_layer = 4, n_head = 4, n_embd = 128, block_size = 128, vocab_size = 0;
  Arch arch = Arch::gpt2;
  int n_kv_head = 0;           // llama: key/value heads (grouped-query attention); 0 = n_head
  int ffn_hidden = 0;          // llama: MLP width F; 0 = the default (mlp_hidden)
  float rope_base = 10000.0f;  // llama
  float norm_eps = 1e-5f;      // the norms' epsilon (layernorm for gpt2, rmsnorm for llama)
};

// n_kv_head, or n_head when it is 0.
int kv_heads(const GptConfig& config);
// The MLP's hidden width: gpt2 4·C; llama ffn_hidden, or by default 32·ceil(floor(8·C/3) / 32) (LLaMA's 2/3 of
// 4·C, rounded up to a multiple of 32).
int mlp_hidden(const GptConfig& config);

// Throws ptk::Error with a one-line message naming the bad field unless: every size is positive,
// n_embd % n_head == 0, n_head is a multiple of kv_heads; for gpt2, n_kv_head and ffn_hidden are 0 or the
// values gpt2 implies (n_head, 4·C); for llama, the head dim C/H is even (rope rotates pairs); ffn_hidden >= 0,
// rope_base and norm_eps positive and finite.
void check_config(const GptConfig& config);

using NamedParameters = std::vector<std::pair<std::string, ag::Var>>;

// Every parameter's name and shape, in the model's fixed order.
std::vector<std::pair<std::string, Shape>> parameter_shapes(const GptConfig& config);

class Gpt {
 public:
  // Weights ~ N(0, 0.02²), the residual projections' (gpt2: attn.c_proj, mlp.c_proj; llama: o_proj, down_proj)
  // ~ N(0, (0.02/sqrt(2 n_layer))²), biases 0, norm weights 1; drawn in parameter order from a 64-bit Mersenne
  // Twister seeded with `seed`.
  Gpt(const GptConfig& config, ag::Device device, std::uint64_t seed);

  const GptConfig& config() const { return config_; }
  ag::Device device() const { return device_; }
  // Every parameter once, in a fixed order, under its checkpoint name (gpt2's LM head is wte).
  const NamedParameters& parameters() const { return params_; }
  const ag::Var& parameter(const std::string& name) const;
  std::int64_t parameter_count() const;

  // idx [B, T] with T <= block_size -> logits [B, T, V].
  ag::Var logits(const ag::Ids& idx, int B, int T) const;
  // Mean cross-entropy of logits(idx) against targets [B, T], shape [1].
  ag::Var loss(const ag::Ids& idx, const ag::Ids& targets, int B, int T) const;
  void zero_grad() const;

 private:
  const ag::Var& p(const std::string& name) const { return parameter(name); }
  ag::Var gpt2_logits(const ag::Ids& idx, int B, int T) const;
  ag::Var llama_logits(const ag::Ids& idx) const;
  GptConfig config_;
  ag::Device device_;
  NamedParameters params_;
  mutable std::map<std::pair<int, int>, ag::Ids> positions_;  // position ids per (B, T)
};

}  // namespace ptk::nn
