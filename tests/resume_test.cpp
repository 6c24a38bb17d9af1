// Bit-exact resume: a run saved at step k, rebuilt from the checkpoint files alone (model, optimizer,
// trainer: nothing carried over in memory) and run to the end, gives bitwise the losses, gradient norms,
// weights and AdamW moments of the same run never interrupted, at several interruption points (the first
// step, inside the warm-up, after it), for gpt2 and llama. Runs on the default device (the GPU in a GPU build) and, in the
// gpu_geometry suite, with the GPU tuning on OpenMP.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ptk/io/safetensors.hpp"
#include "ptk/nn/checkpoint.hpp"
#include "ptk/nn/optimizer.hpp"
#include "ptk/nn/train.hpp"

namespace ptk::test {
namespace {

// A file name of this test and process: ctest runs tests (and the GPU-geometry suite's copies of them) in
// parallel, and a checkpoint's save removes the other training states beside it.
std::string scratch_path(const std::string& name) {
  return testing::TempDir() + "ptk_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
         std::to_string(getpid()) + "_" + name;
}

const ag::Device kDevice = ag::Device::device;

const std::string kText =
    "And God said, Let the waters under the heaven be gathered together unto one place, and let the dry land "
    "appear: and it was so. And God called the dry land Earth; and the gathering together of the waters called "
    "he Seas: and God saw that it was good. And God said, Let the earth bring forth grass, the herb yielding "
    "seed, and the fruit tree yielding fruit after his kind, whose seed is in itself, upon the earth.\n";

struct Trace {
  std::vector<float> losses, norms;
  std::vector<std::vector<float>> weights, moments;
  int skipped = 0;  // f16: steps skipped on overflow (-1: not a scaled run)
};

// Runs trainer to its end, appending to trace; then records the weights and the moments.
void finish(nn::Trainer& trainer, const nn::Decoder& model, const nn::LocalOptimizer& optimizer, Trace& trace) {
  while (!trainer.finished()) {
    const auto r = trainer.step();
    trace.losses.push_back(r.result.loss);
    trace.norms.push_back(r.result.grad_norm);
    trace.skipped += r.result.skipped ? 1 : 0;
  }
  if (!trainer.state().precision.scaled()) trace.skipped = -1;
  for (const auto& p : model.parameters()) trace.weights.push_back(p.second.values());
  for (const auto& m : optimizer.adamw().state()) trace.moments.push_back(m.second.values());
}

// Index of the first element where a and b differ in any bit, -1 if none.
template <class T>
std::ptrdiff_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<std::ptrdiff_t>(i);
  return -1;
}

// precision: the run's (mixed precision); f16 runs start at a loss scale that overflows the first steps, so that
// the interruptions fall before, between and after skipped steps.
void expect_bit_exact_resume(nn::DecoderConfig c, nn::Precision precision = {}) {
  const auto data = nn::Dataset::from_text(kText);
  c.vocab_size = data.vocab.size();
  nn::RunState start;
  start.id = nn::new_run_id();
  start.schedule = {3e-3f, 3e-4f, 4, 24};
  start.batch = 3;
  start.seed = 11;
  start.precision = precision;

  Trace whole;
  {
    const nn::Decoder model(c, kDevice, start.seed);
    nn::LocalOptimizer optimizer(model, nn::AdamwConfig{});
    nn::Trainer trainer(model, optimizer, data.train, start);
    finish(trainer, model, optimizer, whole);
  }
  ASSERT_EQ(whole.losses.size(), 24u);
  if (precision.scaled()) EXPECT_GT(whole.skipped, 0) << "the f16 run overflowed no step: its scale walk is untested";

  const std::string path = scratch_path("resume.safetensors");
  for (const int k : {1, 3, 17}) {
    Trace resumed;
    {
      const nn::Decoder model(c, kDevice, start.seed);
      nn::LocalOptimizer optimizer(model, nn::AdamwConfig{});
      nn::Trainer trainer(model, optimizer, data.train, start);
      while (trainer.state().step < k) {
        const auto r = trainer.step();
        resumed.losses.push_back(r.result.loss);
        resumed.norms.push_back(r.result.grad_norm);
      }
      optimizer.save(path, data.vocab, trainer.state());
    }
    const auto ck = nn::load_checkpoint(path);
    ASSERT_TRUE(ck.training.has_value());
    EXPECT_EQ(ck.step, k);
    EXPECT_EQ(ck.training->run.id, start.id);
    const nn::Decoder model(ck.config, kDevice, /*seed, overwritten by the checkpoint=*/999);
    nn::assign_parameters(model, ck);
    nn::LocalOptimizer optimizer(model, nn::AdamwConfig{});
    optimizer.restore(*ck.training);
    nn::Trainer trainer(model, optimizer, data.train, ck.training->run);
    finish(trainer, model, optimizer, resumed);

    EXPECT_EQ(first_difference(resumed.losses, whole.losses), -1) << "losses, interrupted at step " << k;
    EXPECT_EQ(first_difference(resumed.norms, whole.norms), -1) << "gradient norms, interrupted at step " << k;
    for (std::size_t i = 0; i < whole.weights.size(); ++i) {
      const auto at = first_difference(resumed.weights[i], whole.weights[i]);
      EXPECT_EQ(at, -1) << model.parameters()[i].first << " differs at element " << at << ", interrupted at step " << k;
    }
    for (std::size_t i = 0; i < whole.moments.size(); ++i)
      EXPECT_EQ(first_difference(resumed.moments[i], whole.moments[i]), -1)
          << optimizer.adamw().state()[i].first << ", interrupted at step " << k;
    std::remove(nn::state_path(path, k).c_str());
  }
  std::remove(path.c_str());
}

TEST(Resume, IsBitExactAtAnyStep) { expect_bit_exact_resume(nn::DecoderConfig{2, 2, 16, 16, 0}); }

TEST(Resume, MixedPrecisionIsBitExactAtAnyStep) {
  nn::Precision bf16;
  bf16.dtype = DType::bf16;
  expect_bit_exact_resume(nn::DecoderConfig{2, 2, 16, 16, 0}, bf16);
  nn::DecoderConfig c{2, 4, 16, 16, 0};
  c.arch = nn::Arch::llama;
  c.n_kv_head = 2;
  nn::Precision f16;
  f16.dtype = DType::f16;
  f16.loss_scale = 0x1p24f;  // 2^24 |dlogits| > 65504 for the first steps (dlogits ~ 1 / (B T) = 1 / 48)
  expect_bit_exact_resume(c, f16);
}

TEST(Resume, LlamaIsBitExactAtAnyStep) {
  nn::DecoderConfig c{2, 4, 16, 16, 0};
  c.arch = nn::Arch::llama;
  c.n_kv_head = 2;
  expect_bit_exact_resume(c);
}

// The model file names its training state by step, run and fingerprint: a state of another run or step
// under the expected name, or none at all, is refused (Kind::unpaired) instead of silently mixed in; the
// weights alone still load.
TEST(Resume, RefusesAnUnpairedTrainingState) {
  const auto data = nn::Dataset::from_text(kText);
  const nn::DecoderConfig c{1, 1, 8, 8, data.vocab.size()};
  const std::string a = scratch_path("pair_a.safetensors"), b = scratch_path("pair_b.safetensors");
  const nn::Decoder model(c, kDevice, 1);
  nn::Adamw optimizer(model.parameters(), nn::AdamwConfig{});
  nn::RunState run;
  run.id = "00000000000000aa";
  run.schedule = {1e-3f, 1e-4f, 1, 10};
  run.step = 4;
  nn::save_checkpoint(a, model, data.vocab, optimizer, run);
  run.id = "00000000000000bb";
  nn::save_checkpoint(b, model, data.vocab, optimizer, run);
  // b's state (another run, same step) in place of a's.
  std::rename(nn::state_path(b, 4).c_str(), nn::state_path(a, 4).c_str());
  const auto refused = [&](const char* what) {
    try {
      nn::load_checkpoint(a);
      ADD_FAILURE() << what << ": accepted";
    } catch (const io::SafetensorsError& e) {
      EXPECT_EQ(e.kind(), io::SafetensorsError::Kind::unpaired) << what << ": " << e.what();
    }
  };
  refused("another run's state");
  std::remove(nn::state_path(a, 4).c_str());
  refused("a missing state");
  const auto weights = nn::load_checkpoint(a, /*with_training_state=*/false);
  EXPECT_FALSE(weights.training.has_value());
  EXPECT_EQ(weights.step, 4);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

}  // namespace
}  // namespace ptk::test
