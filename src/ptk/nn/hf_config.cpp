#include "ptk/nn/hf_config.hpp"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "ptk/core/error.hpp"
#include "ptk/core/quote.hpp"

namespace ptk::nn {

namespace {

using Json = nlohmann::json;

// The fields of one config.json, each read once with its file's name in every refusal.
class Fields {
 public:
  Fields(const Json& j, std::string name) : j_(j), name_(std::move(name)) {}

  [[noreturn]] void refuse(const std::string& key, const std::string& problem) const {
    throw InputError(name_ + ": " + key + " " + problem);
  }
  // The value as JSON text, one line (dump escapes control characters; replace: bytes that are not UTF-8), cut at 60.
  std::string value_text(const std::string& key) const {
    const std::string d = j_.at(key).dump(-1, ' ', false, Json::error_handler_t::replace);
    return d.size() > 60 ? d.substr(0, 60) + "..." : d;
  }
  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  int integer(const std::string& key, std::optional<int> fallback = std::nullopt) const {
    if (!has(key)) {
      if (fallback) return *fallback;
      refuse(key, "is missing");
    }
    const Json& v = j_.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0 || v.get<std::int64_t>() > std::numeric_limits<int>::max())
      refuse(key, "= " + value_text(key) + " is not a positive integer ptk can hold");
    return static_cast<int>(v.get<std::int64_t>());
  }
  float positive(const std::string& key, float fallback) const {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_number() || !(v.get<double>() > 0.0) || !std::isfinite(static_cast<float>(v.get<double>())))
      refuse(key, "= " + value_text(key) + " is not a positive finite number");
    return static_cast<float>(v.get<double>());
  }
  bool flag(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_boolean()) refuse(key, "= " + value_text(key) + " is not true or false");
    return j_.at(key).get<bool>();
  }
  std::string text(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_string()) refuse(key, "= " + value_text(key) + " is not a string");
    return j_.at(key).get<std::string>();
  }
  // A token id (bos_token_id, eos_token_id): an integer, or the first of a list (Llama 3 lists several EOS ids).
  std::optional<int> token_id(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    const Json& v = j_.at(key).is_array() && !j_.at(key).empty() ? j_.at(key).at(0) : j_.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > std::numeric_limits<int>::max())
      refuse(key, "= " + value_text(key) + " is not a token id");
    return static_cast<int>(v.get<std::int64_t>());
  }
  // A field whose only supported value is `expected` (its absence means that value too).
  void require_flag(const std::string& key, bool expected) const {
    if (flag(key, expected) != expected)
      refuse(key, "= " + value_text(key) + " is not supported (ptk implements " + (expected ? "true" : "false") + ")");
  }

 private:
  const Json& j_;
  std::string name_;
};

void read_llama(const Fields& f, HfConfig& hf, bool mistral) {
  DecoderConfig& c = hf.config;
  c.arch = Arch::llama;
  c.n_embd = f.integer("hidden_size");
  c.ffn_hidden = f.integer("intermediate_size");
  c.n_layer = f.integer("num_hidden_layers");
  c.n_head = f.integer("num_attention_heads");
  c.n_kv_head = f.integer("num_key_value_heads", c.n_head);
  c.vocab_size = f.integer("vocab_size");
  c.block_size = f.integer("max_position_embeddings", mistral ? 32768 : 2048);
  c.norm_eps = f.positive("rms_norm_eps", 1e-6f);
  c.rope_base = f.positive("rope_theta", 10000.0f);
  if (c.n_embd % c.n_head != 0)
    f.refuse("hidden_size", "= " + std::to_string(c.n_embd) + " is not a multiple of num_attention_heads = " + std::to_string(c.n_head));
  if (f.has("head_dim") && f.integer("head_dim") != c.n_embd / c.n_head)
    f.refuse("head_dim", "= " + f.value_text("head_dim") + " is not supported: ptk's head dim is hidden_size / num_attention_heads = " +
                             std::to_string(c.n_embd / c.n_head));
  if (f.has("rope_scaling")) f.refuse("rope_scaling", "= " + f.value_text("rope_scaling") + " is not supported (ptk's rope is unscaled)");
  if (f.text("hidden_act", "silu") != "silu") f.refuse("hidden_act", "= " + f.value_text("hidden_act") + " is not supported (ptk implements silu)");
  f.require_flag("attention_bias", false);
  f.require_flag("mlp_bias", false);
  hf.tied_head = f.flag("tie_word_embeddings", false);
  if (mistral && f.has("sliding_window")) {
    const int window = f.integer("sliding_window");
    if (window < c.block_size) {
      hf.note = "context capped at sliding_window " + std::to_string(window) + " (max_position_embeddings " +
                std::to_string(c.block_size) + "): ptk's attention does not slide, and is exact up to the window";
      c.block_size = window;
    }
  }
}

void read_gpt2(const Fields& f, HfConfig& hf) {
  DecoderConfig& c = hf.config;
  c.arch = Arch::gpt2;
  c.n_embd = f.integer("n_embd");
  c.n_layer = f.integer("n_layer");
  c.n_head = f.integer("n_head");
  c.vocab_size = f.integer("vocab_size");
  c.block_size = f.integer("n_positions", f.integer("n_ctx", 1024));
  c.norm_eps = f.positive("layer_norm_epsilon", 1e-5f);
  if (f.has("n_inner") && static_cast<std::int64_t>(f.integer("n_inner")) != 4 * static_cast<std::int64_t>(c.n_embd))
    f.refuse("n_inner", "= " + f.value_text("n_inner") + " is not supported (ptk's GPT-2 MLP is 4 * n_embd wide)");
  const std::string act = f.text("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    f.refuse("activation_function", "= " + f.value_text("activation_function") + " is not supported (ptk's gelu is the tanh form, gelu_new)");
  f.require_flag("tie_word_embeddings", true);
  f.require_flag("scale_attn_weights", true);
  f.require_flag("scale_attn_by_inverse_layer_idx", false);
  hf.tied_head = true;
}

}  // namespace

HfConfig parse_hf_config(std::string_view text, const std::string& name) {
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    const std::string what = one_line(e.what());
    throw InputError(name + ": not valid JSON (" + what + ")");
  }
  if (!j.is_object()) throw InputError(name + ": not a JSON object");
  const Fields f(j, name);
  HfConfig hf;
  if (!f.has("architectures") || !j.at("architectures").is_array() || j.at("architectures").size() != 1 ||
      !j.at("architectures").at(0).is_string())
    f.refuse("architectures", f.has("architectures") ? "= " + f.value_text("architectures") + " is not one architecture's name"
                                                     : "is missing");
  hf.architecture = j.at("architectures").at(0).get<std::string>();
  if (hf.architecture == "LlamaForCausalLM") read_llama(f, hf, false);
  else if (hf.architecture == "MistralForCausalLM") read_llama(f, hf, true);
  else if (hf.architecture == "GPT2LMHeadModel") read_gpt2(f, hf);
  else
    f.refuse("architectures", "= " + f.value_text("architectures") +
                                  " is not supported (ptk reads LlamaForCausalLM, MistralForCausalLM, GPT2LMHeadModel)");
  hf.bos = f.token_id("bos_token_id");
  hf.eos = f.token_id("eos_token_id");
  try {
    check_config(hf.config);
  } catch (const Error& e) {
    throw InputError(name + ": " + e.what());
  }
  return hf;
}

HfTensorName hf_tensor_name(const HfConfig& hf, const std::string& name) {
  if (hf.config.arch == Arch::llama) {
    if (name == "lm_head.weight" && hf.tied_head) return {{"model.embed_tokens.weight"}, false};
    return {{name}, false};
  }
  // GPT2LMHeadModel's names are transformer.<ptk's name>; GPT2Model's files (and OpenAI's own) lack the prefix.
  bool conv1d = false;
  for (const char* w : {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"}) {
    const std::string tail = w;
    conv1d = conv1d || (name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0);
  }
  return {{"transformer." + name, name}, conv1d};
}

}  // namespace ptk::nn
