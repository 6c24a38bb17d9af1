#pragma once
// cross_entropy: the mean over counted rows of -log softmax(logits)[target] for logits[..., V] and int targets
// (one per row of logits; rows whose target is ignore_index do not count). Returns the loss, the per-row
// losses and log-sum-exp (shape logits.shape[:-1]) and the number of counted rows, for the backward; the
// loss and the count stay in device memory (loss_value() and counted_value() read them back).
// cross_entropy_backward accumulates dlogits += dloss · (softmax - onehot) / counted on counted rows.
// E (f32, bf16, f16): the element type of logits and dlogits; the losses, lse and the loss are fp32.
#include "ptk/kernels/cross_entropy.hpp"
#include "ptk/ops/checks.hpp"
#include "ptk/ops/ids.hpp"

namespace ptk::ops {

template <class Space>
struct CrossEntropyOutputs {
  Tensor<Space> loss;  // [1]: NaN when every row is ignored (as PyTorch)
  Tensor<Space> losses, lse;
  IndexVector<Space> counted;  // [1]
  float loss_value() const { return loss.to_vector()[0]; }
  int counted_value() const { return index_at<Space>(counted, 0); }
};

namespace detail {
template <class Space, class E>
void check_targets(const char* op, const Tensor<Space, E>& logits, const Ids<Space>& targets, int ignore_index,
                   IdsChecked checked) {
  check_tensor(op, "logits", logits, 1, INT_MAX);
  const auto rows = logits.numel() / logits.dim(-1);
  require(static_cast<std::int64_t>(targets.extent(0)) == rows, op, ": ", targets.extent(0),
          " targets for logits of shape ", logits.shape(), " (", rows, " rows)");
  if (checked == IdsChecked::yes) return;
  const auto vocab = logits.dim(-1);
  const auto bad = first_bad_index<Space>(targets, static_cast<int>(vocab), ignore_index);
  require(bad < 0, op, ": target ", bad < 0 ? 0 : index_at<Space>(targets, bad), " at row ", bad, " is outside [0, ",
          vocab, ") and is not ignore_index ", ignore_index, " (logits shape ", logits.shape(), ")");
}
}  // namespace detail

template <class Space, class E = float>
CrossEntropyOutputs<Space> cross_entropy(const Tensor<Space, E>& logits, const Ids<Space>& targets,
                                         int ignore_index = -100, IdsChecked checked = IdsChecked::no) {
  detail::check_targets<Space, E>("cross_entropy", logits, targets, ignore_index, checked);
  const auto rows = leading_shape(logits.shape());
  CrossEntropyOutputs<Space> r;
  r.loss = Tensor<Space>::uninitialized({1}, "ptk::ce_loss");
  r.losses = Tensor<Space>::uninitialized(rows, "ptk::ce_losses");
  r.lse = Tensor<Space>::uninitialized(rows, "ptk::ce_lse");
  r.counted = work_view<IndexVector<Space>>("ptk::ce_counted", 1);
  kernels::cross_entropy_forward<Space, E>(r.losses.flat(), r.lse.flat(), r.loss.flat(), r.counted, logits.rows(), targets,
                                        ignore_index);
  return r;
}

// dlogits (shaped as logits) += the gradient of dloss(0) · loss; lse and counted come from cross_entropy,
// dloss ([1]) is the loss's gradient, all read on the device.
template <class Space, class E = float>
void cross_entropy_backward(const Tensor<Space, E>& dlogits, const Tensor<Space>& dloss, const Tensor<Space, E>& logits,
                            const Tensor<Space>& lse, const Ids<Space>& targets, const Ids<Space>& counted,
                            int ignore_index = -100, IdsChecked checked = IdsChecked::no) {
  detail::check_targets<Space, E>("cross_entropy_backward", logits, targets, ignore_index, checked);
  require(dloss.numel() == 1, "cross_entropy_backward: dloss has shape ", dloss.shape(), "; it must hold one value");
  require(counted.extent(0) == 1, "cross_entropy_backward: counted has ", counted.extent(0), " values; it must hold one");
  require(dlogits.shape() == logits.shape(), "cross_entropy_backward: dlogits has shape ", dlogits.shape(),
          " but logits has shape ", logits.shape());
  check_tensor("cross_entropy_backward", "lse", lse, 1, INT_MAX);
  require(lse.numel() == logits.numel() / logits.dim(-1), "cross_entropy_backward: lse has shape ",
          lse.shape(), " but logits of shape ", logits.shape(), " have ",
          logits.numel() / logits.dim(-1), " rows");
  kernels::cross_entropy_backward<Space, E>(dlogits.rows(), dloss.flat(), logits.rows(), lse.flat(), targets, ignore_index,
                                         counted);
}

// The same with a host scalar dloss (ptk op, tests).
template <class Space, class E = float>
void cross_entropy_backward(const Tensor<Space, E>& dlogits, float dloss, const Tensor<Space, E>& logits,
                            const Tensor<Space>& lse, const Ids<Space>& targets, const Ids<Space>& counted,
                            int ignore_index = -100) {
  cross_entropy_backward<Space, E>(dlogits, Tensor<Space>::from_host({1}, &dloss), logits, lse, targets, counted,
                                ignore_index);
}

}  // namespace ptk::ops
