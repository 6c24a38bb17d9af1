#pragma once
// The pieces of a training run that `ptk train` and the tests share (no Kokkos here).
#include <cstdint>
#include <string>
#include <vector>

#include "ptk/nn/adamw.hpp"
#include "ptk/nn/data.hpp"
#include "ptk/nn/gpt.hpp"

namespace ptk::nn {

struct StepResult {
  float loss = 0.0f;       // the batch's mean cross-entropy before the update
  float grad_norm = 0.0f;  // global gradient norm before clipping
};

// zero_grad, forward, backward, AdamW update at learning rate lr.
StepResult train_step(const Gpt& model, Adamw& optimizer, const Batch& batch, float lr);

// The mean cross-entropy over every position of the consecutive, non-overlapping windows of block_size + 1
// tokens from the start of `tokens` (a shorter tail is dropped), evaluated in batches of `batch` windows.
double evaluate(const Gpt& model, const std::vector<int>& tokens, int batch);

// n bytes sampled from the model (temperature 1), each conditioned on at most block_size preceding tokens,
// starting from the single token `start`; the random draws come from a Mersenne Twister seeded with seed.
std::string generate(const Gpt& model, const Vocab& vocab, int start, int n, std::uint64_t seed);

}  // namespace ptk::nn
