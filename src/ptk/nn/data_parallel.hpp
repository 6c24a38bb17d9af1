#pragma once
// Data-parallel training over the ranks of a dist::Comm (no Kokkos here; docs/distributed.md tells the design).
//
// - Every rank holds the whole model and draws the same global batch of B windows; rank r trains on its share,
//   windows [begin, end) of batch_share(B, r, N) (contiguous, sizes differing by at most one).
// - Each rank's gradient is of its share's mean loss; it is scaled by share / B and summed over the ranks, so the
//   step's gradient is the global batch's mean, as one process computes it.
// - Unsharded: the sum is an allreduce of the flat gradient (ag::FlatParameters) in buckets of whole parameters of
//   about bucket_bytes, the last parameters first; every rank then updates every parameter identically. With
//   overlap, a bucket's allreduce starts during the backward pass, as soon as its parameters' gradients are final
//   (backward_hook()), and the step waits for them all before the update.
// - Sharded (ZeRO-1, --shard-optimizer): the flat parameter range is cut into N contiguous shards; the gradients
//   are reduce-scattered, each rank keeps AdamW's moments for its shard alone and updates it, and the parameters
//   are allgathered. Optimizer memory per rank is 1/N of the unsharded.
// - The gradient norm (for clipping) is the same in both modes: each rank sums the squares of its shard's reduced
//   gradient in double, and the ranks add those sums. At N = 2 a sum of two is the same either way round, so the
//   sharded and the unsharded runs are bit for bit the same (tests/distributed_test.sh checks it).
// - Checkpoints are the single-process format: the moments are gathered to rank 0, which alone writes; a loaded
//   checkpoint gives each rank its own slice. So a checkpoint moves freely between any numbers of ranks, sharded
//   or not.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ptk/autograd/flat.hpp"
#include "ptk/dist/comm.hpp"
#include "ptk/nn/adamw.hpp"
#include "ptk/nn/data.hpp"
#include "ptk/nn/decoder.hpp"

namespace ptk::nn {

struct Share {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};
// Rank r's windows of a batch of B: B / N each, the first B % N ranks one more. Requires B >= N.
Share batch_share(int B, int rank, int ranks);
// The windows [share.begin, share.end) of a batch.
Batch slice_batch(const Batch& batch, const Share& share);

struct DataParallelOptions {
  bool shard_optimizer = false;
  std::int64_t bucket_bytes = std::int64_t{25} << 20;  // as PyTorch DDP's default bucket_cap_mb
  bool overlap = false;  // unsharded: start each bucket's allreduce during the backward pass
};

class DataParallelAdamw {
 public:
  // Binds the model's parameters into flat buffers (ag::FlatParameters). Every rank must call it.
  DataParallelAdamw(const Decoder& model, const AdamwConfig& config, dist::Comm& comm, const DataParallelOptions& options);

  // True when the gradients' reduction overlaps the backward pass: the step then runs
  // backward(backward_hook(weight)) instead of backward().
  bool overlaps() const { return options_.overlap && !options_.shard_optimizer; }
  // For Var::backward: starts each bucket's allreduce (its gradients scaled by weight) once its parameters are final.
  std::function<void(const ag::Var&)> backward_hook(float weight);

  // After this rank's backward over `weight` = its share / B of the batch: reduces the gradients, clips by the
  // global norm, updates, and (sharded) gathers the parameters. `also_sum` rides along with the norm's reduction
  // and comes back summed over the ranks (the loss, a stop request). Returns the global gradient norm.
  float step(float lr, float weight, std::vector<double>& also_sum);
  int steps_taken() const { return t_; }

  // Collective: the whole moments ("m.<name>", "v.<name>", host Vars) on rank 0, nothing on the other ranks.
  NamedParameters gathered_state() const;
  // Every rank: its slice of the whole moments (as Adamw::state() names them) and the step count.
  void load_state(const std::vector<std::pair<std::string, std::vector<float>>>& tensors, int steps_taken);
  // Collective: throws a CollectiveError if the ranks' parameters are not bit for bit the same (they must be: every
  // rank applies the same update to the same values).
  void check_in_sync() const;

  bool sharded() const { return options_.shard_optimizer; }
  std::int64_t parameter_count() const { return flat_.size(); }
  // The floats this rank updates: [begin, end) of the flat parameters.
  std::int64_t begin() const { return begin_; }
  std::int64_t end() const { return end_; }
  // AdamW's moments held by this rank, in bytes.
  std::int64_t state_bytes() const { return 2 * (end_ - begin_) * static_cast<std::int64_t>(sizeof(float)); }
  int buckets() const { return static_cast<int>(buckets_.size()); }

 private:
  void reduce_gradients(float weight);

  const Decoder& model_;
  AdamwConfig config_;
  dist::Comm& comm_;
  DataParallelOptions options_;
  ag::FlatParameters flat_;
  std::vector<std::int64_t> shard_counts_;                       // floats per rank's shard
  std::int64_t shard_begin_ = 0, shard_end_ = 0;                 // this rank's shard
  std::int64_t begin_ = 0, end_ = 0;                             // the range this rank updates
  struct Bucket {
    std::int64_t lo = 0, hi = 0;  // a range of whole parameters
    int parameters = 0, pending = 0;
    bool started = false;
  };
  void start(Bucket& bucket, float weight);
  std::vector<Bucket> buckets_;             // unsharded allreduce ranges, last parameters first
  std::vector<int> bucket_of_;              // parameter -> bucket
  std::map<const void*, int> parameter_of_;  // a parameter's VarImpl -> its index
  bool hooked_ = false;                     // this step's backward ran with backward_hook
  std::vector<float> weight_decay_;
  ag::Var m_, v_, shard_grad_, stats_;
  dist::Memory memory_;
  int t_ = 0;
};

}  // namespace ptk::nn
