#pragma once
// A Hugging Face model directory's config.json as ptk's decoder (nn/decoder.hpp) reads it: LlamaForCausalLM,
// MistralForCausalLM and GPT2LMHeadModel, and where each of ptk's parameters lies in the directory's safetensors.
//   llama, mistral: hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads
//     (default: the heads), head_dim (must be hidden_size / heads), rms_norm_eps (1e-6), rope_theta (10000),
//     max_position_embeddings (the context), vocab_size, tie_word_embeddings (false: lm_head is its own tensor).
//     Refused: rope_scaling other than null, hidden_act other than silu, attention_bias or mlp_bias true. Mistral's
//     sliding_window W shorter than the context caps the context at W: within W positions a sliding window attends to
//     every earlier position, which is ptk's causal attention exactly (ptk's kernels do not slide).
//   gpt2: n_embd, n_layer, n_head, n_positions (the context), vocab_size, layer_norm_epsilon (1e-5), n_inner (null or
//     4·n_embd), activation_function gelu_new or gelu_pytorch_tanh (GPT-2's tanh gelu); refused: a head not tied to
//     wte, scale_attn_weights false, scale_attn_by_inverse_layer_idx true. Its Conv1D weights are stored [in, out]:
//     read transposed into ptk's [out, in].
// Anything else (another architecture, a missing or mistyped field) is an InputError, one line naming the file, the
// field and its value.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptk/nn/decoder.hpp"

namespace ptk::nn {

struct HfConfig {
  DecoderConfig config;      // block_size: the context (capped, see note)
  std::string architecture;  // "LlamaForCausalLM", "MistralForCausalLM", "GPT2LMHeadModel"
  bool tied_head = false;    // llama: lm_head.weight is the token table
  std::string note;          // a limit ptk applied, for the user ("context capped at sliding_window 4096"), or ""
  std::optional<int> bos, eos;
};

HfConfig parse_hf_config(std::string_view json, const std::string& name_for_errors);

// Where ptk's parameter `name` lies in the directory's tensors: the names to look for (the first present is it)
// and whether the stored matrix is the transpose of ptk's (GPT-2's Conv1D).
struct HfTensorName {
  std::vector<std::string> candidates;
  bool transposed = false;
};
HfTensorName hf_tensor_name(const HfConfig& hf, const std::string& name);

}  // namespace ptk::nn
