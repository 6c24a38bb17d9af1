#pragma once
// A GPT-2-style decoder written in ptk::ag ops (no Kokkos here), with GPT-2's parameter names so that its
// checkpoints load in any implementation of the architecture:
//   wte [V, C], wpe [block_size, C];  per block h.{i}: ln_1 → causal self-attention (attn.c_attn [3C, C] + [3C],
//   q, k, v in that order, heads consecutive chunks of C/H; attn.c_proj [C, C] + [C]) → residual → ln_2 →
//   mlp.c_fc [4C, C] + [4C] → gelu (tanh) → mlp.c_proj [C, 4C] + [C] → residual;  ln_f;  logits = x · wteᵀ.
// Linear weights are [out, in] (y = x Wᵀ + b), layernorm eps 1e-5, attention scale 1/sqrt(C/H).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ptk/autograd/functions.hpp"

namespace ptk::nn {

struct GptConfig {
  int n_layer = 4, n_head = 4, n_embd = 128, block_size = 128, vocab_size = 0;
};

// Throws ptk::Error naming the bad field unless every size is positive and n_embd % n_head == 0.
void check_config(const GptConfig& config);

using NamedParameters = std::vector<std::pair<std::string, ag::Var>>;

// Every parameter's name and shape, in the model's fixed order.
std::vector<std::pair<std::string, Shape>> parameter_shapes(const GptConfig& config);

class Gpt {
 public:
  // Weights ~ N(0, 0.02²), the residual projections' (attn.c_proj, mlp.c_proj) ~ N(0, (0.02/sqrt(2 n_layer))²),
  // biases 0, layernorm weights 1; drawn from a 64-bit Mersenne Twister seeded with `seed`.
  Gpt(const GptConfig& config, ag::Device device, std::uint64_t seed);

  const GptConfig& config() const { return config_; }
  ag::Device device() const { return device_; }
  // Every parameter once, in a fixed order, under its checkpoint name (the LM head is wte).
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
  GptConfig config_;
  ag::Device device_;
  NamedParameters params_;
  mutable std::map<std::pair<int, int>, ag::Ids> positions_;  // position ids per (B, T)
};

}  // namespace ptk::nn
