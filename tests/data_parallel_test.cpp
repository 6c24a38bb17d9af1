// Data-parallel pieces that run in one process (tests/distributed_test.sh runs the ranks under mpirun): the batch
// shares, the start-up agreement's comparison, the flat parameter buffers and their AdamW against ag::adamw_update,
// and the data-parallel optimizer on a one-rank world against Adamw, also through the one optimizer interface.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "ptk/autograd/flat.hpp"
#include "ptk/dist/comm.hpp"
#include "ptk/nn/checkpoint.hpp"
#include "ptk/nn/data_parallel.hpp"
#include "ptk/nn/optimizer.hpp"
#include "ptk/nn/train.hpp"

namespace {

using namespace ptk;

TEST(DataParallel, BatchSharesCoverTheBatchOnce) {
  for (int B : {1, 2, 3, 7, 16, 33})
    for (int N = 1; N <= B && N <= 9; ++N) {
      int next = 0;
      for (int r = 0; r < N; ++r) {
        const nn::Share s = nn::batch_share(B, r, N);
        EXPECT_EQ(s.begin, next) << "B=" << B << " N=" << N << " r=" << r;
        EXPECT_TRUE(s.size() == B / N || s.size() == B / N + 1) << "B=" << B << " N=" << N << " r=" << r;
        next = s.end;
      }
      EXPECT_EQ(next, B) << "B=" << B << " N=" << N;
    }
  EXPECT_THROW(nn::batch_share(1, 0, 2), Error);
  EXPECT_THROW(nn::batch_share(4, 2, 2), Error);
}

TEST(DataParallel, SliceBatchTakesItsWindows) {
  nn::Batch b;
  b.B = 3;
  b.T = 2;
  b.inputs = {0, 1, 2, 3, 4, 5};
  b.targets = {10, 11, 12, 13, 14, 15};
  const nn::Batch s = nn::slice_batch(b, nn::Share{1, 3});
  EXPECT_EQ(s.B, 2);
  EXPECT_EQ(s.inputs, (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(s.targets, (std::vector<int>{12, 13, 14, 15}));
  EXPECT_THROW(nn::slice_batch(b, nn::Share{2, 4}), Error);
}

TEST(DataParallel, FirstDifferenceNamesKeyAndValues) {
  const std::vector<std::pair<std::string, std::string>> a{{"ptk", "0.1.0"}, {"steps", "5"}}, b{{"ptk", "0.1.0"}, {"steps", "6"}};
  EXPECT_EQ(dist::first_difference(a, a), "");
  EXPECT_EQ(dist::first_difference(a, b), "steps: 5 vs 6");
  EXPECT_EQ(dist::first_difference(a, {{"ptk", "0.1.0"}}), "steps: 5 vs (missing)");
  EXPECT_EQ(dist::first_difference({{"ptk", "0.1.0"}}, a), "steps: (missing) vs 5");
  // A one-rank world agrees with itself without a collective.
  EXPECT_NO_THROW(dist::require_same_configuration(dist::Comm::world(), a));
}

nn::Decoder small_model(std::uint64_t seed) {
  nn::DecoderConfig c;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 16;
  c.block_size = 8;
  c.vocab_size = 11;
  return nn::Decoder(c, ag::Device::device, seed);
}

nn::Batch random_batch(int B, int T, int V, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  nn::Batch b;
  b.B = B;
  b.T = T;
  for (int i = 0; i < B * T; ++i) {
    b.inputs.push_back(static_cast<int>(rng() % static_cast<std::uint64_t>(V)));
    b.targets.push_back(static_cast<int>(rng() % static_cast<std::uint64_t>(V)));
  }
  return b;
}

void backward(const nn::Decoder& model, const nn::Batch& b) {
  model.zero_grad();
  const auto io = ag::Ids::from_vectors({b.B, b.T}, {&b.inputs, &b.targets}, model.device());
  model.loss(io[0], io[1], b.B, b.T).backward();
}

TEST(DataParallel, FlatParametersKeepValuesAndTakeGradients) {
  const nn::Decoder model = small_model(3), same = small_model(3);
  std::vector<ag::Var> vars;
  for (const auto& np : model.parameters()) vars.push_back(np.second);
  const ag::FlatParameters flat(vars);
  for (std::size_t i = 0; i < vars.size(); ++i) EXPECT_EQ(vars[i].values(), same.parameters()[i].second.values());
  const nn::Batch b = random_batch(2, 8, 11, 5);
  backward(model, b);
  backward(same, b);
  double squares = 0;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const auto g = same.parameters()[i].second.grad();
    EXPECT_EQ(vars[i].grad(), g) << model.parameters()[i].first;
    for (float x : g) squares += static_cast<double>(x) * x;
  }
  EXPECT_NEAR(flat.grad_squares(0, flat.size()), squares, 1e-12 * squares);
  flat.scale_grads(0, flat.size(), 0.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(flat.grad_squares(0, flat.size())), static_cast<float>(squares / 4));
}

// The flat AdamW over the whole range, and over two halves (a sharded update), against ag::adamw_update per
// parameter: the same kernel on the same floats, so the same bits.
TEST(DataParallel, FlatAdamwEqualsPerParameterAdamw) {
  const nn::Decoder a = small_model(7), b = small_model(7), c = small_model(7);
  const nn::Batch batch = random_batch(3, 8, 11, 9);
  for (const auto* m : {&a, &b, &c}) backward(*m, batch);
  std::vector<ag::Var> vb, vc;
  std::vector<float> decay;
  for (std::size_t i = 0; i < a.parameters().size(); ++i) {
    vb.push_back(b.parameters()[i].second);
    vc.push_back(c.parameters()[i].second);
    decay.push_back(a.parameters()[i].second.shape().size() == 2 ? 0.1f : 0.0f);
  }
  const ag::FlatParameters fb(vb), fc(vc);
  const ag::Var stats = ag::Var::from_vector({2}, {1.0f, 0.75f}, a.device());
  const ag::AdamwStep step{1e-2f, 0.9f, 0.95f, 1e-8f, 0.0f, 0.1f, 0.05f};
  for (std::size_t i = 0; i < a.parameters().size(); ++i) {
    const ag::Var& p = a.parameters()[i].second;
    ag::AdamwStep s = step;
    s.weight_decay = decay[i];
    ag::adamw_update(p, ag::Var::zeros(p.shape(), p.device()), ag::Var::zeros(p.shape(), p.device()), s, stats);
  }
  const std::int64_t n = fb.size(), half = n / 2 + 3;
  fb.adamw(0, n, ag::Var::zeros({n}, a.device()), ag::Var::zeros({n}, a.device()), step, decay, stats);
  fc.adamw(0, half, ag::Var::zeros({half}, a.device()), ag::Var::zeros({half}, a.device()), step, decay, stats);
  fc.adamw(half, n, ag::Var::zeros({n - half}, a.device()), ag::Var::zeros({n - half}, a.device()), step, decay, stats);
  for (std::size_t i = 0; i < a.parameters().size(); ++i) {
    EXPECT_EQ(vb[i].values(), a.parameters()[i].second.values()) << a.parameters()[i].first;
    EXPECT_EQ(vc[i].values(), a.parameters()[i].second.values()) << a.parameters()[i].first;
  }
}

// In a one-rank world the data-parallel optimizer is AdamW: the same trajectory (the gradient norm is summed in
// another order, so within rounding), and its state round-trips through Adamw's names.
TEST(DataParallel, OneRankOptimizerFollowsAdamw) {
  const nn::Decoder a = small_model(11), b = small_model(11);
  nn::Adamw adamw(a.parameters(), nn::AdamwConfig{});
  nn::DataParallelAdamw parallel(b, nn::AdamwConfig{}, dist::Comm::world(), nn::DataParallelOptions{});
  bool stop = false;
  for (int s = 0; s < 3; ++s) {
    const nn::Batch batch = random_batch(4, 8, 11, 100 + static_cast<std::uint64_t>(s));
    const nn::StepResult ra = nn::train_step(a, adamw, batch, 1e-2f);
    const nn::StepResult rb = nn::train_step(b, parallel, dist::Comm::world(), batch, 1e-2f, stop);
    EXPECT_NEAR(rb.loss, ra.loss, 1e-5f * ra.loss) << "step " << s;
    EXPECT_NEAR(rb.grad_norm, ra.grad_norm, 1e-5f * ra.grad_norm) << "step " << s;
  }
  EXPECT_FALSE(stop);
  for (std::size_t i = 0; i < a.parameters().size(); ++i) {
    const auto x = a.parameters()[i].second.values(), y = b.parameters()[i].second.values();
    for (std::size_t j = 0; j < x.size(); ++j)
      ASSERT_NEAR(y[j], x[j], 1e-5f + 1e-4f * std::abs(x[j])) << a.parameters()[i].first << "[" << j << "]";
  }
  // The gathered moments load into a second data-parallel optimizer and come back the same.
  const nn::NamedParameters state = parallel.gathered_state();
  ASSERT_EQ(state.size(), 2 * b.parameters().size());
  std::vector<std::pair<std::string, std::vector<float>>> tensors;
  for (const auto& np : state) tensors.emplace_back(np.first, np.second.values());
  const nn::Decoder c = small_model(11);
  nn::DataParallelAdamw again(c, nn::AdamwConfig{}, dist::Comm::world(), nn::DataParallelOptions{true, 64});
  again.load_state(tensors, parallel.steps_taken());
  const nn::NamedParameters back = again.gathered_state();
  for (std::size_t i = 0; i < state.size(); ++i) EXPECT_EQ(back[i].second.values(), state[i].second.values()) << state[i].first;
  tensors.pop_back();
  EXPECT_THROW(again.load_state(tensors, 1), Error);
}

// nn::Optimizer over both (nn/optimizer.hpp): on one rank, nn::Trainer with the data-parallel optimizer follows the
// one with AdamW (within rounding, as above); only the data-parallel one times collectives and waits for a step to
// stop (on one rank a stop request comes back from either step as it went in); a checkpoint it saves continues in
// AdamW with the same moments.
TEST(DataParallel, TrainerRunsEitherOptimizer) {
  std::mt19937_64 rng(21);
  std::string text(3000, 'a');
  for (auto& c : text) c = static_cast<char>('a' + rng() % 11);
  const auto data = nn::Dataset::from_text(text);
  ASSERT_EQ(data.vocab.size(), 11);
  const nn::Decoder a = small_model(13), b = small_model(13);
  nn::LocalOptimizer local(a, nn::AdamwConfig{});
  nn::DataParallelOptimizer parallel(b, nn::AdamwConfig{}, dist::Comm::world(), nn::DataParallelOptions{});
  EXPECT_TRUE(local.stops_alone());
  EXPECT_FALSE(parallel.stops_alone());
  EXPECT_FALSE(local.take_comm_ms().has_value());
  EXPECT_TRUE(parallel.take_comm_ms().has_value());
  nn::RunState run;
  run.id = nn::new_run_id();
  run.schedule = {1e-2f, 1e-3f, 2, 6};
  run.batch = 4;
  run.seed = 5;
  nn::Trainer ta(a, local, data.train, run), tb(b, parallel, data.train, run);
  while (!ta.finished()) {
    const bool stop = ta.state().step == 4;
    const nn::StepReport ra = ta.step(stop), rb = tb.step(stop);
    EXPECT_EQ(ra.step, rb.step);
    EXPECT_EQ(ra.stop, stop);
    EXPECT_EQ(rb.stop, stop);
    EXPECT_NEAR(rb.result.loss, ra.result.loss, 1e-5f * ra.result.loss) << "step " << ra.step;
  }
  EXPECT_TRUE(tb.finished());
  EXPECT_NEAR(parallel.evaluate(data.val, 2), local.evaluate(data.val, 2), 1e-5 * local.evaluate(data.val, 2));

  const std::string path = testing::TempDir() + "ptk_either_optimizer_" + std::to_string(getpid()) + ".safetensors";
  parallel.save(path, data.vocab, tb.state());
  const nn::Checkpoint ck = nn::load_checkpoint(path);
  ASSERT_TRUE(ck.training.has_value());
  EXPECT_EQ(ck.training->run.step, 6);
  const nn::Decoder c = small_model(99);
  nn::assign_parameters(c, ck);
  nn::LocalOptimizer again(c, nn::AdamwConfig{});
  again.restore(*ck.training);
  EXPECT_EQ(again.adamw().steps_taken(), 6);
  const nn::NamedParameters moments = parallel.adamw().gathered_state(), restored = again.adamw().state();
  ASSERT_EQ(restored.size(), moments.size());
  for (std::size_t i = 0; i < moments.size(); ++i) EXPECT_EQ(restored[i].second.values(), moments[i].second.values()) << moments[i].first;
  std::remove(path.c_str());
  std::remove(nn::state_path(path, 6).c_str());
}

}  // namespace
