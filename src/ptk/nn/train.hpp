#pragma once
// The pieces of a training run that `ptk train` and the tests share (no Kokkos here).
//
// A run is its settings (schedule, batch, seed) and its position (step, the sampler's draws): RunState. With
// the model's weights and the optimizer's moments it is everything a run needs to continue, so a run saved
// at any step and resumed prints the same losses and ends with the same bits as one never interrupted
// (checkpoint.hpp stores it; tests/resume_test.cpp and tests/train_cli_test.sh check it).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ptk/dist/comm.hpp"
#include "ptk/nn/adamw.hpp"
#include "ptk/nn/data.hpp"
#include "ptk/nn/data_parallel.hpp"
#include "ptk/nn/decoder.hpp"

namespace ptk::nn {

struct StepResult {
  float loss = 0.0f;       // the batch's mean cross-entropy before the update
  float grad_norm = 0.0f;  // global gradient norm before clipping (unscaled; inf or NaN on a skipped step)
  bool skipped = false;    // f16: the scaled gradients overflowed, nothing was updated and the scale halved
  float loss_scale = 1.0f; // the scale this step's loss was multiplied by
};

// Mixed precision (`ptk train --dtype`): the linear layers multiply in `dtype` (ag::Autocast: inputs, weights and
// output gradients rounded to bf16 or f16, fp32 accumulation) while the weights, AdamW's moments, the other ops and
// the loss stay fp32. f16 also scales the loss (PyTorch GradScaler's rule): the backward pass starts from
// loss_scale, the update divides it out; a step whose gradient norm is not finite is skipped and halves the scale,
// growth_interval good steps in a row double it. Part of the run's state: a resumed run continues the same scale.
struct Precision {
  DType dtype = DType::f32;
  float loss_scale = 65536.0f;  // f16 only (2^16, GradScaler's initial scale)
  int good_steps = 0;           // f16: finite steps since the scale last changed
  static constexpr int growth_interval = 2000;
  bool scaled() const { return dtype == DType::f16; }
  void update(bool overflow);  // after a step under the scale; an Error once the scale falls below 2^-14
};

// zero_grad, forward, backward, AdamW update at learning rate lr (in `precision`, updated when it scales the loss).
StepResult train_step(const Decoder& model, Adamw& optimizer, const Batch& batch, float lr);
StepResult train_step(const Decoder& model, Adamw& optimizer, const Batch& batch, float lr, Precision& precision);
// The same step over the ranks of comm: this rank trains on its share of the global batch (nn/data_parallel.hpp).
// The loss is the global batch's mean (the shares' losses weighted and summed over the ranks). stop: in, this rank
// was asked to stop; out, some rank was (every rank returns the same).
StepResult train_step(const Decoder& model, DataParallelAdamw& optimizer, dist::Comm& comm, const Batch& batch, float lr,
                      bool& stop);

// Linear warm-up to lr, then cosine decay to min_lr at the last of `steps` (the run's horizon).
struct Schedule {
  float lr = 2e-3f, min_lr = 2e-4f;
  int warmup = 1, steps = 0;
  float at(int step) const { return cosine_lr(step, steps, warmup, lr, min_lr); }
};

// ptk train's warm-up: a tenth of the steps, at least 1 and at most 100.
int default_warmup(int steps);

struct RunState {
  std::string id;     // 16 random hex digits, fixed for the life of the run; pairs its checkpoint files
  int step = 0;       // optimizer steps done
  Schedule schedule;
  int batch = 16;
  std::uint64_t seed = 1337;        // the initial weights (seed), the batches (seed + 1), samples (seed + 2)
  std::uint64_t sampler_draws = 0;  // BatchSampler::draws()
  std::string data_path;            // the training text (a resumed run reads it again unless given another),
  std::int64_t data_bytes = 0;      // its size and CRC-32: a resumed run warns when they differ
  std::string data_crc32;
  Precision precision;              // the dtype the run trains in and, for f16, its loss scale
};

std::string new_run_id();

struct StepReport {
  int step = 0;  // 1-based: the step just done
  float lr = 0.0f;
  StepResult result;
  bool stop = false;  // a stop was requested (on any rank of a data-parallel run)
};

class Optimizer;  // optimizer.hpp: AdamW in one process, or data parallel

// Advances a run one step at a time: batch from the sampler, learning rate from the schedule, the optimizer's step.
// Data parallel, every rank draws the same global batches and trains on its share.
class Trainer {
 public:
  // tokens: the training split; it and the optimizer must outlive the trainer.
  Trainer(const Decoder& model, Optimizer& optimizer, const std::vector<int>& tokens, const RunState& state);
  bool finished() const { return state_.step >= state_.schedule.steps; }
  // stop_requested: this process was asked to stop after this step; the report's stop says whether any rank was.
  StepReport step(bool stop_requested = false);
  const RunState& state() const { return state_; }

 private:
  Optimizer& optimizer_;
  RunState state_;
  BatchSampler sampler_;
};

// The mean cross-entropy over every position of the consecutive, non-overlapping windows of block_size + 1
// tokens from the start of `tokens` (a shorter tail is dropped), evaluated in batches of `batch` windows. With comm,
// the batches are dealt out over its ranks (batch i to rank i mod N) and every rank returns the whole mean.
double evaluate(const Decoder& model, const std::vector<int>& tokens, int batch, dist::Comm* comm = nullptr);

// n bytes sampled from the model (temperature 1) with a KV cache (nn/inference.hpp), starting from the single
// token `start`; at a full block the last half block is run again as a new prompt (GenerateOptions::slide).
// `emit`, when given, receives each byte as soon as it is drawn (streamed output).
std::string generate(const Decoder& model, const Vocab& vocab, int start, int n, std::uint64_t seed,
                     const std::function<void(unsigned char)>& emit = {});

}  // namespace ptk::nn
