#include "ptk/nn/train.hpp"

#include "ptk/nn/inference.hpp"
#include "ptk/nn/optimizer.hpp"

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
StepResult train_step(const Decoder& model, Adamw& optimizer, const Batch& batch, float lr) {
  Precision f32;
  return train_step(model, optimizer, batch, lr, f32);
}

StepResult train_step(const Decoder& model, Adamw& optimizer, const Batch& batch, float lr, Precision& precision) {
  model.zero_grad();
  const auto io = ag::Ids::from_vectors({batch.B, batch.T}, {&batch.inputs, &batch.targets}, model.device());
  ag::Var loss;
  {
    ag::Autocast autocast(precision.dtype);
    loss = model.loss(io[0], io[1], batch.B, batch.T);
  }
  const float scale = precision.scaled() ? precision.loss_scale : 1.0f;
  loss.backward_scaled(scale);
  // The skip is decided on the device (stats[2]); the update reads it there, so nothing waits for it here.
  const ag::Var& stats = optimizer.step(lr, 1.0f / scale, precision.scaled());
  const auto values = ag::read_together({loss, stats});
  StepResult r{values[0][0], values[1][0], false, scale};
  if (precision.scaled()) {
    r.skipped = values[1][2] != 0.0f;
    if (r.skipped) optimizer.take_back_step();
    precision.update(r.skipped);
  }
  return r;
}

void Precision::update(bool overflow) {
  if (overflow) {
    loss_scale *= 0.5f;
    good_steps = 0;
    // Below f16's smallest normal the scale is not what overflows: the gradients themselves are inf or NaN.
    require(loss_scale >= 0x1p-14f, "train: f16 gradients overflowed at every loss scale from 2^16 down to 2^-14; ",
            "the run diverged (a smaller --lr, or --dtype bf16, which has fp32's range)");
  } else if (++good_steps == growth_interval) {
    loss_scale *= 2.0f;
    good_steps = 0;
  }
}

StepResult train_step(const Decoder& model, DataParallelAdamw& optimizer, dist::Comm& comm, const Batch& batch, float lr,
                      bool& stop) {
  const Share share = batch_share(batch.B, comm.rank(), comm.size());
  const Batch local = slice_batch(batch, share);
  model.zero_grad();
  const auto io = ag::Ids::from_vectors({local.B, local.T}, {&local.inputs, &local.targets}, model.device());
  const ag::Var loss = model.loss(io[0], io[1], local.B, local.T);
  const double weight = static_cast<double>(share.size()) / static_cast<double>(batch.B);
  if (optimizer.overlaps()) loss.backward(optimizer.backward_hook(static_cast<float>(weight)));
  else loss.backward();
  std::vector<double> sums{static_cast<double>(loss.item()) * weight, stop ? 1.0 : 0.0};
  const float norm = optimizer.step(lr, static_cast<float>(weight), sums);
  stop = sums[1] > 0.0;
  return StepResult{static_cast<float>(sums[0]), norm};
}

int default_warmup(int steps) { return std::max(1, std::min(100, steps / 10)); }

std::string new_run_id() {
  std::random_device device;
  const std::uint64_t id = (static_cast<std::uint64_t>(device()) << 32) ^ device();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

Trainer::Trainer(const Decoder& model, Optimizer& optimizer, const std::vector<int>& tokens, const RunState& state)
    : optimizer_(optimizer),
      state_(state),
      sampler_(tokens, state.batch, model.config().block_size, state.seed + 1, state.sampler_draws) {}

StepReport Trainer::step(bool stop_requested) {
  require(!finished(), "train: the run has done all of its ", state_.schedule.steps, " steps");
  StepReport r;
  r.lr = state_.schedule.at(state_.step);
  r.stop = stop_requested;
  r.result = optimizer_.step(sampler_.next(), r.lr, state_.precision, r.stop);
  r.step = ++state_.step;
  state_.sampler_draws = sampler_.draws();
  return r;
}

double evaluate(const Decoder& model, const std::vector<int>& tokens, int batch, dist::Comm* comm) {
  const int T = model.config().block_size;
  const auto batches = validation_batches(tokens, batch, T);
  require(!batches.empty(), "evaluate: ", tokens.size(), " validation tokens cannot fill one window of block_size + 1 = ",
          T + 1);
  ag::NoGrad no_grad;
  const int rank = comm != nullptr ? comm->rank() : 0, ranks = comm != nullptr ? comm->size() : 1;
  double sums[2] = {0.0, 0.0};  // loss x positions, positions
  for (std::size_t i = static_cast<std::size_t>(rank); i < batches.size(); i += static_cast<std::size_t>(ranks)) {
    const auto& b = batches[i];
    const ag::Var loss =
        model.loss(ids(b.inputs, b.B, T, model.device()), ids(b.targets, b.B, T, model.device()), b.B, T);
    const double n = static_cast<double>(b.B) * T;
    sums[0] += static_cast<double>(loss.item()) * n;
    sums[1] += n;
  }
  if (comm != nullptr) comm->allreduce_sum(sums, 2);
  return sums[0] / sums[1];
}

std::string generate(const Decoder& model, const Vocab& vocab, int start, int n, std::uint64_t seed,
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
