// The GPT model: one training step through the kernels against the same step through the float64 oracle
// (loss and every parameter gradient), seed reproducibility, flat resident memory over 1000 steps, the loss
// falling, and checkpoints (round trip, and truncated / corrupted / foreign files refused).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "parity.hpp"
#include "ptk/io/safetensors.hpp"
#include "ptk/nn/checkpoint.hpp"
#include "ptk/nn/train.hpp"
#include "ptk/reference/gpt.hpp"

namespace ptk::test {
namespace {

const ag::Device kHost = ag::Device::host;

std::int64_t count(const nn::DecoderConfig& c) {
  std::int64_t n = 0;
  for (const auto& p : nn::parameter_shapes(c)) n += element_count(p.second);
  return n;
}

TEST(Gpt, ParameterShapesMatchGpt2) {
  // GPT-2 small, counted by hand in memory_estimate_test.cpp: 124,439,808.
  EXPECT_EQ(count({12, 12, 768, 1024, 50257}), 124439808);
  const nn::DecoderConfig c{2, 2, 8, 6, 11};
  const std::int64_t C = 8;
  EXPECT_EQ(count(c), 11 * C + 6 * C + 2 * (12 * C * C + 13 * C) + 2 * C);
  const auto shapes = nn::parameter_shapes(c);
  EXPECT_EQ(shapes.front().first, "wte.weight");
  EXPECT_EQ(shapes[4].first, "h.0.attn.c_attn.weight");
  EXPECT_EQ(shapes[4].second, (Shape{3 * C, C}));
  EXPECT_THROW(nn::parameter_shapes({2, 3, 8, 6, 11}), ptk::Error);  // 8 % 3 != 0
}

std::vector<int> random_tokens(std::size_t n, int V, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<int> t(n);
  for (auto& x : t) x = static_cast<int>(gen() % static_cast<unsigned>(V));
  return t;
}

TEST(Gpt, OneStepMatchesOracle) {
  const nn::DecoderConfig c{2, 2, 16, 9, 13};
  const int B = 3, T = 7;  // T < block_size: positions 7, 8 of wpe get no gradient
  const nn::Decoder model(c, kHost, 7);
  // Larger-than-init weights so that every layer matters to the loss.
  reference::Params params;
  for (const auto& [name, var] : model.parameters()) {
    auto v = uniform(var.numel(), -0.3f, 0.3f, "gpt-" + name);
    if (var.shape().size() == 1 && name.find("weight") != std::string::npos)
      for (auto& x : v) x += 1.0f;  // layernorm gains near 1
    var.assign(v);
    params[name] = std::vector<double>(v.begin(), v.end());
  }
  const auto idx = random_tokens(B * T, c.vocab_size, 1), targets = random_tokens(B * T, c.vocab_size, 2);
  model.zero_grad();
  const ag::Var loss = model.loss(ag::Ids::from_vector({B, T}, idx, kHost), ag::Ids::from_vector({B, T}, targets, kHost), B, T);
  loss.backward();
  const auto want = reference::gpt_step({c.n_layer, c.n_head, c.n_embd, c.block_size, c.vocab_size}, params, idx, targets, B, T);
  EXPECT_NEAR(loss.item(), want.loss, tolerance::model_step.allowed(want.loss)) << "loss";
  for (const auto& [name, var] : model.parameters()) {
    const auto& ref = want.grads.at(name);
    double scale = 0;
    for (double g : ref) scale = std::max(scale, std::fabs(g));
    const std::vector<float> ref_f(ref.begin(), ref.end());
    const Tolerance tol{tolerance::model_step.atol * scale, tolerance::model_step.rtol};
    EXPECT_TRUE(all_close(var.grad(), ref_f, var.shape(), tol)) << "gradient of " << name;
  }
}

const std::string kText =
    "In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
    "darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. And God "
    "said, Let there be light: and there was light. And God saw the light, that it was good: and God divided "
    "the light from the darkness. And God called the light Day, and the darkness he called Night.\n";

std::vector<float> train_losses(const nn::Dataset& data, const nn::DecoderConfig& c, int steps, int B, std::uint64_t seed) {
  const nn::Decoder model(c, kHost, seed);
  nn::Adamw optimizer(model.parameters(), nn::AdamwConfig{});
  nn::BatchSampler sampler(data.train, B, c.block_size, seed + 1);
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) losses.push_back(nn::train_step(model, optimizer, sampler.next(), 3e-3f).loss);
  return losses;
}

TEST(Gpt, SameSeedSameLossCurve) {
  const auto data = nn::Dataset::from_text(kText);
  const nn::DecoderConfig c{2, 2, 16, 16, data.vocab.size()};
  const auto a = train_losses(data, c, 8, 4, 42), b = train_losses(data, c, 8, 4, 42), d = train_losses(data, c, 8, 4, 43);
  EXPECT_EQ(a, b) << "same seed, build and thread count must give bitwise the same losses";
  EXPECT_NE(a, d) << "a different seed must draw different weights and batches";
}

TEST(Gpt, LossFallsBelowUniformGuess) {
  const auto data = nn::Dataset::from_text(kText);
  const nn::DecoderConfig c{1, 2, 32, 16, data.vocab.size()};
  const auto losses = train_losses(data, c, 150, 8, 1);
  const double uniform_loss = std::log(static_cast<double>(data.vocab.size()));
  EXPECT_NEAR(losses.front(), uniform_loss, 0.2) << "a fresh model guesses about uniformly";
  EXPECT_LT(losses.back(), 0.6 * uniform_loss) << "150 steps on a 450-byte text must learn something";
}

long resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

TEST(Gpt, ResidentMemoryFlatOver1000Steps) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory in quarantine, so RSS grows by design";
#endif
  const auto data = nn::Dataset::from_text(kText);
  const nn::DecoderConfig c{1, 2, 16, 8, data.vocab.size()};
  const nn::Decoder model(c, kHost, 3);
  nn::Adamw optimizer(model.parameters(), nn::AdamwConfig{});
  nn::BatchSampler sampler(data.train, 2, c.block_size, 4);
  long after_warmup = 0;
  for (int i = 0; i < 1000; ++i) {
    nn::train_step(model, optimizer, sampler.next(), 1e-3f);
    if (i == 99) after_warmup = resident_kib();
  }
  const long growth = resident_kib() - after_warmup;
  ASSERT_GT(after_warmup, 0) << "cannot read VmRSS";
  // A leaked graph would keep every step's activations: ~40 KB a step here, 36 MB over 900 steps.
  EXPECT_LT(growth, 2048) << "RSS grew by " << growth << " KiB between step 100 and step 1000";
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "ptk_" + std::to_string(getpid()) + "_" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST(Gpt, CheckpointRoundTrip) {
  const auto data = nn::Dataset::from_text(kText);
  const nn::DecoderConfig c{2, 2, 16, 16, data.vocab.size()};
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

  const auto ck = nn::load_checkpoint(path);
  EXPECT_EQ(ck.step, 3);
  EXPECT_EQ(ck.vocab.bytes(), data.vocab.bytes());
  EXPECT_EQ(ck.config.n_layer, 2);
  EXPECT_EQ(ck.config.vocab_size, data.vocab.size());
  const nn::Decoder loaded(ck.config, kHost, 99);
  nn::assign_parameters(loaded, ck);
  for (const auto& [name, var] : model.parameters()) EXPECT_EQ(var.values(), loaded.parameter(name).values()) << name;
  EXPECT_EQ(nn::evaluate(model, data.val, 4), nn::evaluate(loaded, data.val, 4));
  nn::Adamw restored(loaded.parameters(), nn::AdamwConfig{});
  ASSERT_TRUE(ck.training.has_value());
  nn::restore_optimizer(restored, *ck.training);
  EXPECT_EQ(restored.steps_taken(), 3);
  // The next step from the restored state equals the next step of the original run.
  const auto batch = sampler.next();
  EXPECT_EQ(nn::train_step(model, optimizer, batch, 1e-3f).loss, nn::train_step(loaded, restored, batch, 1e-3f).loss);
  for (const auto& [name, var] : model.parameters()) EXPECT_EQ(var.values(), loaded.parameter(name).values()) << name;

  // The file is standard safetensors with the names, shapes and metadata of the contract.
  const auto st = io::read_safetensors(path);
  EXPECT_EQ(st.tensors.at("h.1.mlp.c_proj.weight").shape, (Shape{16, 64}));
  EXPECT_EQ(st.metadata.at("n_head"), "2");
  EXPECT_EQ(st.metadata.at("block_size"), "16");
  EXPECT_EQ(st.metadata.count("crc32"), 1u);

  const std::string bytes = slurp(path);
  const auto expect_kind = [&](const std::string& contents, io::SafetensorsError::Kind kind, const char* what) {
    const std::string bad = temp_path("bad.safetensors");
    spit(bad, contents);
    try {
      nn::load_checkpoint(bad);
      ADD_FAILURE() << what << " checkpoint was accepted";
    } catch (const io::SafetensorsError& e) {
      EXPECT_EQ(e.kind(), kind) << what << ": " << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
    }
    std::remove(bad.c_str());
  };
  expect_kind(bytes.substr(0, bytes.size() - 100), io::SafetensorsError::Kind::truncated, "a truncated");
  std::string flipped = bytes;
  flipped[flipped.size() - 5] ^= 0x10;
  expect_kind(flipped, io::SafetensorsError::Kind::corrupted, "a corrupted");
  expect_kind(slurp(nn::state_path(path, 3)), io::SafetensorsError::Kind::foreign, "a training-state (not a model)");
  expect_kind("\x93NUMPY not a checkpoint at all, just some bytes", io::SafetensorsError::Kind::foreign, "a foreign");
  std::remove(path.c_str());
  std::remove(nn::state_path(path, 3).c_str());
}

}  // namespace
}  // namespace ptk::test
