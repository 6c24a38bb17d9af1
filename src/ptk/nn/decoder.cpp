#include "ptk/nn/decoder.hpp"

#include <cmath>
#include <random>
#include <tuple>

#include "ptk/autograd/inference.hpp"

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

namespace {

// The parameters, each once, by name, in the model's fixed order: the one place the names are written. A slot
// says how the parameter is initialized and which role of a layer (or of the model) it fills.
using Init = Decoder::ParameterInfo::Init;
struct Slot {
  Decoder::ParameterInfo info;
  int layer;                                  // -1: not a layer's
  ag::Var Decoder::Layer::*layer_role;        // when layer >= 0
  ag::Var Decoder::Globals::*global_role;     // when layer < 0
};

using L = Decoder::Layer;
using G = Decoder::Globals;
using LayerTable = std::vector<std::tuple<const char*, Shape, Init, ag::Var L::*>>;

LayerTable gpt2_layer(std::int64_t C) {
  return {{"ln_1.weight", {C}, Init::one, &L::attn_norm_w},        {"ln_1.bias", {C}, Init::zero, &L::attn_norm_b},
          {"attn.c_attn.weight", {3 * C, C}, Init::normal, &L::qkv_w}, {"attn.c_attn.bias", {3 * C}, Init::zero, &L::qkv_b},
          {"attn.c_proj.weight", {C, C}, Init::residual, &L::o_w},  {"attn.c_proj.bias", {C}, Init::zero, &L::o_b},
          {"ln_2.weight", {C}, Init::one, &L::mlp_norm_w},          {"ln_2.bias", {C}, Init::zero, &L::mlp_norm_b},
          {"mlp.c_fc.weight", {4 * C, C}, Init::normal, &L::up_w},  {"mlp.c_fc.bias", {4 * C}, Init::zero, &L::up_b},
          {"mlp.c_proj.weight", {C, 4 * C}, Init::residual, &L::down_w}, {"mlp.c_proj.bias", {C}, Init::zero, &L::down_b}};
}

LayerTable llama_layer(std::int64_t C, std::int64_t KV, std::int64_t F) {
  return {{"input_layernorm.weight", {C}, Init::one, &L::attn_norm_w},
          {"self_attn.q_proj.weight", {C, C}, Init::normal, &L::q_w},
          {"self_attn.k_proj.weight", {KV, C}, Init::normal, &L::k_w},
          {"self_attn.v_proj.weight", {KV, C}, Init::normal, &L::v_w},
          {"self_attn.o_proj.weight", {C, C}, Init::residual, &L::o_w},
          {"post_attention_layernorm.weight", {C}, Init::one, &L::mlp_norm_w},
          {"mlp.gate_proj.weight", {F, C}, Init::normal, &L::gate_w},
          {"mlp.up_proj.weight", {F, C}, Init::normal, &L::up_w},
          {"mlp.down_proj.weight", {C, F}, Init::residual, &L::down_w}};
}

// The roles ag::linear reads as weights (Decoder::store_weights_as stores them as a reduced type).
constexpr ag::Var L::*kLinearRoles[] = {&L::qkv_w, &L::q_w, &L::k_w, &L::v_w, &L::o_w, &L::up_w, &L::gate_w, &L::down_w};

bool is_linear(ag::Var L::*role) {
  for (ag::Var L::*w : kLinearRoles)
    if (role == w) return true;
  return false;
}

std::vector<Slot> slots(const DecoderConfig& c) {
  check_config(c);
  const std::int64_t C = c.n_embd, V = c.vocab_size, F = mlp_hidden(c);
  const std::int64_t KV = static_cast<std::int64_t>(kv_heads(c)) * (C / c.n_head);
  const bool gpt2 = c.arch == Arch::gpt2;
  std::vector<Slot> out;
  const auto global = [&](const char* name, Shape shape, Init init, ag::Var G::*role) {
    out.push_back({{name, std::move(shape), role == &G::head, init}, -1, nullptr, role});
  };
  global(gpt2 ? "wte.weight" : "model.embed_tokens.weight", {V, C}, Init::normal, &G::tok_embed);
  if (gpt2) global("wpe.weight", {c.block_size, C}, Init::normal, &G::pos_embed);
  const LayerTable layer = gpt2 ? gpt2_layer(C) : llama_layer(C, KV, F);
  for (int i = 0; i < c.n_layer; ++i)
    for (const auto& [name, shape, init, role] : layer)
      out.push_back({{(gpt2 ? "h." : "model.layers.") + std::to_string(i) + "." + name, shape, is_linear(role), init}, i,
                     role, nullptr});
  if (gpt2) {
    global("ln_f.weight", {C}, Init::one, &G::norm_w);
    global("ln_f.bias", {C}, Init::zero, &G::norm_b);
  } else {
    global("model.norm.weight", {C}, Init::one, &G::norm_w);
    global("lm_head.weight", {V, C}, Init::normal, &G::head);
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Shape>> parameter_shapes(const DecoderConfig& config) {
  std::vector<std::pair<std::string, Shape>> shapes;
  for (const auto& s : slots(config)) shapes.emplace_back(s.info.name, s.info.shape);
  return shapes;
}

double Decoder::init_std(const DecoderConfig& config, ParameterInfo::Init init) {
  return init == Init::residual ? 0.02 / std::sqrt(2.0 * config.n_layer) : 0.02;
}

Decoder::Decoder(const DecoderConfig& config, ag::Device device, std::uint64_t seed)
    : Decoder(config, device, [normal = Normal(seed), config, device](const ParameterInfo& p) mutable {
        std::vector<float> values(static_cast<std::size_t>(element_count(p.shape)), p.init == Init::one ? 1.0f : 0.0f);
        if (p.init == Init::normal || p.init == Init::residual) {
          const double std = init_std(config, p.init);
          for (auto& x : values) x = static_cast<float>(std * normal.next());
        }
        return ag::Var::from_vector(p.shape, values, device, /*requires_grad=*/true);
      }) {}

Decoder::Decoder(const DecoderConfig& config, ag::Device device, const ParameterMaker& make)
    : config_(config), parts_(parts_of(config.arch)), device_(device), layers_(static_cast<std::size_t>(config.n_layer)) {
  for (const auto& s : slots(config)) {
    ag::Var var = make(s.info);
    require(var.defined() && var.shape() == s.info.shape, "model: parameter ", s.info.name, " was made with shape ",
            var.defined() ? to_string(var.shape()) : "(none)", ", expected ", to_string(s.info.shape));
    if (s.layer >= 0) layers_[static_cast<std::size_t>(s.layer)].*s.layer_role = var;
    else globals_.*s.global_role = var;
    params_.emplace_back(s.info.name, std::move(var));
  }
  if (parts_.tied_head) globals_.head = globals_.tok_embed;
}

const ag::Var& Decoder::parameter(const std::string& name) const {
  for (const auto& np : params_)
    if (np.first == name) return np.second;
  throw InputError("model: no parameter named '" + name + "'");
}

std::int64_t Decoder::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& np : params_) n += np.second.numel();
  return n;
}

void Decoder::store_weights_as(DType dtype) {
  for (auto& l : layers_)
    for (ag::Var L::*role : kLinearRoles)
      if ((l.*role).defined()) (l.*role).store_as(dtype);
  if (!parts_.tied_head) globals_.head.store_as(dtype);
}

ag::Var Decoder::norm(const ag::Var& x, const ag::Var& weight, const ag::Var& bias) const {
  if (parts_.norm == DecoderParts::Norm::rmsnorm) return ag::rmsnorm(x, weight, config_.norm_eps);
  return ag::layernorm(x, weight, bias, config_.norm_eps);
}

// The layer's q, k and v (rope at the strategy's position offset), handed to the attention strategy.
ag::Var Decoder::attention(int i, const ag::Var& x, Attention& attention) const {
  const Layer& l = layers_[static_cast<std::size_t>(i)];
  const int C = config_.n_embd, H = config_.n_head;
  const ag::HeadLayout heads{H, kv_heads(config_), C / H};
  if (parts_.fused_qkv) {  // (no architecture has rope with a fused projection)
    const ag::Var qkv = ag::linear(x, l.qkv_w, l.qkv_b);
    return attention(i, {qkv, 0}, {qkv, C}, {qkv, 2 * C}, heads, std::nullopt);
  }
  const std::vector<ag::Var> qkv = ag::linears(x, {l.q_w, l.k_w, l.v_w});  // a decode step: one launch
  const bool rope = parts_.positions == DecoderParts::Positions::rope;
  return attention(i, {qkv[0]}, {qkv[1]}, {qkv[2]}, heads, rope ? std::optional<float>(config_.rope_base) : std::nullopt);
}

ag::Var FullAttention::operator()(int, ag::HeadColumns q, ag::HeadColumns k, ag::HeadColumns v,
                                  const ag::HeadLayout& heads, std::optional<float> rope_base) {
  if (!rope_base) return ag::causal_attention(q, k, v, heads);
  require(q.offset == 0 && k.offset == 0, "attention: rope rotates whole q and k projections (offsets ", q.offset,
          ", ", k.offset, ")");
  const ag::Var q_rotated = ag::rope(q.rows, heads.heads, 0, *rope_base);
  const ag::Var k_rotated = ag::rope(k.rows, heads.kv_heads, 0, *rope_base);
  return ag::causal_attention({q_rotated}, {k_rotated}, v, heads);
}

// The MLP's hidden activations, before the down projection.
ag::Var Decoder::mlp(const Layer& l, const ag::Var& x) const {
  if (parts_.mlp == DecoderParts::Mlp::swiglu) {
    const std::vector<ag::Var> gate_up = ag::linears(x, {l.gate_w, l.up_w});
    return ag::swiglu(gate_up[0], gate_up[1]);
  }
  return ag::gelu(ag::linear(x, l.up_w, l.up_b));
}

namespace {

// x + a · weightᵀ + bias: a new Var for a graph, or x updated in place when nothing records one (a decode step's
// launches cost more than its arithmetic).
ag::Var residual(const ag::Var& x, const ag::Var& a, const ag::Var& weight, const ag::Var& bias, bool in_place) {
  if (!in_place) return ag::add(x, ag::linear(a, weight, bias));
  ag::accumulate_linear(x, a, weight, bias);
  return x;
}

}  // namespace

ag::Var Decoder::forward(const Tokens& tokens, Attention& attention, bool last_only) const {
  const int B = tokens.B, T = tokens.T, pos = attention.pos();
  require(B > 0 && T > 0 && tokens.ids.defined() && tokens.ids.shape() == Shape{B, T}, "model: the ids have shape ",
          tokens.ids.defined() ? to_string(tokens.ids.shape()) : "(none)", ", expected [", B, ", ", T, "]");
  require(pos >= 0 && pos + T <= config_.block_size, "model: positions ", pos, " + ", T, " exceed block_size ",
          config_.block_size);
  ag::Var x = ag::embedding(tokens.ids, globals_.tok_embed);
  if (parts_.positions == DecoderParts::Positions::learned) {
    require(tokens.positions.defined() && tokens.positions.shape() == Shape{B, T},
            "model: learned positions need position ids [", B, ", ", T, "]");
    x = ag::add(x, ag::embedding(tokens.positions, globals_.pos_embed));
  }
  const bool in_place = attention.in_place();
  for (int i = 0; i < config_.n_layer; ++i) {
    const Layer& l = layers_[static_cast<std::size_t>(i)];
    x = residual(x, this->attention(i, norm(x, l.attn_norm_w, l.attn_norm_b), attention), l.o_w, l.o_b, in_place);
    x = residual(x, mlp(l, norm(x, l.mlp_norm_w, l.mlp_norm_b)), l.down_w, l.down_b, in_place);
  }
  if (last_only) x = ag::last_position(x);
  return ag::linear(norm(x, globals_.norm_w, globals_.norm_b), globals_.head);
}

ag::Var Decoder::logits(const ag::Ids& idx, int B, int T) const {
  require(B > 0 && T > 0 && idx.shape() == Shape{B, T}, "model: idx has shape ", idx.shape(), ", expected [", B, ", ",
          T, "]");
  require(T <= config_.block_size, "model: sequence length ", T, " exceeds block_size ", config_.block_size);
  Tokens tokens{idx, ag::Ids(), B, T};
  if (parts_.positions == DecoderParts::Positions::learned) {
    // Uploaded once per (B, T) and kept: a training step uploads nothing it already has.
    auto& pos = positions_[{B, T}];
    if (!pos.defined()) {
      std::vector<int> positions(static_cast<std::size_t>(B) * static_cast<std::size_t>(T));
      for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = static_cast<int>(i % static_cast<std::size_t>(T));
      pos = ag::Ids::from_vector({B, T}, positions, device_);
    }
    tokens.positions = pos;
  }
  FullAttention full;
  return forward(tokens, full);
}

ag::Var Decoder::loss(const ag::Ids& idx, const ag::Ids& targets, int B, int T) const {
  return ag::cross_entropy(logits(idx, B, T), targets);
}

void Decoder::zero_grad() const {
  for (const auto& np : params_) np.second.zero_grad();
}

}  // namespace ptk::nn
