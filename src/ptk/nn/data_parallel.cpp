#include "ptk/nn/data_parallel.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "ptk/io/safetensors.hpp"

namespace ptk::nn {

Share batch_share(int B, int rank, int ranks) {
  require(ranks > 0 && rank >= 0 && rank < ranks, "data parallel: rank ", rank, " of ", ranks);
  require(B >= ranks, "data parallel: a batch of ", B, " windows cannot give each of ", ranks,
          " ranks one (--batch must be at least the number of ranks)");
  const int base = B / ranks, extra = B % ranks;
  Share s;
  s.begin = rank * base + std::min(rank, extra);
  s.end = s.begin + base + (rank < extra ? 1 : 0);
  return s;
}

Batch slice_batch(const Batch& batch, const Share& share) {
  require(0 <= share.begin && share.begin < share.end && share.end <= batch.B, "data parallel: windows [", share.begin,
          ", ", share.end, ") of a batch of ", batch.B);
  Batch out;
  out.B = share.size();
  out.T = batch.T;
  const auto from = static_cast<std::ptrdiff_t>(share.begin) * batch.T, to = static_cast<std::ptrdiff_t>(share.end) * batch.T;
  out.inputs.assign(batch.inputs.begin() + from, batch.inputs.begin() + to);
  out.targets.assign(batch.targets.begin() + from, batch.targets.begin() + to);
  return out;
}

DataParallelAdamw::DataParallelAdamw(const Decoder& model, const AdamwConfig& config, dist::Comm& comm,
                                     const DataParallelOptions& options)
    : model_(model), config_(config), comm_(comm), options_(options), flat_(vars_of(model.parameters())) {
  const std::int64_t n = flat_.size();
  require(n >= comm.size(), "data parallel: ", n, " parameters cannot be cut into ", comm.size(), " shards");
  require(options.bucket_bytes >= static_cast<std::int64_t>(sizeof(float)), "data parallel: bucket of ",
          options.bucket_bytes, " bytes holds no float");
  memory_ = flat_.device() == ag::Device::host ? dist::Memory::host : dist::Memory::device;
  // The shards: this rank's owns [shard_begin_, shard_end_) (its update range when sharded, its part of the norm always).
  for (std::int64_t r = 0; r < comm.size(); ++r) shard_counts_.push_back(n / comm.size() + (r < n % comm.size() ? 1 : 0));
  for (int r = 0; r < comm.rank(); ++r) shard_begin_ += shard_counts_[static_cast<std::size_t>(r)];
  shard_end_ = shard_begin_ + shard_counts_[static_cast<std::size_t>(comm.rank())];
  begin_ = options_.shard_optimizer ? shard_begin_ : 0;
  end_ = options_.shard_optimizer ? shard_end_ : n;
  // Buckets of whole parameters, from the last (the first a backward pass finishes), closed once they reach the cap.
  const std::int64_t cap = std::max<std::int64_t>(1, options.bucket_bytes / static_cast<std::int64_t>(sizeof(float)));
  const auto& params = model.parameters();
  bucket_of_.resize(params.size());
  for (std::size_t i = params.size(); i-- > 0;) {
    if (buckets_.empty() || buckets_.back().hi - buckets_.back().lo >= cap) {
      buckets_.emplace_back();
      buckets_.back().hi = flat_.offset(i) + flat_.numel(i);
    }
    buckets_.back().lo = flat_.offset(i);
    ++buckets_.back().parameters;
    bucket_of_[i] = static_cast<int>(buckets_.size()) - 1;
    parameter_of_[&params[i].second.impl()] = static_cast<int>(i);
  }
  for (const auto& np : model.parameters())
    weight_decay_.push_back(np.second.shape().size() == 2 ? config.weight_decay : 0.0f);  // as Adamw
  const ag::Device device = flat_.device();
  m_ = ag::Var::zeros({end_ - begin_}, device);
  v_ = ag::Var::zeros({end_ - begin_}, device);
  if (options_.shard_optimizer) shard_grad_ = ag::Var::zeros({end_ - begin_}, device);
  stats_ = ag::Var::zeros({2}, device);
}

void DataParallelAdamw::start(Bucket& bucket, float weight) {
  flat_.scale_grads(bucket.lo, bucket.hi, weight);
  comm_.start_allreduce_sum(flat_.grads() + bucket.lo, bucket.hi - bucket.lo, memory_);
  bucket.started = true;
}

std::function<void(const ag::Var&)> DataParallelAdamw::backward_hook(float weight) {
  require(overlaps(), "data parallel: backward_hook without overlap (or with a sharded optimizer)");
  for (auto& b : buckets_) {
    b.pending = b.parameters;
    b.started = false;
  }
  hooked_ = true;
  return [this, weight](const ag::Var& leaf) {
    const auto it = parameter_of_.find(&leaf.impl());
    if (it == parameter_of_.end()) return;  // not one of the model's parameters
    Bucket& b = buckets_[static_cast<std::size_t>(bucket_of_[static_cast<std::size_t>(it->second)])];
    if (--b.pending == 0) start(b, weight);
    comm_.progress();
  };
}

void DataParallelAdamw::reduce_gradients(float weight) {
  if (hooked_) {
    // Overlapped: the buckets whose parameters the backward pass never reached start now; then all finish.
    for (auto& b : buckets_)
      if (!b.started) start(b, weight);
    comm_.wait_all();
    hooked_ = false;
    return;
  }
  flat_.scale_grads(0, flat_.size(), weight);
  if (options_.shard_optimizer) {
    comm_.reduce_scatter_sum(flat_.grads(), ag::FlatParameters::data_pointer(shard_grad_), shard_counts_, memory_);
    flat_.set_grads(begin_, shard_grad_);
  } else {
    for (const auto& b : buckets_) comm_.allreduce_sum(flat_.grads() + b.lo, b.hi - b.lo, memory_);
  }
}

float DataParallelAdamw::step(float lr, float weight, std::vector<double>& also_sum) {
  reduce_gradients(weight);
  // The norm's squares over this rank's shard of the reduced gradient, in both modes (see the header).
  std::vector<double> sums{flat_.grad_squares(shard_begin_, shard_end_)};
  sums.insert(sums.end(), also_sum.begin(), also_sum.end());
  comm_.allreduce_sum(sums.data(), static_cast<std::int64_t>(sums.size()));
  std::copy(sums.begin() + 1, sums.end(), also_sum.begin());

  // As kernels::global_norm computes them from its double sum.
  const double norm = std::sqrt(sums[0]);
  const float max_norm = config_.max_grad_norm;
  const float clip = max_norm > 0 && norm > max_norm ? static_cast<float>(max_norm / norm) : 1.0f;
  stats_.assign({static_cast<float>(norm), clip});
  ++t_;
  flat_.adamw(begin_, end_, m_, v_, adamw_step(config_, t_, lr), weight_decay_, stats_);
  if (options_.shard_optimizer) comm_.allgather(flat_.values(), shard_counts_, memory_);
  return static_cast<float>(norm);
}

NamedParameters DataParallelAdamw::gathered_state() const {
  const std::int64_t n = flat_.size();
  std::vector<std::int64_t> counts = shard_counts_;
  if (!options_.shard_optimizer)  // every rank holds the same whole moments: rank 0's are enough
    for (std::size_t r = 0; r < counts.size(); ++r) counts[r] = r == 0 ? n : 0;
  const bool root = comm_.rank() == 0;
  std::vector<float> m(root ? static_cast<std::size_t>(n) : 0), v(m.size());
  comm_.gather_to_root(ag::FlatParameters::data_pointer(m_), m.data(), counts, memory_);
  comm_.gather_to_root(ag::FlatParameters::data_pointer(v_), v.data(), counts, memory_);
  NamedParameters out;
  if (!root) return out;
  const auto& params = model_.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto at = static_cast<std::ptrdiff_t>(flat_.offset(i)), len = static_cast<std::ptrdiff_t>(flat_.numel(i));
    const auto& shape = params[i].second.shape();
    out.emplace_back("m." + params[i].first,
                     ag::Var::from_vector(shape, std::vector<float>(m.begin() + at, m.begin() + at + len), ag::Device::host));
    out.emplace_back("v." + params[i].first,
                     ag::Var::from_vector(shape, std::vector<float>(v.begin() + at, v.begin() + at + len), ag::Device::host));
  }
  return out;
}

void DataParallelAdamw::load_state(const std::vector<std::pair<std::string, std::vector<float>>>& tensors,
                                   int steps_taken) {
  std::map<std::string, const std::vector<float>*> by_name;
  for (const auto& t : tensors) by_name[t.first] = &t.second;
  std::vector<float> m(static_cast<std::size_t>(end_ - begin_)), v(m.size());
  const auto& params = model_.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::int64_t lo = std::max(begin_, flat_.offset(i)), hi = std::min(end_, flat_.offset(i) + flat_.numel(i));
    const std::pair<const char*, std::vector<float>*> moments[] = {{"m.", &m}, {"v.", &v}};
    for (const auto& [prefix, out] : moments) {
      const std::string name = prefix + params[i].first;
      const auto it = by_name.find(name);
      require(it != by_name.end(), "optimizer state: no tensor '", name, "'");
      require(static_cast<std::int64_t>(it->second->size()) == flat_.numel(i), "optimizer state: '", name, "' has ",
              it->second->size(), " values, the parameter has shape ", params[i].second.shape());
      if (lo < hi)
        std::copy(it->second->begin() + (lo - flat_.offset(i)), it->second->begin() + (hi - flat_.offset(i)),
                  out->begin() + (lo - begin_));
    }
  }
  m_.assign(m);
  v_.assign(v);
  t_ = steps_taken;
}

void DataParallelAdamw::check_in_sync() const {
  std::vector<float> values;
  values.reserve(static_cast<std::size_t>(flat_.size()));
  for (const auto& np : model_.parameters()) {
    const auto v = np.second.values();
    values.insert(values.end(), v.begin(), v.end());
  }
  const std::string crc = io::crc32_hex(values.data(), values.size() * sizeof(float));
  const auto all = comm_.allgather(crc);
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      throw dist::CollectiveError("data parallel: the ranks' parameters differ (CRC-32 " + all[0] + " on rank 0, " +
                                  all[r] + " on rank " + std::to_string(r) +
                                  "): the MPI reduction did not give every rank the same sums");
}

}  // namespace ptk::nn
