// The decoder's configuration (nn/decoder.hpp): names, defaults and checks, apart from the model so that what reads
// a config (nn/hf_config.cpp, its fuzz target) needs no Kokkos.
#include <cmath>

#include "ptk/nn/decoder.hpp"

namespace ptk::nn {

std::string to_string(Arch arch) { return arch == Arch::llama ? "llama" : "gpt2"; }

Arch parse_arch(const std::string& name) {
  if (name == "gpt2") return Arch::gpt2;
  if (name == "llama") return Arch::llama;
  throw InputError("model: unknown architecture '" + name + "' (valid: gpt2, llama)");
}

int kv_heads(const DecoderConfig& c) { return c.n_kv_head != 0 ? c.n_kv_head : c.n_head; }

int mlp_hidden(const DecoderConfig& c) {
  if (c.arch == Arch::gpt2) return 4 * c.n_embd;
  if (c.ffn_hidden != 0) return c.ffn_hidden;
  const std::int64_t two_thirds = 8 * static_cast<std::int64_t>(c.n_embd) / 3;
  return static_cast<int>(32 * ((two_thirds + 31) / 32));
}

void check_config(const DecoderConfig& c) {
  require(c.arch == Arch::gpt2 || c.arch == Arch::llama, "model: unknown architecture ", static_cast<int>(c.arch));
  require(c.n_layer > 0, "model: n_layer must be positive, got ", c.n_layer);
  require(c.n_head > 0, "model: n_head must be positive, got ", c.n_head);
  require(c.n_embd > 0, "model: n_embd must be positive, got ", c.n_embd);
  require(c.block_size > 0, "model: block_size must be positive, got ", c.block_size);
  require(c.vocab_size > 0, "model: vocab_size must be positive, got ", c.vocab_size);
  require(c.n_embd % c.n_head == 0, "model: n_embd = ", c.n_embd, " is not divisible by n_head = ", c.n_head);
  require(c.n_kv_head >= 0, "model: n_kv_head must be positive (or 0: n_head), got ", c.n_kv_head);
  require(c.n_head % kv_heads(c) == 0, "model: n_head = ", c.n_head, " is not a multiple of kv_heads = ", kv_heads(c));
  require(c.ffn_hidden >= 0, "model: ffn_hidden must be positive (or 0: the default), got ", c.ffn_hidden);
  require(std::isfinite(c.rope_base) && c.rope_base > 0.0f, "model: rope_base must be positive and finite, got ", c.rope_base);
  require(std::isfinite(c.norm_eps) && c.norm_eps > 0.0f, "model: norm_eps must be positive and finite, got ", c.norm_eps);
  if (c.arch == Arch::gpt2) {
    require(kv_heads(c) == c.n_head, "model: gpt2 has no grouped-query attention: n_kv_head = ", c.n_kv_head,
            " differs from n_head = ", c.n_head);
    require(c.ffn_hidden == 0 || static_cast<std::int64_t>(c.ffn_hidden) == 4 * static_cast<std::int64_t>(c.n_embd),
            "model: gpt2's MLP width is 4 * n_embd = ", 4 * static_cast<std::int64_t>(c.n_embd), ", got ffn_hidden = ",
            c.ffn_hidden);
  } else {
    require((c.n_embd / c.n_head) % 2 == 0, "model: llama's head dim n_embd / n_head = ", c.n_embd, " / ", c.n_head,
            " = ", c.n_embd / c.n_head, " must be even (rope rotates pairs)");
  }
}

DecoderParts parts_of(Arch arch) {
  using P = DecoderParts;
  if (arch == Arch::llama)
    return {P::Norm::rmsnorm, P::Positions::rope, P::Mlp::swiglu, /*fused_qkv=*/false, /*tied_head=*/false};
  return {P::Norm::layernorm, P::Positions::learned, P::Mlp::gelu, /*fused_qkv=*/true, /*tied_head=*/true};
}

}  // namespace ptk::nn
