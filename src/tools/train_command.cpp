// ptk train: a byte-level language model (GPT-2 or Llama architecture, --arch) trained on a text, with crash-safe checkpoints that a
// run resumes from bit for bit (nn/checkpoint.hpp), a memory check before anything is allocated, and a run
// you can watch (progress with ETA, --eval-every, --log, streamed --sample).
#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "ptk/core/allocate.hpp"
#include "ptk/core/runtime.hpp"
#include "ptk/dist/comm.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/io/safetensors.hpp"
#include "ptk/nn/checkpoint.hpp"
#include "ptk/nn/data_parallel.hpp"
#include "ptk/nn/memory_estimate.hpp"
#include "ptk/nn/train.hpp"
#include "train_watch.hpp"

namespace ptk::tools {

namespace {

// The shipped text: beside an installed ptk first, else in the source tree.
std::string default_data() {
  const std::string installed = std::string(PTK_INSTALL_DATADIR) + "/kjv_genesis_exodus.txt";
  if (std::ifstream(installed).good()) return installed;
  return std::string(PTK_SOURCE_DIR) + "/data/kjv_genesis_exodus.txt";
}

struct Options {
  std::string data, save, load, log, device = "default", arch = "gpt2";
  int steps = 1500, batch = 16, block = 64, layers = 4, heads = 4, kv_heads = 0, width = 128, sample = 0,
      save_every = 0, eval_every = 0;
  float lr = 2e-3f, bucket_mb = 25.0f;
  std::uint64_t seed = 1337;
  bool eval_only = false, weights_only = false, shard_optimizer = false, overlap_comm = false;
};

// On the ranks other than 0 of a data-parallel run, std::cout prints nothing while this lives: rank 0 alone
// reports (errors still reach std::cerr from any rank).
class QuietOutput {
 public:
  explicit QuietOutput(bool quiet) : saved_(quiet ? std::cout.rdbuf(&sink_) : nullptr) {}
  ~QuietOutput() {
    if (saved_ != nullptr) std::cout.rdbuf(saved_);
  }
  QuietOutput(const QuietOutput&) = delete;
  QuietOutput& operator=(const QuietOutput&) = delete;

 private:
  struct Sink : std::streambuf {
    int overflow(int c) override { return c == EOF ? 0 : c; }
  } sink_;
  std::streambuf* saved_;
};

// The run settings a user may give again on resume; each remembers whether it was given.
struct Given {
  CLI::Option *steps, *batch, *lr, *seed, *block, *layers, *heads, *width, *arch, *kv_heads;
};

std::string fixed(double x, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << x;
  return s.str();
}

std::string scientific(double x) {
  std::ostringstream s;
  s << std::scientific << std::setprecision(2) << x;
  return s.str();
}

Given add_options(CLI::App& app, Options& o) {
  constexpr std::int64_t kMaxSteps = 1 << 30, kMaxSize = 1 << 20;
  Given g{};
  app.add_option("--data", o.data, "text file; the vocabulary is its sorted distinct bytes (at most 1 GiB)")
      ->check(file_name())->default_str("the KJV Genesis-Exodus in data/, or a resumed run's own");
  g.steps = app.add_option("--steps", o.steps, "the run's total optimizer steps (its lr schedule's horizon)")
                ->capture_default_str()->check(whole_number(0, kMaxSteps));
  g.batch = app.add_option("--batch", o.batch, "windows per step (B)")->capture_default_str()->check(whole_number(1, kMaxSize));
  g.block = app.add_option("--block", o.block, "context length T (block_size)")->capture_default_str()->check(whole_number(1, kMaxSize));
  g.layers = app.add_option("--layers", o.layers, "transformer blocks L")->capture_default_str()->check(whole_number(1, 4096));
  g.heads = app.add_option("--heads", o.heads, "attention heads H")->capture_default_str()->check(whole_number(1, 4096));
  g.arch = app.add_option("--arch", o.arch, "gpt2 or llama (rmsnorm, rope, grouped-query attention, gated silu MLP)")
               ->capture_default_str()->check(CLI::IsMember({"gpt2", "llama"}));
  g.kv_heads = app.add_option("--kv-heads", o.kv_heads, "llama: key/value heads, dividing H (grouped-query attention)")
                   ->default_str("H")->check(whole_number(1, 4096));
  g.width = app.add_option("--width", o.width, "embedding width C (divisible by H)")->capture_default_str()->check(whole_number(1, kMaxSize));
  g.lr = app.add_option("--lr", o.lr, "peak learning rate (warm-up, then cosine decay to lr/10)")->capture_default_str()->check(positive_finite());
  g.seed = app.add_option("--seed", o.seed, "seeds the weights, the batches and the sampling")->capture_default_str()->check(seed_number());
  app.add_option("--save", o.save, "checkpoint: the model and, beside it, its training state (checked writable first; "
                                   "no other ptk may write it while this one runs)")->check(file_name());
  app.add_option("--save-every", o.save_every, "also save every N steps (0: only at the end)")->check(whole_number(0, kMaxSteps));
  app.add_option("--load", o.load, "continue the run saved there (or start a new one from a model alone)")->check(file_name());
  app.add_flag("--weights-only", o.weights_only, "with --load: take the weights only and start a new run");
  app.add_option("--eval-every", o.eval_every, "print the validation loss every N steps (0: only at the end)")->check(whole_number(0, kMaxSteps));
  app.add_option("--log", o.log, "append one JSON line per step to FILE (scripts/plot_training.py draws it)")->check(file_name());
  app.add_flag("--eval-only", o.eval_only, "no training: print the validation loss");
  app.add_option("--sample", o.sample, "print N bytes generated by the model, as they come")->check(whole_number(0, kMaxSteps));
  app.add_flag("--shard-optimizer", o.shard_optimizer,
               "under mpirun: each rank keeps AdamW's moments for 1/N of the parameters (ZeRO-1)");
  app.add_option("--bucket-mb", o.bucket_mb, "under mpirun: allreduce the gradients in buckets (of whole parameters) of about this many MiB")
      ->capture_default_str()->check(positive_finite());
  app.add_flag("--overlap-comm", o.overlap_comm,
               "under mpirun, unsharded: start each bucket's allreduce during the backward pass (docs/distributed.md)");
  app.add_option("--device", o.device, "host or default (the GPU in a GPU build)")->capture_default_str()->check(CLI::IsMember({"host", "default"}));
  return g;
}

// A model option given together with --load must agree with the checkpoint.
void check_agrees(const CLI::Option* opt, int given, int stored, const char* key) {
  if (opt->count() > 0 && given != stored)
    throw UsageError{"train: " + opt->get_name() + " " + std::to_string(given) + " disagrees with the checkpoint's " +
                     key + " " + std::to_string(stored) + " (leave it out to use the checkpoint's)"};
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

// Refuses, before anything is allocated, a run whose estimated memory exceeds what the device has free.
void check_memory(const nn::DecoderConfig& c, int batch, bool training, ag::Device device) {
  const auto e = nn::estimate_training_memory(
      {c.n_layer, c.n_head, c.n_embd, c.block_size, c.vocab_size, batch, c.arch, nn::kv_heads(c), nn::mlp_hidden(c)});
  const double need = training ? static_cast<double>(e.total_bytes())
                               : static_cast<double>(e.parameter_bytes) + static_cast<double>(e.activation_bytes);
  const bool on_gpu = device == ag::Device::device && *runtime::gpu_backend() != '\0';
  double available = 0;
  std::string where = "host memory available";
  if (on_gpu) {
    const auto probe = runtime::probe_gpus(true);
    if (!probe.devices.empty()) available = static_cast<double>(probe.devices[0].free_bytes);
    where = std::string(runtime::gpu_backend()) + " device 0 free memory";
  } else {
    available = static_cast<double>(runtime::host_available_bytes());
  }
  if (available > 0 && need > available)
    throw UsageError{"train: this run needs about " + human_bytes(need) + " (" + std::to_string(c.n_layer) + " layers, width " +
                     std::to_string(c.n_embd) + ", block " + std::to_string(c.block_size) + ", batch " + std::to_string(batch) +
                     "; ptk info --model gives the parts) but " + where + " is " + human_bytes(available)};
}

std::string run_header(const nn::RunState& run, const nn::DecoderConfig& c, const std::string& data_path) {
  return nlohmann::json{{"id", run.id},        {"data", data_path},        {"arch", nn::to_string(c.arch)},
                        {"kv_heads", nn::kv_heads(c)},                       {"layers", c.n_layer},
                        {"heads", c.n_head},   {"width", c.n_embd},        {"block", c.block_size},
                        {"batch", run.batch},  {"steps", run.schedule.steps}, {"lr", run.schedule.lr},
                        {"seed", run.seed},    {"start_step", run.step}}
      .dump();
}

// What every rank of a data-parallel run must agree on before the first collective: the build, the model, the
// run and the data (dist::require_same_configuration names the first difference).
std::vector<std::pair<std::string, std::string>> agreement(const Options& o, const nn::DecoderConfig& c, const nn::RunState& run,
                                                           ag::Device device, const std::string& load_step) {
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
          {"run", run.id},
          {"start_step", std::to_string(run.step)},
          {"steps", std::to_string(run.schedule.steps)},
          {"batch", std::to_string(run.batch)},
          {"lr", scientific(run.schedule.lr)},
          {"seed", std::to_string(run.seed)},
          {"sampler_draws", std::to_string(run.sampler_draws)},
          {"data_bytes", std::to_string(run.data_bytes)},
          {"data_crc32", run.data_crc32},
          {"load", o.load + load_step},
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

// --save, checked writable and held for the whole run: a second run saving to the same name refuses at its start,
// instead of both saving and one result being silently lost.
std::unique_ptr<io::OutputLock> hold_save_path(const std::string& path) {
  try {
    io::check_can_write(path);
    return std::make_unique<io::OutputLock>(path);
  } catch (const io::FileError& e) {
    throw UsageError{"train: --save " + std::string(e.what())};
  }
}

std::string megabytes(double bytes) { return fixed(bytes / 1e6, 2) + " MB"; }

}  // namespace

int train_command(const Args& args) {
  Options o;
  CLI::App app{"Train a byte-level language model (GPT-2 or Llama architecture) on a text (first 90 % trains, last 10 % validates).",
               "ptk train"};
  const Given given = add_options(app, o);
  if (parse_command_line(app, args, "train")) return 0;
  if (o.weights_only && o.load.empty()) throw UsageError{"train: --weights-only needs --load"};
  if (o.save_every > 0 && o.save.empty()) throw UsageError{"train: --save-every needs --save (where to save)"};
  dist::Comm& comm = dist::Comm::world();
  const bool parallel = comm.distributed(), root = comm.rank() == 0;
  const QuietOutput quiet(!root);

  const ag::Device device = ag::parse_device(o.device);
  nn::Checkpoint checkpoint;
  if (!o.load.empty()) checkpoint = nn::load_checkpoint(o.load, !o.weights_only && !o.eval_only);
  // A resumed run reads its own text again unless --data names another.
  const std::string data_path = !o.data.empty()                 ? o.data
                                : checkpoint.training.has_value() ? checkpoint.training->run.data_path
                                                                  : default_data();
  const std::string text = read_data(data_path);
  const std::string text_crc = io::crc32_hex(text.data(), text.size());

  nn::DecoderConfig config{o.layers, o.heads, o.width, o.block, 0};
  config.arch = nn::parse_arch(o.arch);
  config.n_kv_head = o.kv_heads;
  nn::Dataset data;
  if (!o.load.empty()) {
    // The architecture is the checkpoint's; one given again must agree with it.
    if (given.arch->count() > 0 && config.arch != checkpoint.config.arch)
      throw UsageError{"train: --arch " + o.arch + " disagrees with the checkpoint's arch " +
                       nn::to_string(checkpoint.config.arch) + " (leave it out to use the checkpoint's)"};
    check_agrees(given.kv_heads, o.kv_heads, nn::kv_heads(checkpoint.config), "n_kv_head");
    check_agrees(given.layers, o.layers, checkpoint.config.n_layer, "n_layer");
    check_agrees(given.heads, o.heads, checkpoint.config.n_head, "n_head");
    check_agrees(given.width, o.width, checkpoint.config.n_embd, "n_embd");
    check_agrees(given.block, o.block, checkpoint.config.block_size, "block_size");
    config = checkpoint.config;
    try {
      data = nn::Dataset::from_text(text, checkpoint.vocab);
    } catch (const Error& e) {
      throw UsageError{"train: " + data_path + " does not fit the checkpoint's vocabulary: " + e.what()};
    }
  } else {
    if (given.kv_heads->count() > 0 && config.arch != nn::Arch::llama)
      throw UsageError{"train: --kv-heads is for --arch llama (gpt2 has one key/value head per query head)"};
    data = nn::Dataset::from_text(text);
    config.vocab_size = data.vocab.size();
  }
  nn::check_config(config);

  // The run: continued from the checkpoint's training state, or a new one.
  const bool resuming = checkpoint.training.has_value();
  nn::RunState run;
  std::vector<std::string> changed;
  if (resuming) {
    run = checkpoint.training->run;
    changed = apply_changes(run, o, given);
  } else {
    run.id = nn::new_run_id();
    if (parallel) run.id = comm.allgather(run.id)[0];  // one run: rank 0's id
    run.schedule = {o.lr, o.lr / 10, nn::default_warmup(o.steps), o.steps};
    run.batch = o.batch;
    run.seed = o.seed;
  }
  const bool data_changed = resuming && (run.data_bytes != static_cast<std::int64_t>(text.size()) || run.data_crc32 != text_crc);
  const std::string data_was = std::to_string(run.data_bytes) + " bytes, CRC " + run.data_crc32;
  run.data_path = data_path;
  run.data_bytes = static_cast<std::int64_t>(text.size());
  run.data_crc32 = text_crc;

  const std::int64_t T = config.block_size, B = run.batch;
  if (B * T > std::numeric_limits<int>::max())
    throw UsageError{"train: batch x block = " + std::to_string(B) + " x " + std::to_string(T) + " tokens a step is more than 2^31 - 1"};
  for (const auto* split : {&data.train, &data.val})
    if (static_cast<std::int64_t>(split->size()) < T + 1)
      throw UsageError{"train: the " + std::string(split == &data.train ? "training" : "validation") + " split of " +
                       data_path + " has " + std::to_string(split->size()) + " bytes, fewer than one window of block + 1 = " +
                       std::to_string(T + 1)};
  const bool train = !o.eval_only && run.step < run.schedule.steps;
  if (parallel) {
    dist::require_same_configuration(comm, agreement(o, config, run, device, o.load.empty() ? "" : "@" + std::to_string(checkpoint.step)));
    if (run.batch < comm.size())
      throw dist::CollectiveError("train: --batch " + std::to_string(run.batch) + " cannot give each of the " +
                                  std::to_string(comm.size()) + " ranks a window (the global batch is split across them)");
  }
  const nn::Share share = nn::batch_share(run.batch, comm.rank(), comm.size());
  check_memory(config, share.size(), !o.eval_only, device);
  const auto save_lock = !o.save.empty() && root ? hold_save_path(o.save) : nullptr;  // rank 0 writes it
  TrainLog log = o.log.empty() || !root ? TrainLog() : TrainLog(o.log);

  nn::Decoder model(config, device, run.seed);
  if (!o.load.empty()) nn::assign_parameters(model, checkpoint);
  // One process: AdamW as ever. Several: the data-parallel optimizer (nn/data_parallel.hpp), which never holds the
  // whole moments when sharded.
  std::optional<nn::Adamw> optimizer;
  std::optional<nn::DataParallelAdamw> parallel_optimizer;
  if (parallel) {
    const auto bucket = static_cast<std::int64_t>(static_cast<double>(o.bucket_mb) * 1024 * 1024);
    parallel_optimizer.emplace(model, nn::AdamwConfig{}, comm, nn::DataParallelOptions{o.shard_optimizer, bucket, o.overlap_comm});
    if (resuming) nn::restore_optimizer(*parallel_optimizer, *checkpoint.training);
  } else {
    optimizer.emplace(model.parameters(), nn::AdamwConfig{});
    if (resuming) nn::restore_optimizer(*optimizer, *checkpoint.training);
  }

  std::cout << "data   " << data_path << ": " << text.size() << " bytes, vocabulary " << data.vocab.size() << " (ln V = "
            << fixed(std::log(static_cast<double>(data.vocab.size())), 4) << "), " << data.train.size() << " train / "
            << data.val.size() << " validation tokens\n"
            << "model  " << (config.arch == nn::Arch::llama ? "llama, " : "") << config.n_layer << " layers, "
            << config.n_head << " heads"
            << (config.arch == nn::Arch::llama ? " (" + std::to_string(nn::kv_heads(config)) + " kv)" : "") << ", width "
            << config.n_embd
            << ", block " << config.block_size << ": " << fixed(static_cast<double>(model.parameter_count()) / 1e6, 3)
            << " M parameters on " << ag::describe(device) << "\n";
  if (!o.load.empty())
    std::cout << "load   " << o.load << " (step " << checkpoint.step << ")"
              << (resuming ? ": continuing run " + run.id + " at step " + std::to_string(run.step) + " of " +
                                 std::to_string(run.schedule.steps)
                           : o.eval_only ? "" : ": weights only, a new run")
              << "\n";
  for (const auto& c : changed) std::cout << "changed " << c << "\n";
  if (data_changed)
    std::cout << "warning: " << data_path << " is not the text this run trained on (" << data_was << ", now "
              << text.size() << " bytes, CRC " << text_crc << "): its batches differ from the original run's\n";
  if (parallel) {
    const auto& p = *parallel_optimizer;
    // Each rank's AdamW moments, as allocated (a collective: every rank reaches it).
    std::string per_rank;
    for (const auto& bytes : comm.allgather(std::to_string(p.state_bytes())))
      per_rank += (per_rank.empty() ? "" : " / ") + megabytes(std::stod(bytes));
    const nn::Share first = nn::batch_share(run.batch, 0, comm.size()), last = nn::batch_share(run.batch, comm.size() - 1, comm.size());
    std::cout << "dist   " << comm.size() << " ranks (" << comm.library() << "), "
              << Kokkos::DefaultHostExecutionSpace().concurrency() << " host thread(s) on rank 0: each step's " << run.batch
              << " windows split " << first.size() << (first.size() != last.size() ? " or " + std::to_string(last.size()) : "")
              << " a rank; "
              << (p.sharded() ? "gradients reduce-scattered, parameters allgathered (ZeRO-1)"
                              : "gradients allreduced in " + std::to_string(p.buckets()) + " bucket(s) of about " +
                                    fixed(o.bucket_mb, 1) + " MiB" + (p.overlaps() ? ", overlapped with the backward pass" : ""))
              << "; " << (comm.direct(device == ag::Device::device ? dist::Memory::device : dist::Memory::host) ? "buffers passed to MPI directly" : "staged through host memory") << "\n"
              << "       optimizer state per rank " << per_rank
              << (p.sharded() ? " (unsharded: " + megabytes(8.0 * static_cast<double>(p.parameter_count())) + " each)" : "") << "\n";
  } else if (o.shard_optimizer) {
    std::cout << "note   --shard-optimizer: one process, nothing to shard (mpirun -np N ptk train ... shards)\n";
  }
  if (resuming && !o.eval_only && run.step >= run.schedule.steps)
    std::cout << "note   the run has done all of its " << run.schedule.steps
              << " steps; --steps N sets a new total to go on\n";

  // Steps (and the evaluation's batches) reuse their buffers: after the first step, none allocates.
  ag::ReuseBuffers reuse;
  nn::Trainer trainer = parallel ? nn::Trainer(model, *parallel_optimizer, comm, data.train, run)
                                 : nn::Trainer(model, *optimizer, data.train, run);
  int saved_step = -1, evaluated_step = -1;
  double val_loss = 0;
  // Data parallel: every rank takes part (the moments are gathered to rank 0, the ranks' weights compared), rank 0
  // writes the single-process format.
  const auto save = [&] {
    if (parallel) {
      const nn::NamedParameters moments = parallel_optimizer->gathered_state();
      parallel_optimizer->check_in_sync();
      if (root) nn::save_checkpoint(o.save, model, data.vocab, moments, parallel_optimizer->steps_taken(), trainer.state());
    } else {
      nn::save_checkpoint(o.save, model, data.vocab, *optimizer, trainer.state());
    }
    saved_step = trainer.state().step;
  };
  dist::Comm* eval_comm = parallel ? &comm : nullptr;
  int stopped_by = 0;
  if (train) {
    StopRequest stop;
    std::cout << "train  run " << run.id << ": steps " << run.step + 1 << ".." << run.schedule.steps << " of "
              << B << " x " << T << " tokens, lr " << scientific(run.schedule.lr) << " (warm-up " << run.schedule.warmup
              << ", cosine to lr/10), seed " << run.seed << "\n";
    if (log.active()) log.header(run_header(run, config, data_path));
    const bool live = isatty(STDOUT_FILENO) != 0 && !parallel;  // mpirun hands rank 0 a pty; its output is a log
    const int total = run.schedule.steps, every = std::max(1, total / 20);
    Progress progress(run.step, total);
    const auto run_start = std::chrono::steady_clock::now();
    double comm_total_ms = 0, step_total_ms = 0;
    comm.take_seconds();
    // One process stops before a step when asked; ranks agree on stopping through the step's own reduction, so
    // that none leaves while the others wait in a collective.
    while (!trainer.finished() && !(stopped_by = parallel ? stopped_by : stop.signal())) {
      const auto t0 = std::chrono::steady_clock::now();
      const nn::StepReport r = trainer.step(stop.signal() != 0);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const double comm_ms = comm.take_seconds() * 1e3;
      comm_total_ms += comm_ms;
      step_total_ms += ms;
      if (r.stop) stopped_by = stop.signal() != 0 ? stop.signal() : SIGTERM;
      progress.done(r.step, ms);
      if (!std::isfinite(r.result.loss))  // the global loss: every rank of a data-parallel run sees it
        throw dist::CollectiveError("train: the loss became " + fixed(r.result.loss, 4) + " at step " + std::to_string(r.step) +
                    (saved_step >= 0 ? "; the checkpoint of step " + std::to_string(saved_step) + " is intact" : ""));
      const bool evaluate = (o.eval_every > 0 && r.step % o.eval_every == 0) || trainer.finished();
      if (evaluate) val_loss = nn::evaluate(model, data.val, run.batch, eval_comm), evaluated_step = r.step;
      const double tokens_per_s = static_cast<double>(B * T) / (ms / 1e3);
      const std::string line = "step " + std::to_string(r.step) + "/" + std::to_string(total) + " | loss " +
                               fixed(r.result.loss, 4) + " | lr " + scientific(r.lr) + " | grad norm " +
                               fixed(r.result.grad_norm, 2) + " | " + fixed(ms, 1) + " ms/step | " +
                               fixed(tokens_per_s, 0) + " tokens/s" + (parallel ? " | comm " + fixed(comm_ms, 1) + " ms" : "") +
                               " | ETA " + clock_text(progress.eta_seconds()) +
                               (evaluate ? " | val loss " + fixed(val_loss, 4) : "");
      const bool keep = r.step == run.step + 1 || r.step % every == 0 || trainer.finished() || evaluate;
      if (live) std::cout << "\r\033[K" << line << (keep ? "\n" : "") << std::flush;
      else if (keep) std::cout << line << '\n' << std::flush;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
      if (log.active()) log.step(r, ms, tokens_per_s, elapsed, evaluate ? &val_loss : nullptr, parallel ? comm_ms : -1);
      if (!o.save.empty() && o.save_every > 0 && r.step % o.save_every == 0 && !trainer.finished()) {
        save();
        std::cout << (live ? "\r\033[K" : "") << "saved  " << o.save << " (step " << r.step << ")\n" << std::flush;
      }
    }
    if (!stopped_by && !parallel) stopped_by = stop.signal();  // arrived during the last step
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    if (!stopped_by) std::cout << "trained " << trainer.state().step - run.step << " steps in " << fixed(seconds, 1) << " s\n";
    if (parallel && step_total_ms > 0)
      std::cout << "comm   " << fixed(100.0 * comm_total_ms / step_total_ms, 1) << " % of rank 0's step time in collectives ("
                << fixed(comm_total_ms / std::max(1, trainer.state().step - run.step), 2) << " ms a step)\n";
    const int step = trainer.state().step;
    if (!o.save.empty() && saved_step != step) save();
    if (stopped_by) {
      std::cout << "\nstopped by " << StopRequest::name(stopped_by) << " after step " << step << " of " << total
                << (o.save.empty() ? ": nothing saved (no --save)"
                                   : ": saved " + o.save + "; continue with: ptk train --load " + o.save + " --save " +
                                         o.save + (o.save_every > 0 ? " --save-every " + std::to_string(o.save_every) : ""))
                << std::endl;
      return 128 + stopped_by;
    }
  }
  const int step = trainer.state().step;
  if (!o.save.empty()) {
    if (o.eval_only) {
      if (root) nn::save_model(o.save, model, data.vocab, checkpoint.step);  // an export: no run to continue
    }
    else if (saved_step != step) save();
    std::cout << "saved  " << o.save
              << (o.eval_only ? " (the model alone, step " + std::to_string(checkpoint.step)
                              : " and " + nn::state_path(o.save, step) + " (step " + std::to_string(step))
              << ")\n";
  }
  if (evaluated_step != step || !train) val_loss = nn::evaluate(model, data.val, run.batch, eval_comm);
  std::cout << "val loss " << fixed(val_loss, 4) << std::endl;
  if (o.sample > 0 && root) {
    const int start = data.vocab.contains('\n') ? data.vocab.id('\n') : 0;
    std::cout << "sample (" << o.sample << " bytes, seed " << run.seed << "):\n" << std::flush;
    nn::generate(model, data.vocab, start, o.sample, run.seed + 2, SampleStream(isatty(STDOUT_FILENO) != 0));
    std::cout << std::endl;
  }
  return 0;
}

}  // namespace ptk::tools
