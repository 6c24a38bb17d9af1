#pragma once
// sample: one token per row of logits [..., V] (rows = the leading dims), drawn with temperature, top-k and top-p
// (kernels/sampling.hpp) from the row's uniform draw u in [0, 1); temperature 0 is greedy (u unused). Writes the
// tokens into the caller's `tokens` (kept across steps: nothing is allocated for them per token) and returns the
// kept, normalized distribution each was drawn from. A row with a NaN logit, or only −inf, gets token −1.
#include <cmath>
#include <vector>

#include "ptk/kernels/sampling.hpp"
#include "ptk/ops/checks.hpp"

namespace ptk::ops {

using kernels::SamplingParams;

inline void check_sampling(const SamplingParams& p) {
  require(std::isfinite(p.temperature) && p.temperature >= 0.0f, "sample: temperature must be a finite number >= 0, got ",
          p.temperature);
  require(p.top_k >= 0, "sample: top_k must be >= 0 (0: no limit), got ", p.top_k);
  require(p.top_p > 0.0f && p.top_p <= 1.0f, "sample: top_p must be in (0, 1], got ", p.top_p);
}

template <class Space, class Tune = kernels::Tuning<Space>>
Tensor<Space> sample(const IndexVector<Space>& tokens, const Tensor<Space>& logits, const std::vector<float>& u,
                     const SamplingParams& params) {
  check_tensor("sample", "logits", logits, 1, INT_MAX);
  check_sampling(params);
  const auto rows = logits.numel() / logits.dim(-1);
  require(static_cast<std::int64_t>(u.size()) == rows, "sample: ", u.size(), " uniform draws for ", rows,
          " rows of logits (shape ", logits.shape(), ")");
  for (std::size_t b = 0; b < u.size(); ++b)
    require(u[b] >= 0.0f && u[b] < 1.0f, "sample: draw ", b, " is ", u[b], ", outside [0, 1)");
  require(static_cast<std::int64_t>(tokens.extent(0)) == rows, "sample: the token buffer holds ", tokens.extent(0),
          " ids for ", rows, " rows of logits (shape ", logits.shape(), ")");
  auto probs = Tensor<Space>::uninitialized(logits.shape(), "ptk::sample_probs");
  const auto draws = Tensor<Space>::from_host({rows}, u);
  kernels::sample<Space, Tune>(tokens, probs.rows(), logits.rows(), draws.flat(), params);
  return probs;
}

}  // namespace ptk::ops
