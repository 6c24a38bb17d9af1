#include "ptk/nn/optimizer.hpp"

#include "ptk/nn/checkpoint.hpp"

namespace ptk::nn {

LocalOptimizer::LocalOptimizer(const Decoder& model, const AdamwConfig& config)
    : model_(model), adamw_(model.parameters(), config) {}

StepResult LocalOptimizer::step(const Batch& batch, float lr, Precision& precision, bool&) {
  return train_step(model_, adamw_, batch, lr, precision);
}

double LocalOptimizer::evaluate(const std::vector<int>& tokens, int batch) const {
  return nn::evaluate(model_, tokens, batch);
}

void LocalOptimizer::save(const std::string& path, const Vocab& vocab, const RunState& run) const {
  save_checkpoint(path, model_, vocab, adamw_, run);
}

void LocalOptimizer::restore(const TrainingState& state) { restore_optimizer(adamw_, state); }

DataParallelOptimizer::DataParallelOptimizer(const Decoder& model, const AdamwConfig& config, dist::Comm& comm,
                                             const DataParallelOptions& options)
    : model_(model), comm_(comm), adamw_(model, config, comm, options) {}

StepResult DataParallelOptimizer::step(const Batch& batch, float lr, Precision& precision, bool& stop) {
  require(precision.dtype == DType::f32, "train: data-parallel training runs in f32 (mixed precision, --dtype ",
          dtype_name(precision.dtype), ", is built for one process)");
  return train_step(model_, adamw_, comm_, batch, lr, stop);
}

double DataParallelOptimizer::evaluate(const std::vector<int>& tokens, int batch) const {
  return nn::evaluate(model_, tokens, batch, &comm_);
}

void DataParallelOptimizer::save(const std::string& path, const Vocab& vocab, const RunState& run) const {
  const NamedParameters moments = adamw_.gathered_state();
  adamw_.check_in_sync();
  if (comm_.rank() == 0) save_checkpoint(path, model_, vocab, moments, adamw_.steps_taken(), run);
}

void DataParallelOptimizer::restore(const TrainingState& state) { restore_optimizer(adamw_, state); }

}  // namespace ptk::nn
