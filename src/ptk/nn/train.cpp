#include "ptk/nn/train.hpp"

#include "ptk/nn/inference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

namespace ptk::nn {

namespace {
ag::Ids ids(const std::vector<int>& values, int B, int T, ag::Device device) {
  return ag::Ids::from_vector({B, T}, values, device);
}
}  // namespace

// One upload (inputs and targets together) and one read-back (the loss and the gradient norm together)
// per step; everything else stays on the device.
StepResult train_step(const Gpt& model, Adamw& optimizer, const Batch& batch, float lr) {
  model.zero_grad();
  const auto io = ag::Ids::from_vectors({batch.B, batch.T}, {&batch.inputs, &batch.targets}, model.device());
  const ag::Var loss = model.loss(io[0], io[1], batch.B, batch.T);
  loss.backward();
  const ag::Var& stats = optimizer.step(lr);
  const auto values = ag::read_together({loss, stats});
  return StepResult{values[0][0], values[1][0]};
}

int default_warmup(int steps) { return std::max(1, std::min(100, steps / 10)); }

std::string new_run_id() {
  std::random_device device;
  const std::uint64_t id = (static_cast<std::uint64_t>(device()) << 32) ^ device();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

Trainer::Trainer(const Gpt& model, Adamw& optimizer, const std::vector<int>& tokens, const RunState& state)
    : model_(model),
      optimizer_(optimizer),
      state_(state),
      sampler_(tokens, state.batch, model.config().block_size, state.seed + 1, state.sampler_draws) {}

StepReport Trainer::step() {
  require(!finished(), "train: the run has done all of its ", state_.schedule.steps, " steps");
  StepReport r;
  r.lr = state_.schedule.at(state_.step);
  r.result = train_step(model_, optimizer_, sampler_.next(), r.lr);
  r.step = ++state_.step;
  state_.sampler_draws = sampler_.draws();
  return r;
}

double evaluate(const Gpt& model, const std::vector<int>& tokens, int batch) {
  const int T = model.config().block_size;
  const auto batches = validation_batches(tokens, batch, T);
  require(!batches.empty(), "evaluate: ", tokens.size(), " validation tokens cannot fill one window of block_size + 1 = ",
          T + 1);
  ag::NoGrad no_grad;
  double total = 0.0;
  std::int64_t positions = 0;
  for (const auto& b : batches) {
    const ag::Var loss =
        model.loss(ids(b.inputs, b.B, T, model.device()), ids(b.targets, b.B, T, model.device()), b.B, T);
    const std::int64_t n = static_cast<std::int64_t>(b.B) * T;
    total += static_cast<double>(loss.item()) * static_cast<double>(n);
    positions += n;
  }
  return total / static_cast<double>(positions);
}

std::string generate(const Gpt& model, const Vocab& vocab, int start, int n, std::uint64_t seed,
                     const std::function<void(unsigned char)>& emit) {
  require(start >= 0 && start < vocab.size(), "generate: start token ", start, " is outside [0, ", vocab.size(), ")");
  GenerateOptions options;
  options.new_tokens = n;
  options.seed = seed;
  options.slide = true;
  std::string out;
  nn::generate(model, {start}, 1, options, [&](int, int token) {
    out += static_cast<char>(vocab.byte(token));
    if (emit) emit(vocab.byte(token));
  });
  return out;
}

}  // namespace ptk::nn
