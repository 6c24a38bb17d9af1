#pragma once
// embedding: out[..., C] = table[ids[...], :] for int token ids (any shape, given as ids_shape; [N] by default)
// and table[V, C]. embedding_backward accumulates dtable[V, C] += the rows of dout gathered by id; it is
// deterministic (bitwise the same run to run and across thread counts) on every backend. E (f32, bf16, f16): the
// element type of table, out, dtable and dout; the backward sums in fp32 and rounds each element once.
#include "ptk/kernels/embedding.hpp"
#include "ptk/ops/checks.hpp"
#include "ptk/ops/ids.hpp"

namespace ptk::ops {

namespace detail {
template <class Space>
void check_embedding_ids(const char* op, const ConstIndexVector<Space>& ids, Shape& ids_shape, std::int64_t vocab,
                         const Shape& table_shape, IdsChecked checked) {
  const auto n = static_cast<std::int64_t>(ids.extent(0));
  require(n > 0, op, ": ids is empty");
  require(n <= INT_MAX, op, ": ", n, " ids; ptk kernels index with 32-bit ints");
  if (ids_shape.empty()) ids_shape = {n};
  require(element_count(ids_shape) == n, op, ": ids_shape ", ids_shape, " does not hold the ", n, " ids");
  if (checked == IdsChecked::yes) return;
  const auto bad = first_bad_index<Space>(ids, static_cast<int>(vocab), static_cast<int>(vocab));
  require(bad < 0, op, ": token id ", bad < 0 ? 0 : index_at<Space>(ids, bad), " at position ", bad,
          " is outside [0, ", vocab, ") (table shape ", table_shape, ")");
}
}  // namespace detail

template <class Space, class E = float>
Tensor<Space, E> embedding(const Ids<Space>& ids, const Tensor<Space, E>& table, Shape ids_shape = {},
                           IdsChecked checked = IdsChecked::no) {
  check_tensor("embedding", "table", table, 2, 2);
  detail::check_embedding_ids<Space>("embedding", ids, ids_shape, table.dim(0), table.shape(), checked);
  Shape out_shape = ids_shape;
  out_shape.push_back(table.dim(1));
  check_output_shape("embedding", "out", out_shape);
  auto out = Tensor<Space, E>::uninitialized(out_shape, "ptk::embedding");
  kernels::embedding_forward<Space, E>(MatrixOf<Space, E>(out.data(), ids.extent(0), table.dim(1)), ids, table.rows());
  return out;
}

// dtable[V, C] += Σ over positions n with ids[n] = v of dout[n, :]; dout is [..., C] with one row per id.
// `order`, when given, is the positions sorted by (id, position) (ag::Ids keeps it); otherwise it is
// sorted on the device.
template <class Space, class E = float>
void embedding_backward(const Tensor<Space, E>& dtable, const Tensor<Space, E>& dout, const Ids<Space>& ids,
                        IdsChecked checked = IdsChecked::no, const Ids<Space>& order = {}) {
  check_tensor("embedding_backward", "dtable", dtable, 2, 2);
  check_tensor("embedding_backward", "dout", dout, 1, INT_MAX);
  Shape ids_shape;
  detail::check_embedding_ids<Space>("embedding_backward", ids, ids_shape, dtable.dim(0), dtable.shape(), checked);
  require(dout.dim(-1) == dtable.dim(1) && dout.numel() / dout.dim(-1) == static_cast<std::int64_t>(ids.extent(0)),
          "embedding_backward: dout has shape ", dout.shape(), " but ", ids.extent(0),
          " ids and dtable shape ", dtable.shape(), " need ", ids.extent(0), " rows of ", dtable.dim(1));
  if (order.extent(0) == 0) {
    kernels::embedding_backward<Space, E>(dtable.rows(), dout.rows(), ids);
  } else {
    require(order.extent(0) == ids.extent(0), "embedding_backward: order has ", order.extent(0), " positions for ",
            ids.extent(0), " ids");
    kernels::embedding_backward<Space, E>(dtable.rows(), dout.rows(), ids, order);
  }
}

}  // namespace ptk::ops
