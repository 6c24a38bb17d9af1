#include "ptk/nn/gpt.hpp"

#include <cmath>
#include <random>

namespace ptk::nn {

namespace {

// Normal draws by Box-Muller from mt19937_64's raw output (whose sequence the standard fixes), so a seed gives
// the same weights with every standard library (std::normal_distribution's algorithm is unspecified).
class Normal {
 public:
  explicit Normal(std::uint64_t seed) : rng_(seed) {}
  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(rng_() >> 11) * 0x1.0p-53;          // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1)), a = 6.283185307179586476925286766559 * u2;
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

 private:
  std::mt19937_64 rng_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace

std::string to_string(Arch arch) { return arch == Arch::llama ? "llama" : "gpt2"; }

Arch parse_arch(const std::string& name) {
  if (name == "gpt2") return Arch::gpt2;
  if (name == "llama") return Arch::llama;
  throw Error("model: unknown architecture '" + name + "' (valid: gpt2, llama)");
}

int kv_heads(const GptConfig& c) { return c.n_kv_head != 0 ? c.n_kv_head : c.n_head; }

int mlp_hidden(const GptConfig& c) {
  if (c.arch == Arch::gpt2) return 4 * c.n_embd;
  if (c.ffn_hidden != 0) return c.ffn_hidden;
  const std::int64_t two_thirds = 8 * static_cast<std::int64_t>(c.n_embd) / 3;
  return static_cast<int>(32 * ((two_thirds + 31) / 32));
}

void check_config(const GptConfig& c) {
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

namespace {

std::vector<std::pair<std::string, Shape>> llama_shapes(const GptConfig& config) {
  const std::int64_t C = config.n_embd, V = config.vocab_size, F = mlp_hidden(config);
  const std::int64_t KV = static_cast<std::int64_t>(kv_heads(config)) * (C / config.n_head);
  std::vector<std::pair<std::string, Shape>> shapes{{"model.embed_tokens.weight", {V, C}}};
  for (int i = 0; i < config.n_layer; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{
             {"input_layernorm.weight", {C}},  {"self_attn.q_proj.weight", {C, C}},  {"self_attn.k_proj.weight", {KV, C}},
             {"self_attn.v_proj.weight", {KV, C}}, {"self_attn.o_proj.weight", {C, C}}, {"post_attention_layernorm.weight", {C}},
             {"mlp.gate_proj.weight", {F, C}}, {"mlp.up_proj.weight", {F, C}},       {"mlp.down_proj.weight", {C, F}}})
      shapes.emplace_back(l + name, shape);
  }
  shapes.emplace_back("model.norm.weight", Shape{C});
  shapes.emplace_back("lm_head.weight", Shape{V, C});
  return shapes;
}

bool ends_with(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

std::vector<std::pair<std::string, Shape>> parameter_shapes(const GptConfig& config) {
  check_config(config);
  if (config.arch == Arch::llama) return llama_shapes(config);
  const std::int64_t C = config.n_embd;
  std::vector<std::pair<std::string, Shape>> shapes{{"wte.weight", {config.vocab_size, C}},
                                                    {"wpe.weight", {config.block_size, C}}};
  for (int i = 0; i < config.n_layer; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{
             {"ln_1.weight", {C}},           {"ln_1.bias", {C}},           {"attn.c_attn.weight", {3 * C, C}},
             {"attn.c_attn.bias", {3 * C}},  {"attn.c_proj.weight", {C, C}}, {"attn.c_proj.bias", {C}},
             {"ln_2.weight", {C}},           {"ln_2.bias", {C}},           {"mlp.c_fc.weight", {4 * C, C}},
             {"mlp.c_fc.bias", {4 * C}},     {"mlp.c_proj.weight", {C, 4 * C}}, {"mlp.c_proj.bias", {C}}})
      shapes.emplace_back(h + name, shape);
  }
  shapes.emplace_back("ln_f.weight", Shape{C});
  shapes.emplace_back("ln_f.bias", Shape{C});
  return shapes;
}

Gpt::Gpt(const GptConfig& config, ag::Device device, std::uint64_t seed) : config_(config), device_(device) {
  Normal normal(seed);
  const double residual_std = 0.02 / std::sqrt(2.0 * config.n_layer);
  const auto is_residual = [](const std::string& name) {
    return ends_with(name, "c_proj.weight") || ends_with(name, "o_proj.weight") || ends_with(name, "down_proj.weight");
  };
  const auto is_norm_weight = [](const std::string& name) {
    return ends_with(name, "ln_1.weight") || ends_with(name, "ln_2.weight") || name == "ln_f.weight" ||
           ends_with(name, "layernorm.weight") || name == "model.norm.weight";
  };
  for (const auto& [name, shape] : parameter_shapes(config)) {
    std::vector<float> values(static_cast<std::size_t>(element_count(shape)), 0.0f);
    if (shape.size() == 2) {  // embeddings and Linear weights
      const double std = is_residual(name) ? residual_std : 0.02;
      for (auto& x : values) x = static_cast<float>(std * normal.next());
    } else if (is_norm_weight(name)) {
      for (auto& x : values) x = 1.0f;
    }
    params_.emplace_back(name, ag::Var::from_vector(shape, values, device, /*requires_grad=*/true));
  }
}

const ag::Var& Gpt::parameter(const std::string& name) const {
  for (const auto& np : params_)
    if (np.first == name) return np.second;
  throw Error("model: no parameter named '" + name + "'");
}

std::int64_t Gpt::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& np : params_) n += np.second.numel();
  return n;
}

ag::Var Gpt::logits(const ag::Ids& idx, int B, int T) const {
  require(B > 0 && T > 0 && idx.shape() == Shape{B, T}, "model: idx has shape ", idx.shape(),
          ", expected [", B, ", ", T, "]");
  require(T <= config_.block_size, "model: sequence length ", T, " exceeds block_size ", config_.block_size);
  return config_.arch == Arch::llama ? llama_logits(idx) : gpt2_logits(idx, B, T);
}

ag::Var Gpt::gpt2_logits(const ag::Ids& idx, int B, int T) const {
  const float eps = config_.norm_eps;
  // Uploaded once per (B, T) and kept: a training step uploads nothing it already has.
  auto& pos = positions_[{B, T}];
  if (!pos.defined()) {
    std::vector<int> positions(static_cast<std::size_t>(B) * static_cast<std::size_t>(T));
    for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int>(i % static_cast<std::size_t>(T));
    pos = ag::Ids::from_vector({B, T}, positions, device_);
  }

  ag::Var x = ag::add(ag::embedding(idx, p("wte.weight")), ag::embedding(pos, p("wpe.weight")));
  for (int i = 0; i < config_.n_layer; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    ag::Var a = ag::layernorm(x, p(h + "ln_1.weight"), p(h + "ln_1.bias"), eps);
    a = ag::causal_self_attention(ag::linear(a, p(h + "attn.c_attn.weight"), p(h + "attn.c_attn.bias")), config_.n_head);
    x = ag::add(x, ag::linear(a, p(h + "attn.c_proj.weight"), p(h + "attn.c_proj.bias")));
    ag::Var m = ag::layernorm(x, p(h + "ln_2.weight"), p(h + "ln_2.bias"), eps);
    m = ag::gelu(ag::linear(m, p(h + "mlp.c_fc.weight"), p(h + "mlp.c_fc.bias")));
    x = ag::add(x, ag::linear(m, p(h + "mlp.c_proj.weight"), p(h + "mlp.c_proj.bias")));
  }
  x = ag::layernorm(x, p("ln_f.weight"), p("ln_f.bias"), eps);
  return ag::linear(x, p("wte.weight"));
}

ag::Var Gpt::llama_logits(const ag::Ids& idx) const {
  const int H = config_.n_head, Hkv = kv_heads(config_);
  const float eps = config_.norm_eps, base = config_.rope_base;
  ag::Var x = ag::embedding(idx, p("model.embed_tokens.weight"));
  for (int i = 0; i < config_.n_layer; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    const ag::Var h = ag::rmsnorm(x, p(l + "input_layernorm.weight"), eps);
    const ag::Var q = ag::rope(ag::linear(h, p(l + "self_attn.q_proj.weight")), H, 0, base);
    const ag::Var k = ag::rope(ag::linear(h, p(l + "self_attn.k_proj.weight")), Hkv, 0, base);
    const ag::Var v = ag::linear(h, p(l + "self_attn.v_proj.weight"));
    x = ag::add(x, ag::linear(ag::causal_attention(q, k, v, H, Hkv), p(l + "self_attn.o_proj.weight")));
    const ag::Var m = ag::rmsnorm(x, p(l + "post_attention_layernorm.weight"), eps);
    const ag::Var gated = ag::mul(ag::silu(ag::linear(m, p(l + "mlp.gate_proj.weight"))), ag::linear(m, p(l + "mlp.up_proj.weight")));
    x = ag::add(x, ag::linear(gated, p(l + "mlp.down_proj.weight")));
  }
  x = ag::rmsnorm(x, p("model.norm.weight"), eps);
  return ag::linear(x, p("lm_head.weight"));
}

ag::Var Gpt::loss(const ag::Ids& idx, const ag::Ids& targets, int B, int T) const {
  return ag::cross_entropy(logits(idx, B, T), targets);
}

void Gpt::zero_grad() const {
  for (const auto& np : params_) np.second.zero_grad();
}

}  // namespace ptk::nn
