#pragma once
// AdamW (decoupled weight decay, applied to 2-D weights only), gradient clipping by the global norm, and a
// cosine learning-rate schedule with linear warm-up. No Kokkos here: the update runs in ag::adamw_update.
#include <string>
#include <utility>
#include <vector>

#include "ptk/autograd/functions.hpp"
#include "ptk/nn/decoder.hpp"

namespace ptk::nn {

struct AdamwConfig {
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
  float max_grad_norm = 1.0f;  // clip when the global gradient norm exceeds it (<= 0: never)
};

class Adamw {
 public:
  Adamw(const NamedParameters& params, const AdamwConfig& config);

  // One update of every parameter from its gradient at learning rate lr. Returns a Var [3] on the
  // parameters' device: the global gradient norm before clipping, the factor applied to the gradients (clipping and
  // 1 / loss scale) and 1 when the step was skipped (nothing is read back here; see ag::read_together).
  // inv_scale: 1 / the loss scale the gradients carry; skip_nonfinite: a non-finite gradient norm leaves every
  // parameter and moment as it was (stats[2] = 1, on the device; then call take_back_step).
  const ag::Var& step(float lr, float inv_scale = 1.0f, bool skip_nonfinite = false);
  // The step just taken was skipped: it does not count (the next step's bias corrections are those it would have had).
  void take_back_step() { --t_; }
  int steps_taken() const { return t_; }

  // The moments under "m.<name>" and "v.<name>" (checkpointed beside the model), and their restore.
  NamedParameters state() const;
  void load_state(const std::vector<std::pair<std::string, std::vector<float>>>& tensors, int steps_taken);

 private:
  NamedParameters params_;
  std::vector<ag::Var> m_, v_;
  ag::GradNorm grad_norm_;
  ag::Var stats_;
  std::vector<bool> decay_;
  AdamwConfig config_;
  int t_ = 0;
};

// The Vars of named parameters, in order.
std::vector<ag::Var> vars_of(const NamedParameters& params);

// The update's constants at step t (1-based) and learning rate lr; weight_decay is left 0 (it is per parameter).
ag::AdamwStep adamw_step(const AdamwConfig& config, int t, float lr);

// warmup steps rising linearly to max_lr, then cosine decay to min_lr at step total - 1.
float cosine_lr(int step, int total, int warmup, float max_lr, float min_lr);

}  // namespace ptk::nn
