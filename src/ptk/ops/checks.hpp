#pragma once
// Shape checks shared by the ops: each names the op, the argument and the shapes involved.
#include <climits>
#include <string>

#include "ptk/core/error.hpp"
#include "ptk/core/tensor.hpp"

namespace ptk::ops {

// Kernels index with int: any tensor an op accepts has fewer than 2^31 elements.
template <class Space, class E>
void check_tensor(const char* op, const char* name, const Tensor<Space, E>& t, int min_rank, int max_rank) {
  require(t.defined(), op, ": ", name, " is an empty (undefined) tensor");
  const auto ranks = lazy([&] {
    return min_rank == max_rank   ? std::to_string(min_rank)
           : max_rank == INT_MAX ? "at least " + std::to_string(min_rank)
                                 : std::to_string(min_rank) + ".." + std::to_string(max_rank);
  });
  require(t.rank() >= min_rank && t.rank() <= max_rank, op, ": ", name, " must have rank ", ranks, ", got shape ",
          t.shape());
  require(t.numel() <= INT_MAX, op, ": ", name, " has ", t.numel(), " elements (shape ", t.shape(),
          "); ptk kernels index with 32-bit ints");
}

// An output the op is about to allocate: same int limit, checked before any memory is taken.
inline void check_output_shape(const char* op, const char* name, const Shape& shape) {
  require(element_count(shape) <= INT_MAX, op, ": ", name, " would have shape ", shape, " (",
          element_count(shape), " elements); ptk kernels index with 32-bit ints");
}

// A per-feature parameter (gamma, beta, weight) must be [N] for an input whose last dim is N.
template <class Space, class E>
void check_feature_vector(const char* op, const char* name, const Tensor<Space>& param, const Tensor<Space, E>& x) {
  check_tensor(op, name, param, 1, 1);
  require(param.dim(0) == x.dim(-1), op, ": ", name, " has shape ", param.shape(),
          " but the input's last dimension is ", x.dim(-1), " (input shape ", x.shape(), ")");
}

// A tensor that must have exactly the shape of another (a gradient and its input, dY and Y).
template <class Space, class E, class R>
void check_same_shape(const char* op, const char* name, const Tensor<Space, E>& t, const char* ref_name,
                      const Tensor<Space, R>& ref) {
  require(t.defined(), op, ": ", name, " is an empty (undefined) tensor");
  require(t.shape() == ref.shape(), op, ": ", name, " has shape ", t.shape(), " but ", ref_name,
          " has shape ", ref.shape());
}

// Per-row statistics (mean, rstd) saved by a forward pass: one value per row of x (any shape).
template <class Space, class E>
void check_row_statistic(const char* op, const char* name, const Tensor<Space>& stat, const Tensor<Space, E>& x) {
  require(stat.defined(), op, ": ", name, " is an empty (undefined) tensor");
  const auto rows = x.numel() / x.dim(-1);
  require(stat.numel() == rows, op, ": ", name, " has shape ", stat.shape(), " (", stat.numel(),
          " values) but X of shape ", x.shape(), " has ", rows, " rows");
}

}  // namespace ptk::ops
