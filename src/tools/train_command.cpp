// ptk train: a byte-level language model (GPT-2 or Llama architecture, --arch) trained on a text, with crash-safe
// checkpoints that a run resumes from bit for bit (nn/checkpoint.hpp), a memory check before anything is allocated,
// and a run you can watch (progress with ETA, --eval-every, --log, streamed --sample). In pieces: the options
// (train_options.hpp), the run resolved from them (train_run.hpp), the optimizer, one process or data parallel
// (nn/optimizer.hpp), the steps (train_loop.hpp), and here what comes before and after them.
#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include <cmath>
#include <iostream>
#include <memory>
#include <unistd.h>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "ptk/dist/comm.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/nn/data_parallel.hpp"
#include "ptk/nn/inference.hpp"
#include "ptk/nn/optimizer.hpp"
#include "train_loop.hpp"
#include "train_options.hpp"
#include "train_run.hpp"
#include "train_watch.hpp"

namespace ptk::tools {

namespace {

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

// How the ranks share the work (a collective: every rank reaches it).
std::string describe_ranks(const Options& o, const nn::RunState& run, dist::Comm& comm, const nn::DataParallelAdamw& p,
                           ag::Device device) {
  // Each rank's AdamW moments, as allocated.
  std::string per_rank;
  for (const auto& bytes : comm.allgather(std::to_string(p.state_bytes())))
    per_rank += (per_rank.empty() ? "" : " / ") + megabytes(std::stod(bytes));
  const nn::Share first = nn::batch_share(run.batch, 0, comm.size()),
                  last = nn::batch_share(run.batch, comm.size() - 1, comm.size());
  const bool direct = comm.direct(device == ag::Device::device ? dist::Memory::device : dist::Memory::host);
  return "dist   " + std::to_string(comm.size()) + " ranks (" + comm.library() + "), " +
         std::to_string(Kokkos::DefaultHostExecutionSpace().concurrency()) + " host thread(s) on rank 0: each step's " +
         std::to_string(run.batch) + " windows split " + std::to_string(first.size()) +
         (first.size() != last.size() ? " or " + std::to_string(last.size()) : "") + " a rank; " +
         (p.sharded() ? "gradients reduce-scattered, parameters allgathered (ZeRO-1)"
                      : "gradients allreduced in " + std::to_string(p.buckets()) + " bucket(s) of about " +
                            fixed(o.bucket_mb, 1) + " MiB" + (p.overlaps() ? ", overlapped with the backward pass" : "")) +
         "; " + (direct ? "buffers passed to MPI directly" : "staged through host memory") + "\n" +
         "       optimizer state per rank " + per_rank +
         (p.sharded() ? " (unsharded: " + megabytes(8.0 * static_cast<double>(p.parameter_count())) + " each)" : "") + "\n";
}

// One process: AdamW. Several: the data-parallel optimizer (nn/data_parallel.hpp), which never holds the whole
// moments when sharded. Either continues a resumed run's moments; `about` receives the lines that say how it runs.
std::unique_ptr<nn::Optimizer> make_optimizer(const Options& o, const TrainRun& t, const nn::Decoder& model,
                                              dist::Comm& comm, ag::Device device, std::string& about) {
  if (!comm.distributed()) {
    auto local = std::make_unique<nn::LocalOptimizer>(model, nn::AdamwConfig{});
    if (t.resuming) local->restore(*t.checkpoint.training);
    if (o.shard_optimizer)
      about = "note   --shard-optimizer: one process, nothing to shard (mpirun -np N ptk train ... shards)\n";
    return local;
  }
  const auto bucket = static_cast<std::int64_t>(static_cast<double>(o.bucket_mb) * 1024 * 1024);
  const nn::DataParallelOptions options{o.shard_optimizer, bucket, o.overlap_comm};
  auto parallel = std::make_unique<nn::DataParallelOptimizer>(model, nn::AdamwConfig{}, comm, options);
  if (t.resuming) parallel->restore(*t.checkpoint.training);
  about = describe_ranks(o, t.run, comm, parallel->adamw(), device);
  return parallel;
}

// What the run is: the text, the model, what it continues, what changed.
void print_run(const Options& o, const TrainRun& t, const nn::Decoder& model, ag::Device device) {
  const nn::DecoderConfig& config = t.config;
  const bool llama = config.arch == nn::Arch::llama;
  std::cout << "data   " << t.data_path << ": " << t.text.size() << " bytes, vocabulary " << t.data.vocab.size()
            << (t.tokenizer ? " of " + t.tokenizer->fingerprint() : std::string(" bytes"))
            << " (ln V = " << fixed(std::log(static_cast<double>(t.data.vocab.size())), 4) << "), " << t.data.train.size()
            << " train / " << t.data.val.size() << " validation tokens\n"
            << "model  " << (llama ? "llama, " : "") << config.n_layer << " layers, " << config.n_head << " heads"
            << (llama ? " (" + std::to_string(nn::kv_heads(config)) + " kv)" : "") << ", width " << config.n_embd
            << ", block " << config.block_size << ": " << fixed(static_cast<double>(model.parameter_count()) / 1e6, 3)
            << " M parameters on " << ag::describe(device) << "\n";
  const nn::RunState& run = t.run;
  if (!o.load.empty())
    std::cout << "load   " << o.load << " (step " << t.checkpoint.step << ")"
              << (t.resuming ? ": continuing run " + run.id + " at step " + std::to_string(run.step) + " of " +
                                   std::to_string(run.schedule.steps)
                             : o.eval_only ? "" : ": weights only, a new run")
              << "\n";
  for (const auto& c : t.changed) std::cout << "changed " << c << "\n";
  if (!t.data_was.empty())
    std::cout << "warning: " << t.data_path << " is not the text this run trained on (" << t.data_was << ", now "
              << t.text.size() << " bytes, CRC " << t.text_crc << "): its batches differ from the original run's\n";
}

// --sample's text: N tokens drawn from a newline (the first validation token where a newline is not one token),
// streamed as they come (through the tokenizer's decoder for a subword model).
void print_sample(const nn::Decoder& model, const TrainRun& t, int n) {
  const SampleStream out(isatty(STDOUT_FILENO) != 0);
  std::cout << "sample (" << n << (t.tokenizer ? " tokens" : " bytes") << ", seed " << t.run.seed << "):\n" << std::flush;
  if (!t.tokenizer) {
    const int start = t.data.vocab.contains('\n') ? t.data.vocab.id('\n') : 0;
    nn::generate(model, t.data.vocab, start, n, t.run.seed + 2, out);
  } else {
    const auto newline = t.tokenizer->encode("\n", false);
    const int start = newline.size() == 1 ? newline[0] : t.data.val.empty() ? 0 : t.data.val[0];
    nn::GenerateOptions options;
    options.new_tokens = n;
    options.seed = t.run.seed + 2;
    options.slide = true;
    text::TokenStream stream(*t.tokenizer);
    nn::generate(model, {start}, 1, options, [&](int, int token) {
      for (char c : stream.push(token)) out(static_cast<unsigned char>(c));
    });
    for (char c : stream.finish()) out(static_cast<unsigned char>(c));
  }
  std::cout << std::endl;
}

// After the steps (or without any): the last save or --eval-only's export, the validation loss, the sample.
int finish(Loop& loop, const nn::Decoder& model, bool root) {
  const Options& o = loop.options;
  const TrainRun& t = loop.setup;
  const int step = loop.trainer.state().step;
  if (!o.save.empty()) {
    if (o.eval_only) {
      if (root) nn::save_model(o.save, model, t.data.vocab, t.checkpoint.step);  // an export: no run to continue
    } else if (loop.saved_step != step) {
      loop.save();
    }
    std::cout << "saved  " << o.save
              << (o.eval_only ? " (the model alone, step " + std::to_string(t.checkpoint.step)
                              : " and " + nn::state_path(o.save, step) + " (step " + std::to_string(step))
              << ")\n";
  }
  if (loop.evaluated_step != step || !t.train) loop.val_loss = loop.optimizer.evaluate(t.data.val, t.run.batch);
  std::cout << "val loss " << fixed(loop.val_loss, 4) << "\nval bits per byte " << fixed(bits_per_byte(loop.val_loss, t), 4)
            << std::endl;
  if (o.sample > 0 && root) print_sample(model, t, o.sample);
  return 0;
}

}  // namespace

int train_command(const Args& args) {
  Options o;
  CLI::App app{"Train a byte-level language model (GPT-2 or Llama architecture) on a text (first 90 % trains, last 10 % validates).",
               "ptk train"};
  const Given given = add_options(app, o);
  if (parse_command_line(app, args, "train")) return 0;
  check_combinations(o);
  dist::Comm& comm = dist::Comm::world();
  const bool root = comm.rank() == 0;
  const QuietOutput quiet(!root);
  const ag::Device device = ag::parse_device(o.device);
  const TrainRun t = resolve_run(o, given, comm, device);
  check_memory(t.config, nn::batch_share(t.run.batch, comm.rank(), comm.size()).size(), !o.eval_only, device,
               t.run.precision.dtype);
  const auto save_lock = !o.save.empty() && root ? hold_save_path(o.save) : nullptr;  // rank 0 writes it
  TrainLog log = o.log.empty() || !root ? TrainLog() : TrainLog(o.log);

  nn::Decoder model(t.config, device, t.run.seed);
  if (!o.load.empty()) nn::assign_parameters(model, t.checkpoint);
  std::string about;
  const auto optimizer = make_optimizer(o, t, model, comm, device, about);
  DType dtype = DType::f32;
  parse_dtype(o.dtype, dtype);  // a name CLI11 checked
  if (dtype != DType::f32 && o.eval_only) {
    model.store_weights_as(dtype);
    about += std::string("dtype  the linear layers' weights stored as ") + dtype_name(dtype) + " for the evaluation\n";
  }
  const nn::Precision& precision = t.run.precision;
  if (precision.dtype != DType::f32)
    about += std::string("dtype  mixed precision: linear layers multiply in ") + dtype_name(precision.dtype) +
             " (fp32 accumulation), fp32 weights and moments" +
             (precision.scaled() ? ", loss scale " + fixed(precision.loss_scale, 0) : std::string()) + "\n";
  // Evaluation and the sample run as the steps do (nn::train_step opens its own scope for the forward pass).
  const ag::Autocast autocast(precision.dtype);
  print_run(o, t, model, device);
  std::cout << about;
  if (t.resuming && !o.eval_only && t.run.step >= t.run.schedule.steps)
    std::cout << "note   the run has done all of its " << t.run.schedule.steps
              << " steps; --steps N sets a new total to go on\n";

  // Steps (and the evaluation's batches) reuse their buffers: after the first step, none allocates.
  ag::ReuseBuffers reuse;
  nn::Trainer trainer(model, *optimizer, t.data.train, t.run);
  // mpirun hands rank 0 a pty; its output is a log.
  Loop loop{o, t, *optimizer, trainer, log, isatty(STDOUT_FILENO) != 0 && !comm.distributed()};
  if (t.train)
    if (const int status = train_steps(loop)) return status;
  return finish(loop, model, root);
}

}  // namespace ptk::tools
