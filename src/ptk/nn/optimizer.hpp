#pragma once
// A training run's optimizer behind one interface: AdamW in one process (LocalOptimizer), or the data-parallel
// optimizer over the ranks of a dist::Comm (DataParallelOptimizer). nn::Trainer and `ptk train` step, evaluate,
// save and restore through it without asking which one they have (no Kokkos here).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptk/dist/comm.hpp"
#include "ptk/nn/adamw.hpp"
#include "ptk/nn/data.hpp"
#include "ptk/nn/data_parallel.hpp"
#include "ptk/nn/decoder.hpp"
#include "ptk/nn/train.hpp"

namespace ptk::nn {

struct TrainingState;  // checkpoint.hpp

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // zero_grad, forward, backward and update on `batch`, the global batch (a rank of a data-parallel run trains on
  // its share; the loss is the whole batch's). stop: in, this process was asked to stop after this step; out, some
  // process was (every rank returns the same).
  // precision: the run's (train.hpp); a data-parallel run takes f32 only.
  virtual StepResult step(const Batch& batch, float lr, Precision& precision, bool& stop) = 0;
  // Whether this process may stop between two steps on its own: one process may; the ranks of a data-parallel run
  // stop only after a step whose reduction told all of them, so that none leaves another waiting in a collective.
  virtual bool stops_alone() const = 0;
  // The mean validation loss over `tokens` (nn::evaluate; dealt out over the ranks).
  virtual double evaluate(const std::vector<int>& tokens, int batch) const = 0;
  // Collective. The checkpoint: the model, its vocabulary, this optimizer's moments and the run (rank 0 writes).
  virtual void save(const std::string& path, const Vocab& vocab, const RunState& run) const = 0;
  virtual void restore(const TrainingState& state) = 0;
  // Milliseconds spent in collectives since the last call; none in one process.
  virtual std::optional<double> take_comm_ms() = 0;
};

// AdamW in one process.
class LocalOptimizer final : public Optimizer {
 public:
  LocalOptimizer(const Decoder& model, const AdamwConfig& config);
  StepResult step(const Batch& batch, float lr, Precision& precision, bool& stop) override;
  bool stops_alone() const override { return true; }
  double evaluate(const std::vector<int>& tokens, int batch) const override;
  void save(const std::string& path, const Vocab& vocab, const RunState& run) const override;
  void restore(const TrainingState& state) override;
  std::optional<double> take_comm_ms() override { return std::nullopt; }
  const Adamw& adamw() const { return adamw_; }

 private:
  const Decoder& model_;
  Adamw adamw_;
};

// DataParallelAdamw over comm's ranks (data_parallel.hpp).
class DataParallelOptimizer final : public Optimizer {
 public:
  // Every rank must construct it.
  DataParallelOptimizer(const Decoder& model, const AdamwConfig& config, dist::Comm& comm, const DataParallelOptions& options);
  StepResult step(const Batch& batch, float lr, Precision& precision, bool& stop) override;
  bool stops_alone() const override { return false; }
  double evaluate(const std::vector<int>& tokens, int batch) const override;
  // Gathers the moments to rank 0 and compares the ranks' parameters (a CollectiveError if they differ) first.
  void save(const std::string& path, const Vocab& vocab, const RunState& run) const override;
  void restore(const TrainingState& state) override;
  std::optional<double> take_comm_ms() override { return comm_.take_seconds() * 1e3; }
  const DataParallelAdamw& adamw() const { return adamw_; }

 private:
  const Decoder& model_;
  dist::Comm& comm_;
  DataParallelAdamw adamw_;
};

}  // namespace ptk::nn
