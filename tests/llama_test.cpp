// The Llama decoder: its parameter names, shapes and configuration checks; one training step through the
// kernels against the same step through the float64 oracle (reference/llama.hpp: logits, loss and every
// parameter gradient) over odd shapes and grouped-query ratios 1, 2, 4; the loss falling; checkpoints of it
// (round trip, resumed step bit-exact) and old GPT-2 checkpoints without the architecture keys.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <unistd.h>

#include "parity.hpp"
#include "ptk/io/safetensors.hpp"
#include "ptk/nn/checkpoint.hpp"
#include "ptk/nn/train.hpp"
#include "ptk/reference/llama.hpp"

namespace ptk::test {
namespace {

const ag::Device kHost = ag::Device::host;

nn::DecoderConfig llama(int layers, int heads, int kv_heads, int width, int block, int vocab) {
  nn::DecoderConfig c{layers, heads, width, block, vocab};
  c.arch = nn::Arch::llama;
  c.n_kv_head = kv_heads;
  return c;
}

std::string refusal(const nn::DecoderConfig& c) {
  try {
    nn::check_config(c);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Llama, ParameterNamesShapesAndCount) {
  const auto c = llama(2, 4, 2, 16, 8, 11);
  const std::int64_t C = 16, V = 11, KV = 2 * 4, F = nn::mlp_hidden(c);
  EXPECT_EQ(F, 64) << "32 * ceil(floor(8 * 16 / 3) / 32) = 32 * ceil(42 / 32)";
  const auto shapes = nn::parameter_shapes(c);
  const std::vector<std::pair<std::string, Shape>> layer0{
      {"model.layers.0.input_layernorm.weight", {C}},         {"model.layers.0.self_attn.q_proj.weight", {C, C}},
      {"model.layers.0.self_attn.k_proj.weight", {KV, C}},    {"model.layers.0.self_attn.v_proj.weight", {KV, C}},
      {"model.layers.0.self_attn.o_proj.weight", {C, C}},     {"model.layers.0.post_attention_layernorm.weight", {C}},
      {"model.layers.0.mlp.gate_proj.weight", {F, C}},        {"model.layers.0.mlp.up_proj.weight", {F, C}},
      {"model.layers.0.mlp.down_proj.weight", {C, F}}};
  ASSERT_EQ(shapes.size(), 1u + 2 * 9 + 2);
  EXPECT_EQ(shapes.front(), (std::pair<std::string, Shape>{"model.embed_tokens.weight", {V, C}}));
  for (std::size_t i = 0; i < layer0.size(); ++i) EXPECT_EQ(shapes[1 + i], layer0[i]) << i;
  EXPECT_EQ(shapes[10].first, "model.layers.1.input_layernorm.weight");
  EXPECT_EQ(shapes[shapes.size() - 2], (std::pair<std::string, Shape>{"model.norm.weight", {C}}));
  EXPECT_EQ(shapes.back(), (std::pair<std::string, Shape>{"lm_head.weight", {V, C}}));
  const nn::Decoder model(c, kHost, 1);
  EXPECT_EQ(model.parameter_count(), 2 * V * C + 2 * (2 * C * C + 2 * KV * C + 3 * F * C + 2 * C) + C);
  // Norm weights start at 1, the rest drawn.
  for (float w : model.parameter("model.layers.1.post_attention_layernorm.weight").values()) EXPECT_EQ(w, 1.0f);
  EXPECT_NE(model.parameter("lm_head.weight").values(), model.parameter("model.embed_tokens.weight").values());
  // The default widths (2/3 of 4C rounded up to a multiple of 32): C = 128 -> 352, 4096 -> 10944.
  EXPECT_EQ(nn::mlp_hidden(llama(1, 4, 0, 128, 8, 5)), 352);
  EXPECT_EQ(nn::mlp_hidden(llama(1, 32, 0, 4096, 8, 5)), 10944);
  auto wide = c;
  wide.ffn_hidden = 24;
  EXPECT_EQ(nn::mlp_hidden(wide), 24);
  EXPECT_EQ(nn::mlp_hidden(nn::DecoderConfig{1, 2, 16, 8, 5}), 64);
  EXPECT_EQ(nn::kv_heads(llama(1, 4, 0, 16, 8, 5)), 4);
}

TEST(Llama, ArchNamesAndConfigRefusals) {
  EXPECT_EQ(nn::to_string(nn::Arch::llama), "llama");
  EXPECT_EQ(nn::parse_arch("gpt2"), nn::Arch::gpt2);
  try {
    nn::parse_arch("mamba");
    ADD_FAILURE() << "parse_arch accepted mamba";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "model: unknown architecture 'mamba' (valid: gpt2, llama)");
  }
  EXPECT_EQ(refusal(llama(1, 4, 3, 16, 8, 5)), "model: n_head = 4 is not a multiple of kv_heads = 3");
  EXPECT_EQ(refusal(llama(1, 4, 8, 16, 8, 5)), "model: n_head = 4 is not a multiple of kv_heads = 8");
  EXPECT_EQ(refusal(llama(1, 4, 0, 12, 8, 5)), "model: llama's head dim n_embd / n_head = 12 / 4 = 3 must be even (rope rotates pairs)");
  nn::DecoderConfig gpt2{1, 4, 16, 8, 5};
  gpt2.n_kv_head = 2;
  EXPECT_EQ(refusal(gpt2), "model: gpt2 has no grouped-query attention: n_kv_head = 2 differs from n_head = 4");
  gpt2.n_kv_head = 4;
  EXPECT_EQ(refusal(gpt2), "accepted");
  gpt2.ffn_hidden = 32;
  EXPECT_EQ(refusal(gpt2), "model: gpt2's MLP width is 4 * n_embd = 64, got ffn_hidden = 32");
  auto c = llama(1, 4, 2, 16, 8, 5);
  c.ffn_hidden = -1;
  EXPECT_EQ(refusal(c), "model: ffn_hidden must be positive (or 0: the default), got -1");
  c = llama(1, 4, 2, 16, 8, 5);
  c.rope_base = 0;
  EXPECT_EQ(refusal(c), "model: rope_base must be positive and finite, got 0");
  c = llama(1, 4, 2, 16, 8, 5);
  c.norm_eps = -1e-5f;
  EXPECT_NE(refusal(c).find("model: norm_eps must be positive"), std::string::npos);
  EXPECT_EQ(refusal(llama(1, 4, 2, 16, 8, 5)), "accepted");
}

std::vector<int> random_tokens(std::size_t n, int V, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<int> t(n);
  for (auto& x : t) x = static_cast<int>(gen() % static_cast<unsigned>(V));
  return t;
}

struct StepCase {
  int B, T, kv_heads;
};

class LlamaStep : public ::testing::TestWithParam<StepCase> {};

TEST_P(LlamaStep, MatchesOracle) {
  const auto p = GetParam();
  auto c = llama(2, 4, p.kv_heads, 16, 17, 13);
  c.rope_base = 500.0f;  // positions up to 16 turn the slow pairs too
  const nn::Decoder model(c, kHost, 7);
  // Larger-than-init weights so that every layer matters to the loss.
  reference::Params params;
  for (const auto& [name, var] : model.parameters()) {
    auto v = uniform(var.numel(), -0.3f, 0.3f, "llama-" + name);
    if (var.shape().size() == 1)
      for (auto& x : v) x += 1.0f;  // rmsnorm gains near 1
    var.assign(v);
    params[name] = std::vector<double>(v.begin(), v.end());
  }
  const auto idx = random_tokens(static_cast<std::size_t>(p.B * p.T), c.vocab_size, 1);
  const auto targets = random_tokens(static_cast<std::size_t>(p.B * p.T), c.vocab_size, 2);
  model.zero_grad();
  const auto ids = ag::Ids::from_vector({p.B, p.T}, idx, kHost), tgt = ag::Ids::from_vector({p.B, p.T}, targets, kHost);
  const auto want = reference::llama_step({c.n_layer, c.n_head, nn::kv_heads(c), c.n_embd, nn::mlp_hidden(c), c.vocab_size,
                                           c.rope_base, c.norm_eps},
                                          params, idx, targets, p.B, p.T);
  {
    ag::NoGrad no_grad;
    double scale = 0;
    for (double x : want.logits) scale = std::max(scale, std::fabs(x));
    const std::vector<float> ref(want.logits.begin(), want.logits.end());
    EXPECT_TRUE(all_close(model.logits(ids, p.B, p.T).values(), ref, {p.B, p.T, c.vocab_size},
                          Tolerance{tolerance::model_step.atol * scale, tolerance::model_step.rtol}))
        << "logits";
  }
  const ag::Var loss = model.loss(ids, tgt, p.B, p.T);
  loss.backward();
  EXPECT_NEAR(loss.item(), want.loss, tolerance::model_step.allowed(want.loss)) << "loss";
  // A parameter whose gradient is zero in exact arithmetic (k_proj at T = 1: one key, softmax's gradient cancels)
  // gets the rounding noise of the cancelling terms, which scale with the model's gradients, not its own (0):
  // its atol is relative to the largest gradient of any parameter.
  double model_scale = 0;
  for (const auto& [name, ref] : want.grads)
    for (double g : ref) model_scale = std::max(model_scale, std::fabs(g));
  for (const auto& [name, var] : model.parameters()) {
    const auto& ref = want.grads.at(name);
    double scale = 0;
    for (double g : ref) scale = std::max(scale, std::fabs(g));
    if (scale == 0) scale = model_scale;
    const std::vector<float> ref_f(ref.begin(), ref.end());
    const Tolerance tol{tolerance::model_step.atol * scale, tolerance::model_step.rtol};
    EXPECT_TRUE(all_close(var.grad(), ref_f, var.shape(), tol)) << "gradient of " << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LlamaStep,
                         ::testing::Values(StepCase{1, 1, 4}, StepCase{2, 3, 2}, StepCase{3, 17, 1}, StepCase{2, 17, 4},
                                           StepCase{1, 17, 2}, StepCase{3, 1, 1}),
                         [](const auto& info) {
                           return "B" + std::to_string(info.param.B) + "_T" + std::to_string(info.param.T) + "_kv" +
                                  std::to_string(info.param.kv_heads);
                         });

const std::string kText =
    "In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
    "darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. And God "
    "said, Let there be light: and there was light. And God saw the light, that it was good: and God divided "
    "the light from the darkness. And God called the light Day, and the darkness he called Night.\n";

TEST(Llama, LossFallsBelowUniformGuess) {
  const auto data = nn::Dataset::from_text(kText);
  const auto c = llama(1, 4, 2, 32, 16, data.vocab.size());
  const nn::Decoder model(c, kHost, 1);
  nn::Adamw optimizer(model.parameters(), nn::AdamwConfig{});
  nn::BatchSampler sampler(data.train, 8, c.block_size, 2);
  std::vector<float> losses;
  for (int i = 0; i < 60; ++i) losses.push_back(nn::train_step(model, optimizer, sampler.next(), 3e-3f).loss);
  const double uniform_loss = std::log(static_cast<double>(data.vocab.size()));
  EXPECT_NEAR(losses.front(), uniform_loss, 0.2) << "a fresh model guesses about uniformly";
  EXPECT_LT(losses.back(), 0.75 * uniform_loss) << "60 steps on a 450-byte text must learn something";
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "ptk_llama_" + std::to_string(getpid()) + "_" + name;
}

TEST(Llama, CheckpointRoundTripAndResumedStep) {
  const auto data = nn::Dataset::from_text(kText);
  auto c = llama(2, 4, 2, 16, 16, data.vocab.size());
  c.ffn_hidden = 40;
  c.rope_base = 321.5f;
  c.norm_eps = 1e-6f;
  const nn::Decoder model(c, kHost, 5);
  nn::Adamw optimizer(model.parameters(), nn::AdamwConfig{});
  nn::BatchSampler sampler(data.train, 2, c.block_size, 6);
  for (int i = 0; i < 3; ++i) nn::train_step(model, optimizer, sampler.next(), 1e-3f);
  const std::string path = temp_path("ck.safetensors");
  nn::RunState run;
  run.id = "0123456789abcdef";
  run.step = 3;
  run.schedule = {1e-3f, 1e-4f, 1, 10};
  nn::save_checkpoint(path, model, data.vocab, optimizer, run);

  const auto st = io::read_safetensors(path);
  EXPECT_EQ(st.metadata.at("arch"), "llama");
  EXPECT_EQ(st.metadata.at("n_kv_head"), "2");
  EXPECT_EQ(st.metadata.at("ffn_hidden"), "40");
  EXPECT_EQ(st.tensors.at("model.layers.1.self_attn.k_proj.weight").shape, (Shape{8, 16}));
  EXPECT_EQ(st.tensors.at("lm_head.weight").shape, (Shape{data.vocab.size(), 16}));

  const auto ck = nn::load_checkpoint(path);
  EXPECT_EQ(ck.config.arch, nn::Arch::llama);
  EXPECT_EQ(ck.config.n_kv_head, 2);
  EXPECT_EQ(ck.config.ffn_hidden, 40);
  EXPECT_EQ(ck.config.rope_base, 321.5f);
  EXPECT_EQ(ck.config.norm_eps, 1e-6f);
  const nn::Decoder loaded(ck.config, kHost, 99);
  nn::assign_parameters(loaded, ck);
  for (const auto& [name, var] : model.parameters()) EXPECT_EQ(var.values(), loaded.parameter(name).values()) << name;
  EXPECT_EQ(nn::evaluate(model, data.val, 4), nn::evaluate(loaded, data.val, 4));
  nn::Adamw restored(loaded.parameters(), nn::AdamwConfig{});
  ASSERT_TRUE(ck.training.has_value());
  nn::restore_optimizer(restored, *ck.training);
  const auto batch = sampler.next();
  EXPECT_EQ(nn::train_step(model, optimizer, batch, 1e-3f).loss, nn::train_step(loaded, restored, batch, 1e-3f).loss);
  for (const auto& [name, var] : model.parameters()) EXPECT_EQ(var.values(), loaded.parameter(name).values()) << name;
  std::remove(path.c_str());
  std::remove(nn::state_path(path, 3).c_str());
}

// A model file written before the architecture keys existed (none of arch, n_kv_head, ffn_hidden, rope_base,
// norm_eps) loads as gpt2.
TEST(Llama, CheckpointWithoutArchIsGpt2) {
  const auto data = nn::Dataset::from_text(kText);
  const nn::DecoderConfig c{1, 2, 16, 16, data.vocab.size()};
  const nn::Decoder model(c, kHost, 5);
  const std::string path = temp_path("old.safetensors");
  nn::save_model(path, model, data.vocab, 0);
  auto st = io::read_safetensors(path);
  EXPECT_EQ(st.metadata.at("arch"), "gpt2");
  EXPECT_EQ(st.metadata.at("n_kv_head"), "2");
  EXPECT_EQ(st.metadata.at("ffn_hidden"), "64");
  for (const char* key : {"arch", "n_kv_head", "ffn_hidden", "rope_base", "norm_eps"}) st.metadata.erase(key);
  io::write_safetensors(path, st);
  const auto ck = nn::load_checkpoint(path);
  EXPECT_EQ(ck.config.arch, nn::Arch::gpt2);
  EXPECT_EQ(nn::kv_heads(ck.config), 2);
  EXPECT_EQ(nn::mlp_hidden(ck.config), 64);
  EXPECT_EQ(ck.parameters.front().first, "wte.weight");
  st.metadata["arch"] = "mamba";
  io::write_safetensors(path, st);
  try {
    nn::load_checkpoint(path);
    ADD_FAILURE() << "an unknown arch was accepted";
  } catch (const io::SafetensorsError& e) {
    EXPECT_EQ(e.kind(), io::SafetensorsError::Kind::foreign) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown architecture 'mamba'"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ptk::test
