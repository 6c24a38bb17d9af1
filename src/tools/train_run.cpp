// ptk train's run, resolved before anything is allocated (train_run.hpp).
#include "train_run.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <fstream>
#include <limits>

#include "commands.hpp"
#include "device_memory.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/io/safetensors.hpp"
#include "ptk/nn/memory_estimate.hpp"

namespace ptk::tools {

namespace {

// The shipped text: beside an installed ptk first, else in the source tree.
std::string default_data() {
  const std::string installed = std::string(PTK_INSTALL_DATADIR) + "/kjv_genesis_exodus.txt";
  if (std::ifstream(installed).good()) return installed;
  return std::string(PTK_SOURCE_DIR) + "/data/kjv_genesis_exodus.txt";
}

// The training text: a path that is not a regular file (/dev/zero, a fifo, a directory) is refused before it is
// opened; Dataset::read_text bounds the rest.
std::string read_data(const std::string& path) {
  try {
    io::require_regular_file(path);
  } catch (const io::FileError& e) {
    throw UsageError{"train: --data " + std::string(e.what())};
  }
  return nn::Dataset::read_text(path);
}

// A model option given together with --load must agree with the checkpoint.
void check_agrees(const CLI::Option* opt, int given, int stored, const char* key) {
  if (opt->count() > 0 && given != stored)
    throw UsageError{"train: " + opt->get_name() + " " + std::to_string(given) + " disagrees with the checkpoint's " +
                     key + " " + std::to_string(stored) + " (leave it out to use the checkpoint's)"};
}

// --tokenizer's tokenizer; a file it cannot read or does not support is the command line's fault.
std::shared_ptr<const text::Tokenizer> load_tokenizer(const std::string& path) {
  try {
    return text::load_tokenizer(path);
  } catch (const Error& e) {
    throw UsageError{"train: --tokenizer " + std::string(e.what())};
  }
}

// The text as the model's tokens: its bytes, or the tokenizer's ids of it (no BOS: one continuous text).
nn::Dataset tokens_of(const TrainRun& t, const nn::Vocab& vocab) {
  if (!t.tokenizer) return nn::Dataset::from_text(t.text, vocab);
  try {
    return nn::Dataset::from_tokens(t.tokenizer->encode(t.text, /*parse_special=*/false), vocab);
  } catch (const Error& e) {
    throw UsageError{"train: --data " + t.data_path + ": " + e.what()};
  }
}

// A checkpoint trained on a tokenizer's ids continues only with that tokenizer, and a byte model only without one.
void check_same_tokenizer(const Options& o, const TrainRun& t) {
  const std::string& stored = t.checkpoint.vocab.tokenizer();
  const std::string given = t.tokenizer ? t.tokenizer->fingerprint() : "";
  if (stored == given) return;
  if (given.empty())
    throw UsageError{"train: " + o.load + " was trained on the ids of a tokenizer (" + stored + "): give it with --tokenizer"};
  throw UsageError{"train: --tokenizer " + o.tokenizer + " is " + given + ", but " + o.load + " was trained on " +
                   (stored.empty() ? std::string("bytes") : stored)};
}

// The bytes of text the validation windows' targets stand for (nn::evaluate's windows: consecutive, T + 1 tokens,
// the first of each only an input).
double val_target_bytes(const TrainRun& t) {
  const std::size_t T = static_cast<std::size_t>(t.config.block_size);
  double bytes = 0;
  for (std::size_t w = 0; (w + 1) * (T + 1) <= t.data.val.size(); ++w)
    for (std::size_t j = 1; j <= T; ++j)
      bytes += t.tokenizer ? static_cast<double>(t.tokenizer->token_bytes(t.data.val[w * (T + 1) + j], false).size()) : 1.0;
  return bytes;
}

// The model's configuration and the tokens: the checkpoint's architecture and vocabulary with --load (a model option
// given again must agree with it), else the options' and the text's own.
void resolve_model(const Options& o, const Given& given, TrainRun& t) {
  if (!o.tokenizer.empty()) t.tokenizer = load_tokenizer(o.tokenizer);
  t.config = nn::DecoderConfig{o.layers, o.heads, o.width, o.block, 0};
  t.config.arch = nn::parse_arch(o.arch);
  t.config.n_kv_head = o.kv_heads;
  if (!o.load.empty()) {
    const nn::DecoderConfig& stored = t.checkpoint.config;
    if (given.arch->count() > 0 && t.config.arch != stored.arch)
      throw UsageError{"train: --arch " + o.arch + " disagrees with the checkpoint's arch " + nn::to_string(stored.arch) +
                       " (leave it out to use the checkpoint's)"};
    check_agrees(given.kv_heads, o.kv_heads, nn::kv_heads(stored), "n_kv_head");
    check_agrees(given.layers, o.layers, stored.n_layer, "n_layer");
    check_agrees(given.heads, o.heads, stored.n_head, "n_head");
    check_agrees(given.width, o.width, stored.n_embd, "n_embd");
    check_agrees(given.block, o.block, stored.block_size, "block_size");
    t.config = stored;
    check_same_tokenizer(o, t);
    try {
      t.data = tokens_of(t, t.checkpoint.vocab);
    } catch (const InputError& e) {
      throw UsageError{"train: " + t.data_path + " does not fit the checkpoint's vocabulary: " + e.what()};
    }
  } else {
    if (given.kv_heads->count() > 0 && t.config.arch != nn::Arch::llama)
      throw UsageError{"train: --kv-heads is for --arch llama (gpt2 has one key/value head per query head)"};
    t.data = t.tokenizer ? tokens_of(t, nn::Vocab::of_tokenizer(t.tokenizer->vocab_size(), t.tokenizer->fingerprint()))
                         : nn::Dataset::from_text(t.text);
    t.config.vocab_size = t.data.vocab.size();
  }
  nn::check_config(t.config);
  t.val_target_bytes = val_target_bytes(t);
}

// A resumed run keeps its settings; one given again with another value changes it, and says so.
std::vector<std::string> apply_changes(nn::RunState& run, const Options& o, const Given& g) {
  std::vector<std::string> changed;
  if (g.steps->count() && o.steps != run.schedule.steps) {
    changed.push_back("steps " + std::to_string(run.schedule.steps) + " -> " + std::to_string(o.steps) +
                      " (the cosine schedule stretches: lr differs from the original run's)");
    run.schedule.steps = o.steps;
  }
  if (g.lr->count() && o.lr != run.schedule.lr) {
    changed.push_back("lr " + scientific(run.schedule.lr) + " -> " + scientific(o.lr));
    run.schedule.lr = o.lr;
    run.schedule.min_lr = o.lr / 10;
  }
  if (g.batch->count() && o.batch != run.batch) {
    changed.push_back("batch " + std::to_string(run.batch) + " -> " + std::to_string(o.batch));
    run.batch = o.batch;
  }
  if (g.seed->count() && o.seed != run.seed) {
    changed.push_back("seed " + std::to_string(run.seed) + " -> " + std::to_string(o.seed) + " (new batch sequence)");
    run.seed = o.seed;
    run.sampler_draws = 0;
  }
  return changed;
}

// The run: continued from the checkpoint's training state, or a new one (one id for every rank: rank 0's).
void resolve_run_state(const Options& o, const Given& given, dist::Comm& comm, TrainRun& t) {
  t.resuming = t.checkpoint.training.has_value();
  nn::RunState& run = t.run;
  DType dtype = DType::f32;
  parse_dtype(o.dtype, dtype);  // a name CLI11 checked
  if (t.resuming) {
    run = t.checkpoint.training->run;
    t.changed = apply_changes(run, o, given);
    if (!o.eval_only && given.dtype->count() > 0 && dtype != run.precision.dtype)
      throw UsageError{"train: --dtype " + o.dtype + ", but the run saved in " + o.load + " trains in " +
                       dtype_name(run.precision.dtype) + " (a run keeps its dtype; --weights-only starts a new run)"};
  } else {
    run.id = comm.allgather(nn::new_run_id())[0];
    run.schedule = {o.lr, o.lr / 10, nn::default_warmup(o.steps), o.steps};
    run.batch = o.batch;
    run.seed = o.seed;
    if (!o.eval_only) run.precision.dtype = dtype;
  }
  if (run.precision.dtype != DType::f32 && comm.distributed())
    throw UsageError{std::string("train: mixed precision (--dtype ") + dtype_name(run.precision.dtype) +
                     ") is built for one process, not under mpirun"};
  if (t.resuming && (run.data_bytes != static_cast<std::int64_t>(t.text.size()) || run.data_crc32 != t.text_crc))
    t.data_was = std::to_string(run.data_bytes) + " bytes, CRC " + run.data_crc32;
  run.data_path = t.data_path;
  run.data_bytes = static_cast<std::int64_t>(t.text.size());
  run.data_crc32 = t.text_crc;
  t.train = !o.eval_only && run.step < run.schedule.steps;
}

// A step's tokens must fit an int, and each split must hold one window of block + 1 tokens.
void check_windows(const TrainRun& t) {
  const std::int64_t T = t.config.block_size, B = t.run.batch;
  if (B * T > std::numeric_limits<int>::max())
    throw UsageError{"train: batch x block = " + std::to_string(B) + " x " + std::to_string(T) +
                     " tokens a step is more than 2^31 - 1"};
  for (const auto* split : {&t.data.train, &t.data.val})
    if (static_cast<std::int64_t>(split->size()) < T + 1)
      throw UsageError{"train: the " + std::string(split == &t.data.train ? "training" : "validation") + " split of " +
                       t.data_path + " has " + std::to_string(split->size()) +
                       " bytes, fewer than one window of block + 1 = " + std::to_string(T + 1)};
}

// What every rank of a data-parallel run must agree on before the first collective: the build, the model, the
// run and the data (dist::require_same_configuration names the first difference).
std::vector<std::pair<std::string, std::string>> agreement(const Options& o, const TrainRun& t, ag::Device device) {
  const nn::DecoderConfig& c = t.config;
  const nn::RunState& run = t.run;
  return {{"ptk", PTK_VERSION},
          {"kokkos", std::to_string(KOKKOS_VERSION)},
          {"device", ag::describe(device)},
          {"arch", nn::to_string(c.arch)},
          {"layers", std::to_string(c.n_layer)},
          {"heads", std::to_string(c.n_head)},
          {"kv_heads", std::to_string(nn::kv_heads(c))},
          {"width", std::to_string(c.n_embd)},
          {"block", std::to_string(c.block_size)},
          {"vocab", std::to_string(c.vocab_size)},
          {"tokenizer", t.data.vocab.tokenizer()},
          {"run", run.id},
          {"start_step", std::to_string(run.step)},
          {"steps", std::to_string(run.schedule.steps)},
          {"batch", std::to_string(run.batch)},
          {"lr", scientific(run.schedule.lr)},
          {"seed", std::to_string(run.seed)},
          {"sampler_draws", std::to_string(run.sampler_draws)},
          {"data_bytes", std::to_string(run.data_bytes)},
          {"data_crc32", run.data_crc32},
          {"dtype", dtype_name(run.precision.dtype)},
          {"load", o.load + (o.load.empty() ? "" : "@" + std::to_string(t.checkpoint.step))},
          {"weights_only", std::to_string(o.weights_only)},
          {"eval_only", std::to_string(o.eval_only)},
          {"shard_optimizer", std::to_string(o.shard_optimizer)},
          {"bucket_mb", fixed(o.bucket_mb, 3)},
          {"overlap_comm", std::to_string(o.overlap_comm)},
          {"save", o.save},
          {"save_every", std::to_string(o.save_every)},
          {"eval_every", std::to_string(o.eval_every)},
          {"sample", std::to_string(o.sample)}};
}

}  // namespace

TrainRun resolve_run(const Options& o, const Given& given, dist::Comm& comm, ag::Device device) {
  TrainRun t;
  if (!o.load.empty()) t.checkpoint = nn::load_checkpoint(o.load, !o.weights_only && !o.eval_only);
  // A resumed run reads its own text again unless --data names another.
  t.data_path = !o.data.empty()                   ? o.data
                : t.checkpoint.training.has_value() ? t.checkpoint.training->run.data_path
                                                    : default_data();
  t.text = read_data(t.data_path);
  t.text_crc = io::crc32_hex(t.text.data(), t.text.size());
  resolve_model(o, given, t);
  resolve_run_state(o, given, comm, t);
  check_windows(t);
  // One rank agrees with itself: both checks below only refuse in a data-parallel run.
  dist::require_same_configuration(comm, agreement(o, t, device));
  if (t.run.batch < comm.size())
    throw dist::CollectiveError("train: --batch " + std::to_string(t.run.batch) + " cannot give each of the " +
                                std::to_string(comm.size()) + " ranks a window (the global batch is split across them)");
  return t;
}

double bits_per_byte(double val_loss, const TrainRun& t) {
  const std::size_t T = static_cast<std::size_t>(t.config.block_size);
  const double targets = static_cast<double>(t.data.val.size() / (T + 1) * T);
  return t.val_target_bytes > 0 ? val_loss * targets / t.val_target_bytes / std::log(2.0) : 0.0;
}

void check_memory(const nn::DecoderConfig& c, int windows, bool training, ag::Device device, DType dtype) {
  const auto e = nn::estimate_training_memory(
      {c.n_layer, c.n_head, c.n_embd, c.block_size, c.vocab_size, windows, c.arch, nn::kv_heads(c), nn::mlp_hidden(c)},
      dtype);
  const double need = training ? static_cast<double>(e.total_bytes())
                               : static_cast<double>(e.parameter_bytes) + static_cast<double>(e.activation_bytes);
  refuse_unless_fits("train", need,
                     std::to_string(c.n_layer) + " layers, width " + std::to_string(c.n_embd) + ", block " +
                         std::to_string(c.block_size) + ", batch " + std::to_string(windows) +
                         "; ptk info --model gives the parts",
                     device);
}

}  // namespace ptk::tools
