#pragma once
// cross_entropy_forward:  losses[n] = lse[n] - logits[n, targets[n]], lse[n] = log Σ_v exp(logits[n,v]), for logits[N,V];
//                         rows whose target is ignore_index get losses[n] = 0; loss = Σ losses / #counted rows.
// cross_entropy_backward: dlogits[n,v] += dloss · (exp(logits[n,v] - lse[n]) - [v = targets[n]]) / #counted, counted rows only.
#include <Kokkos_Core.hpp>

#include "ptk/core/compat.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/fast_exp.hpp"

namespace ptk::kernels {

// One team per row: the max, then the sum of exp(l - max), each a TeamThreadRange reduction.
template <class Space>
struct CrossEntropyForward {
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Vector<Space> losses, lse;
  ConstMatrix<Space> logits;
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
          if (logits(row, v) > m) m = logits(row, v);
        },
        Kokkos::Max<float>(row_max));
    float sum = 0.0f;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, vocab), [&](int v, float& s) { s += fast_exp(logits(row, v) - row_max); }, sum);
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      const float row_lse = row_max + compat::log(sum);
      lse(row) = row_lse;
      losses(row) = row_lse - logits(row, target);
    });
  }
};

// Returns the mean loss over the counted rows (NaN when every row is ignored, as PyTorch) and
// writes their number to `counted`. The sum is taken in double, in a fixed order per thread count.
template <class Space>
float cross_entropy_forward(const Vector<Space>& losses, const Vector<Space>& lse, int& counted,
                            const ConstMatrix<Space>& logits, const ConstIndexVector<Space>& targets, int ignore_index) {
  const int rows = static_cast<int>(logits.extent(0));
  Kokkos::parallel_for("ptk::cross_entropy_forward", Kokkos::TeamPolicy<Space>(rows, Kokkos::AUTO),
                       CrossEntropyForward<Space>{losses, lse, logits, targets, ignore_index});
  double total = 0.0;
  Kokkos::parallel_reduce(
      "ptk::cross_entropy_sum", Kokkos::RangePolicy<Space>(0, rows),
      KOKKOS_LAMBDA(const int n, double& s) { s += losses(n); }, total);
  counted = 0;
  Kokkos::parallel_reduce(
      "ptk::cross_entropy_count", Kokkos::RangePolicy<Space>(0, rows),
      KOKKOS_LAMBDA(const int n, int& c) { c += targets(n) != ignore_index ? 1 : 0; }, counted);
  return static_cast<float>(total / counted);
}

template <class Space>
void cross_entropy_backward(const Matrix<Space>& dlogits, float dloss, const ConstMatrix<Space>& logits,
                            const ConstVector<Space>& lse, const ConstIndexVector<Space>& targets, int ignore_index,
                            int counted) {
  const int rows = static_cast<int>(logits.extent(0)), vocab = static_cast<int>(logits.extent(1));
  const float weight = dloss / static_cast<float>(counted);
  using Team = typename Kokkos::TeamPolicy<Space>::member_type;
  Kokkos::parallel_for(
      "ptk::cross_entropy_backward", Kokkos::TeamPolicy<Space>(rows, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& team) {
        const int row = team.league_rank();
        const int target = targets(row);
        if (target == ignore_index) return;
        const float row_lse = lse(row);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, vocab), [&](int v) {
          const float p = fast_exp(logits(row, v) - row_lse);
          dlogits(row, v) += weight * (v == target ? p - 1.0f : p);
        });
      });
}

}  // namespace ptk::kernels
