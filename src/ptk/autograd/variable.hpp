#pragma once
// ptk::ag: reverse-mode automatic differentiation over ptk's kernels, for model code that knows nothing of
// Kokkos (this header includes none).
//
// - Var: a float tensor (shape, data, and a gradient once one reaches it) that lives on one Device, chosen at
//   run time. An op on Vars of two devices is an error, never a copy.
// - An op (functions.hpp) on Vars of which one requires a gradient, with gradients enabled, records a node:
//   its inputs and a backward function that adds the input gradients (kernels accumulate, +=).
// - loss.backward() walks the nodes reachable from a scalar loss in reverse topological order, so every node
//   runs once with its complete output gradient; then it releases the graph (nodes, saved tensors and the
//   intermediate gradients), so nothing outlives the step but the leaves' .grad.
// - NoGrad: a scope that records nothing (evaluation, sampling, optimizer updates).
// - Autocast: a scope whose linear layers multiply in bf16 or f16 (mixed-precision training; functions.hpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ptk/core/dtype_name.hpp"
#include "ptk/core/error.hpp"

namespace ptk {
class ReuseBuffers;
}

namespace ptk::ag {

// host: Kokkos' default host execution space (OpenMP or Serial); device: the default execution space, a
// GPU in a GPU build. In a host-only build they are the same space and `device` means `host`.
enum class Device { host, device };

// "host" or "default", as --device takes it; anything else is an error that names it.
Device parse_device(const std::string& name);
// e.g. "host (OpenMP)", "default (Cuda)".
std::string describe(Device device);

struct VarImpl;
struct IdsImpl;

class Var {
 public:
  Var() = default;
  explicit Var(std::shared_ptr<VarImpl> impl) : impl_(std::move(impl)) {}

  static Var zeros(const Shape& shape, Device device, bool requires_grad = false);
  static Var from_vector(const Shape& shape, const std::vector<float>& values, Device device, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  std::int64_t numel() const;
  Device device() const;
  bool requires_grad() const;

  std::vector<float> values() const;           // copied to the host
  void assign(const std::vector<float>& values) const;  // overwrites the data (not recorded)
  float item() const;                          // the value of a one-element Var
  // For inference: the data stored as `dtype` (bf16, f16, q8_0, q4_0; f32 leaves it as it is), converted on its
  // device (ops::convert: refuses what the type cannot hold); the f32 copy is released and the Var takes no
  // gradient from then on. Only ag::linear reads such a Var (as its weight); any other op refuses it.
  void store_as(DType dtype) const;
  // For inference: a weight whose data is already in `dtype`'s layout on the host (floats, bf16 or f16 words, q8_0
  // or q4_0 blocks: the bytes a GGUF tensor holds; for the blocks, shape's last dimension counts values, a multiple
  // of 32), copied to `device` as it is, with no f32 copy: the Var store_as would make, without the f32 one before.
  static Var from_stored(const Shape& shape, DType dtype, const void* host_data, Device device);
  DType dtype() const;
  bool has_grad() const;
  std::vector<float> grad() const;             // zeros when no gradient has reached it
  void zero_grad() const;

  // From a one-element loss: adds d loss / d leaf into every leaf that requires a gradient, then frees the graph.
  void backward() const;
  // The same, calling leaf_done(leaf) for each leaf as soon as the last node that adds into its gradient has run
  // (its gradient is final while the rest of the backward pass goes on: data parallelism starts reducing it there).
  void backward(const std::function<void(const Var& leaf)>& leaf_done) const;
  // The same with d loss / d loss = seed instead of 1: the gradients of seed · loss (f16 loss scaling).
  void backward_scaled(float seed, const std::function<void(const Var& leaf)>& leaf_done = {}) const;
  bool has_graph() const;  // a node is attached (false for leaves and after backward)

  VarImpl& impl() const;
  const std::shared_ptr<VarImpl>& shared() const { return impl_; }

 private:
  std::shared_ptr<VarImpl> impl_;
};

// Integer tensor of token ids or class targets. It keeps its host copy, so ops check the ids' range on the
// host instead of reading a reduction back from the device.
class Ids {
 public:
  Ids() = default;
  static Ids from_vector(const Shape& shape, const std::vector<int>& values, Device device);
  // Several id tensors of one shape, uploaded to the device in a single copy (a training step's inputs and
  // targets).
  static std::vector<Ids> from_vectors(const Shape& shape, const std::vector<const std::vector<int>*>& parts,
                                       Device device);
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  Device device() const;
  const std::vector<int>& host_values() const;
  IdsImpl& impl() const;

 private:
  std::shared_ptr<IdsImpl> impl_;
};

bool grad_enabled();
// The type linear layers multiply in: f32, or bf16 / f16 inside an Autocast scope.
DType autocast_dtype();

// While alive, the tensors that ops create reuse cached device buffers of the same size instead of
// allocating (core/buffer_pool.hpp): a training loop holds one, so its steady-state steps allocate
// nothing. It must end before Kokkos is finalized.
class ReuseBuffers {
 public:
  ReuseBuffers();
  ~ReuseBuffers();
  ReuseBuffers(const ReuseBuffers&) = delete;
  ReuseBuffers& operator=(const ReuseBuffers&) = delete;

 private:
  std::unique_ptr<ptk::ReuseBuffers> scope_;
};

// The values of several Vars of one device, read back to the host in one copy (one synchronization):
// result[i] holds vars[i]'s values.
std::vector<std::vector<float>> read_together(const std::vector<Var>& vars);

class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};

// While alive, ag::linear on f32 weights rounds its input and weight to `dtype` (bf16 or f16; f32: no change)
// and multiplies them with fp32 accumulation, forward and backward (its output gradient is rounded too); every
// other op keeps fp32, as PyTorch's autocast does for norms, softmax and the loss. Nested scopes restore.
class Autocast {
 public:
  explicit Autocast(DType dtype);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  DType previous_;
};

}  // namespace ptk::ag
