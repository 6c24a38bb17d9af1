#pragma once
// cross_entropy_forward:  losses[n] = lse[n] - logits[n, targets[n]], lse[n] = log Σ_v exp(logits[n,v]), for logits[N,V];
//                         rows whose target is ignore_index get losses[n] = 0; loss = Σ losses / #counted rows.
// cross_entropy_backward: dlogits[n,v] += dloss · (exp(logits[n,v] - lse[n]) - [v = targets[n]]) / #counted, counted rows only.
// The loss, #counted and dloss stay in device memory, so a training step reads nothing back here.
// E: the element type of logits and dlogits (f32, bf16, f16); losses, lse and the loss are fp32, as the sums.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/fast_exp.hpp"

namespace ptk::kernels {

// One team per row: the max, then the sum of exp(l - max), each a TeamThreadRange reduction.
template <class Space, class E = float>
struct CrossEntropyForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Vector<Space> losses, lse;
  ConstMatrixOf<Space, E> logits;
  ConstIndexVector<Space> targets;
  int ignore_index;

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int row = team.league_rank();
    const int target = targets(row);
    if (target == ignore_index) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        losses(row) = 0.0f;
        lse(row) = 0.0f;
      });
      return;
    }
    const int vocab = static_cast<int>(logits.extent(1));
    float row_max = -__builtin_huge_valf();
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, vocab),
        [&](int v, float& m) {
          const float l = widen(logits(row, v));
          if (l > m) m = l;
        },
        Kokkos::Max<float>(row_max));
    float sum = 0.0f;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, vocab), [&](int v, float& s) { s += fast_exp(widen(logits(row, v)) - row_max); }, sum);
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      const float row_lse = row_max + compat::log(sum);
      lse(row) = row_lse;
      losses(row) = row_lse - widen(logits(row, target));
    });
  }
};

// loss(0) = the mean of losses over the counted rows (NaN when every row is ignored, as PyTorch) and
// counted(0) = their number, both left on the device (no read-back). One team sums the rows in a
// fixed order for a given team size (in double), so the result is the same run to run.
template <class Space, class E = float>
void cross_entropy_forward(const Vector<Space>& losses, const Vector<Space>& lse, const Vector<Space>& loss,
                           const IndexVector<Space>& counted, const Same<ConstMatrixOf<Space, E>>& logits,
                           const ConstIndexVector<Space>& targets, int ignore_index) {
  const int rows = static_cast<int>(logits.extent(0));
  Kokkos::parallel_for("ptk::cross_entropy_forward", Kokkos::TeamPolicy<Space>(rows, Kokkos::AUTO),
                       CrossEntropyForward<Space, E>{losses, lse, logits, targets, ignore_index});
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Kokkos::parallel_for(
      "ptk::cross_entropy_mean", Kokkos::TeamPolicy<Space>(1, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& team) {
        double total = 0.0;
        int count = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, rows), [&](int n, double& s) { s += losses(n); }, total);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, rows), [&](int n, int& c) { c += targets(n) != ignore_index ? 1 : 0; },
            count);
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          loss(0) = static_cast<float>(total / count);
          counted(0) = count;
        });
      });
}

// dlogits += dloss(0) · (softmax - onehot) / counted(0) on counted rows; dloss and counted are read
// on the device (nothing is added when counted(0) = 0).
template <class Space, class E = float>
void cross_entropy_backward(const MatrixOf<Space, E>& dlogits, const ConstVector<Space>& dloss,
                            const Same<ConstMatrixOf<Space, E>>& logits, const ConstVector<Space>& lse,
                            const ConstIndexVector<Space>& targets, int ignore_index,
                            const ConstIndexVector<Space>& counted) {
  const int rows = static_cast<int>(logits.extent(0)), vocab = static_cast<int>(logits.extent(1));
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Kokkos::parallel_for(
      "ptk::cross_entropy_backward", Kokkos::TeamPolicy<Space>(rows, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& team) {
        const int row = team.league_rank();
        const int target = targets(row);
        if (target == ignore_index || counted(0) == 0) return;
        const float weight = dloss(0) / static_cast<float>(counted(0));
        const float row_lse = lse(row);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, vocab), [&](int v) {
          const float p = fast_exp(widen(logits(row, v)) - row_lse);
          dlogits(row, v) = round_to<E>(widen(dlogits(row, v)) + weight * (v == target ? p - 1.0f : p));
        });
      });
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_CROSS_ENTROPY_ELEMENT_INSTANCE(EXT, Space, E) \
  EXT template void cross_entropy_forward<Space, E>(const Vector<Space>& losses, const Vector<Space>& lse, const Vector<Space>& loss, const IndexVector<Space>& counted, const Same<ConstMatrixOf<Space, E>>& logits, const ConstIndexVector<Space>& targets, int ignore_index); \
  EXT template void cross_entropy_backward<Space, E>(const MatrixOf<Space, E>& dlogits, const ConstVector<Space>& dloss, const Same<ConstMatrixOf<Space, E>>& logits, const ConstVector<Space>& lse, const ConstIndexVector<Space>& targets, int ignore_index, const ConstIndexVector<Space>& counted);
#define PTK_CROSS_ENTROPY_SPACE_INSTANCES(EXT, Space)           \
  PTK_CROSS_ENTROPY_ELEMENT_INSTANCE(EXT, Space, float)       \
  PTK_CROSS_ENTROPY_ELEMENT_INSTANCE(EXT, Space, ::ptk::bf16) \
  PTK_CROSS_ENTROPY_ELEMENT_INSTANCE(EXT, Space, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_CROSS_ENTROPY_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
