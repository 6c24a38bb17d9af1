#pragma once
// What a Var is made of (internal: the model layer includes variable.hpp only). A Var's data and gradient are
// ptk::Tensors in one of the two spaces a build offers; Buffer holds either, Device says which.
#include <Kokkos_Core.hpp>

#include <functional>
#include <type_traits>

#include "ptk/autograd/variable.hpp"
#include "ptk/core/runtime.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/tuning.hpp"
#include "ptk/ops/convert.hpp"

namespace ptk::ag {

using HostSpace = Kokkos::DefaultHostExecutionSpace;
using DeviceSpace = Kokkos::DefaultExecutionSpace;
constexpr bool kOneSpace = std::is_same_v<HostSpace, DeviceSpace>;

// In a host-only build both names mean the one space: everything is tagged `host`.
inline Device canonical(Device d) { return kOneSpace ? Device::host : d; }

template <class S>
struct SpaceTag {
  using type = S;
};

// Calls f(SpaceTag<S>{}) with S the execution space of device d.
template <class F>
decltype(auto) on_device(Device d, F&& f) {
  if constexpr (kOneSpace) {
    (void)d;
    return f(SpaceTag<HostSpace>{});
  } else {
    if (d == Device::host) return f(SpaceTag<HostSpace>{});
    return f(SpaceTag<DeviceSpace>{});
  }
}

// Calls f(kernels::Config<S, T>{}) with S the execution space of device d and T the tuning it runs in
// this process (kernels::with_tuning; PTK_TUNING=gpu runs the GPU tuning on OpenMP).
template <class F>
decltype(auto) on_compute(Device d, F&& f) {
  return on_device(d, [&](auto tag) -> decltype(auto) {
    return kernels::with_tuning<typename decltype(tag)::type>(runtime::host_runs_gpu_tuning(), f);
  });
}

template <class Host, class Dev>
struct PerSpace {
  Host host;
  Dev device;
  template <class S>
  auto& get() {
    if constexpr (kOneSpace || std::is_same_v<S, HostSpace>) return host;
    else return device;
  }
};

using Buffer = PerSpace<Tensor<HostSpace>, Tensor<DeviceSpace>>;

// A weight stored as a reduced type for inference (Var::store_as): the one of these its dtype names (q8_0 and q4_0:
// the blocks or, where the tuning reads them, their row tiles: store_blocks).
template <class S>
struct Stored {
  Tensor<S, bf16> as_bf16;
  Tensor<S, f16> as_f16;
  Tensor<S, q8_0> as_q8_0;
  Tensor<S, q4_0> as_q4_0;
  Tensor<S, q8_0x16> as_q8_0_tiles;
  Tensor<S, q4_0x16> as_q4_0_tiles;
  template <class E>
  Tensor<S, E>& get() {
    if constexpr (std::is_same_v<E, bf16>) return as_bf16;
    else if constexpr (std::is_same_v<E, f16>) return as_f16;
    else if constexpr (std::is_same_v<E, q8_0>) return as_q8_0;
    else if constexpr (std::is_same_v<E, q8_0x16>) return as_q8_0_tiles;
    else if constexpr (std::is_same_v<E, q4_0x16>) return as_q4_0_tiles;
    else return as_q4_0;
  }
  // Whether the weight's blocks are held as row tiles.
  bool tiled() const { return as_q8_0_tiles.defined() || as_q4_0_tiles.defined(); }
};

// A q8_0 or q4_0 weight from its blocks: in row tiles (q8_0x16, q4_0x16) where the tuning this process runs in S
// reads them (Tune::decode::row_tiles: the host's) and the weight is a matrix of whole tiles, else as the blocks.
// Every path of a linear layer reads either form; the tiles are the same bytes, regrouped.
template <class S, class Block>
void store_blocks(Stored<S>& st, const Tensor<S, Block>& blocks) {
  const bool tiles = kernels::with_tuning<S>(runtime::host_runs_gpu_tuning(), [](auto config) {
    return decltype(config)::tune::decode::row_tiles;
  });
  if (tiles && blocks.rank() == 2 && blocks.dim(0) % tile_rows == 0)
    st.template get<tile_of_t<Block>>() = ops::tile(blocks);
  else
    st.template get<Block>() = blocks;
}

struct Node {
  const char* op;
  std::vector<std::shared_ptr<VarImpl>> inputs;
  std::function<void(VarImpl& out)> backward;  // reads out's gradient, adds into the inputs' gradients
};

struct VarImpl {
  Shape shape;
  Device device = Device::host;
  bool requires_grad = false;
  Buffer data, grad;
  std::shared_ptr<Node> grad_fn;
  DType dtype = DType::f32;  // not f32: `stored` holds the data (store_as), `data` is empty
  PerSpace<Stored<HostSpace>, Stored<DeviceSpace>> stored;
  // The f32 data rounded to bf16 or f16 for the linear layers of an Autocast scope (cast_of): made on first use; a
  // parameter's is kept current by adamw_update, and anything else that writes the data (assign, an in-place
  // accumulate_linear) drops it. cast_dtype f32: none.
  DType cast_dtype = DType::f32;
  PerSpace<Stored<HostSpace>, Stored<DeviceSpace>> cast;
  void drop_cast() {
    cast_dtype = DType::f32;
    cast = {};
  }
};

struct IdsImpl {
  Shape shape;
  Device device = Device::host;
  std::vector<int> host;  // the same ids on the host, for range checks without a device read-back
  // values, and order (the positions sorted by (id, position), for the embedding backward), are parts
  // of one buffer shared with other Ids (Ids::from_vectors): one upload.
  PerSpace<IndexVector<HostSpace>, IndexVector<DeviceSpace>> values, order;
};

template <class S>
Tensor<S>& data_of(const Var& v) {
  VarImpl& impl = v.impl();
  require(impl.dtype == DType::f32, "a weight stored as ", dtype_name(impl.dtype), " is read only by linear");
  return impl.data.get<S>();
}

// f(t) for t the Tensor<S, E> of a weight stored as E (dtype not f32).
template <class S, class F>
decltype(auto) with_stored(const Var& v, F&& f) {
  auto& st = v.impl().stored.get<S>();
  switch (v.impl().dtype) {
    case DType::bf16: return f(st.as_bf16);
    case DType::f16: return f(st.as_f16);
    case DType::q8_0: return st.as_q8_0_tiles.defined() ? f(st.as_q8_0_tiles) : f(st.as_q8_0);
    default: return st.as_q4_0_tiles.defined() ? f(st.as_q4_0_tiles) : f(st.as_q4_0);
  }
}

// The Tensor<S, E> of a Var whose dtype is E's (f32: its data).
template <class S, class E>
Tensor<S, E>& stored_of(const Var& v) {
  require(v.impl().dtype == Element<E>::dtype, "a Var stored as ", dtype_name(v.impl().dtype), " read as ",
          dtype_name(Element<E>::dtype));
  if constexpr (std::is_same_v<E, float>) return v.impl().data.get<S>();
  else return v.impl().stored.get<S>().template get<E>();
}

// v's values rounded to E (bf16 or f16), made once per Var and E (see VarImpl::cast). A parameter's copy lives
// across steps, so it never takes a buffer from the reuse cache.
template <class S, class E>
const Tensor<S, E>& cast_of(const Var& v) {
  VarImpl& impl = v.impl();
  if (impl.cast_dtype != Element<E>::dtype) {
    impl.drop_cast();
    const bool parameter = !impl.grad_fn && impl.requires_grad;
    impl.cast.get<S>().template get<E>() = ops::cast<E>(data_of<S>(v), parameter);
    impl.cast_dtype = Element<E>::dtype;
  }
  return impl.cast.get<S>().template get<E>();
}

// The gradient of v, allocated (zero) when it is first needed. A leaf's (a parameter's) lives across
// steps, so it never takes a buffer from the reuse cache.
template <class S>
Tensor<S>& grad_of(VarImpl& v) {
  auto& g = v.grad.get<S>();
  if (!g.defined()) g = v.grad_fn ? Tensor<S>(v.shape, "ptk::grad") : Tensor<S>::persistent(v.shape, "ptk::leaf_grad");
  return g;
}

// The gradient of v for an op that writes all of it: where v has none yet (and is not a leaf) it is taken
// uninitialized and `fresh` is set, and the op writes it instead of adding into zeros (no zero fill, no read of the
// zeros: those fills were about 3 % of a GPT-2 training step). Otherwise grad_of's buffer, to add into.
template <class S>
Tensor<S>& grad_to_write(VarImpl& v, bool& fresh) {
  auto& g = v.grad.get<S>();
  fresh = !g.defined() && v.grad_fn != nullptr;
  if (fresh) g = Tensor<S>::uninitialized(v.shape, "ptk::grad");
  return fresh ? g : grad_of<S>(v);
}

inline bool has_grad_buffer(VarImpl& v) {
  return on_device(v.device, [&](auto tag) { return v.grad.get<typename decltype(tag)::type>().defined(); });
}

}  // namespace ptk::ag
