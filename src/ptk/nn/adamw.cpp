#include "ptk/nn/adamw.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace ptk::nn {

std::vector<ag::Var> vars_of(const NamedParameters& params) {
  std::vector<ag::Var> vars;
  for (const auto& np : params) vars.push_back(np.second);
  return vars;
}

Adamw::Adamw(const NamedParameters& params, const AdamwConfig& config)
    : params_(params),
      grad_norm_(vars_of(params)),
      stats_(ag::Var::zeros({3}, params.front().second.device())),
      config_(config) {
  for (const auto& np : params_) {
    m_.push_back(ag::Var::zeros(np.second.shape(), np.second.device()));
    v_.push_back(ag::Var::zeros(np.second.shape(), np.second.device()));
    decay_.push_back(np.second.shape().size() == 2);  // weights and embeddings; not biases or layernorm gains
  }
}

const ag::Var& Adamw::step(float lr, float inv_scale, bool skip_nonfinite) {
  grad_norm_(stats_, config_.max_grad_norm, inv_scale, skip_nonfinite);
  ++t_;
  ag::AdamwStep s = adamw_step(config_, t_, lr);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].second.has_grad()) continue;  // no gradient reached it: leave it and its moments alone
    s.weight_decay = decay_[i] ? config_.weight_decay : 0.0f;
    ag::adamw_update(params_[i].second, m_[i], v_[i], s, stats_);
  }
  return stats_;
}

NamedParameters Adamw::state() const {
  NamedParameters out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back("m." + params_[i].first, m_[i]);
    out.emplace_back("v." + params_[i].first, v_[i]);
  }
  return out;
}

void Adamw::load_state(const std::vector<std::pair<std::string, std::vector<float>>>& tensors, int steps_taken) {
  std::map<std::string, const std::vector<float>*> by_name;
  for (const auto& t : tensors) by_name[t.first] = &t.second;
  for (const auto& np : state()) {
    const auto it = by_name.find(np.first);
    require(it != by_name.end(), "optimizer state: no tensor '", np.first, "'");
    require(static_cast<std::int64_t>(it->second->size()) == np.second.numel(), "optimizer state: '", np.first,
            "' has ", it->second->size(), " values, the parameter has shape ", np.second.shape());
    np.second.assign(*it->second);
  }
  t_ = steps_taken;
}

ag::AdamwStep adamw_step(const AdamwConfig& c, int t, float lr) {
  return ag::AdamwStep{lr, c.beta1, c.beta2, c.eps, 0.0f,
                       static_cast<float>(1.0 - std::pow(static_cast<double>(c.beta1), t)),
                       static_cast<float>(1.0 - std::pow(static_cast<double>(c.beta2), t))};
}

float cosine_lr(int step, int total, int warmup, float max_lr, float min_lr) {
  if (step < warmup) return max_lr * static_cast<float>(step + 1) / static_cast<float>(warmup);
  const int span = total - 1 - warmup;
  if (span <= 0) return max_lr;
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / span);
  const double cosine = 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
  return static_cast<float>(min_lr + (max_lr - min_lr) * cosine);
}

}  // namespace ptk::nn
