// ptk train's steps (train_loop.hpp).
#include "train_loop.hpp"

#include <chrono>
#include <cmath>
#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

namespace ptk::tools {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string run_header(const nn::RunState& run, const nn::DecoderConfig& c, const std::string& data_path) {
  return nlohmann::json{{"id", run.id},        {"data", data_path},        {"arch", nn::to_string(c.arch)},
                        {"kv_heads", nn::kv_heads(c)},                       {"layers", c.n_layer},
                        {"heads", c.n_head},   {"width", c.n_embd},        {"block", c.block_size},
                        {"batch", run.batch},  {"steps", run.schedule.steps}, {"lr", run.schedule.lr},
                        {"seed", run.seed},    {"start_step", run.step}, {"dtype", dtype_name(run.precision.dtype)}}
      .dump();
}

// One step's timing: the step's milliseconds and, data parallel, those inside collectives.
struct Timing {
  Clock::time_point run_start;
  double ms = 0, tokens_per_s = 0, eta_s = 0;
  std::optional<double> comm_ms;
};

std::string step_line(const nn::StepReport& r, int total, const Timing& t, const double* val_loss) {
  return "step " + std::to_string(r.step) + "/" + std::to_string(total) + " | loss " + fixed(r.result.loss, 4) +
         " | lr " + scientific(r.lr) + " | grad norm " + fixed(r.result.grad_norm, 2) +
         (r.result.skipped ? " | skipped: f16 gradients overflowed at loss scale " + fixed(r.result.loss_scale, 0) : "") +
         " | " + fixed(t.ms, 1) +
         " ms/step | " + fixed(t.tokens_per_s, 0) + " tokens/s" +
         (t.comm_ms ? " | comm " + fixed(*t.comm_ms, 1) + " ms" : "") + " | ETA " + clock_text(t.eta_s) +
         (val_loss != nullptr ? " | val loss " + fixed(*val_loss, 4) : "");
}

// After a step: the validation loss when due, the line, the log record, a --save-every checkpoint.
void after_step(Loop& loop, const nn::StepReport& r, const Timing& t) {
  const Options& o = loop.options;
  const nn::RunState& start = loop.setup.run;
  const bool finished = loop.trainer.finished();
  const bool evaluate = (o.eval_every > 0 && r.step % o.eval_every == 0) || finished;
  if (evaluate) loop.val_loss = loop.optimizer.evaluate(loop.setup.data.val, start.batch), loop.evaluated_step = r.step;
  const double* val_loss = evaluate ? &loop.val_loss : nullptr;
  const std::string line = step_line(r, start.schedule.steps, t, val_loss);
  const bool keep = r.step == start.step + 1 || r.step % std::max(1, start.schedule.steps / 20) == 0 || finished || evaluate;
  if (loop.live) std::cout << "\r\033[K" << line << (keep ? "\n" : "") << std::flush;
  else if (keep) std::cout << line << '\n' << std::flush;
  // The record's elapsed time includes this step's evaluation.
  if (loop.log.active())
    loop.log.step(r, t.ms, t.tokens_per_s, seconds_since(t.run_start), val_loss, t.comm_ms.value_or(-1));
  if (!o.save.empty() && o.save_every > 0 && r.step % o.save_every == 0 && !finished) {
    loop.save();
    std::cout << (loop.live ? "\r\033[K" : "") << "saved  " << o.save << " (step " << r.step << ")\n" << std::flush;
  }
}

// The end of the steps: how long they took, the communication share, the last save, and the stop's line.
int after_steps(Loop& loop, int stopped_by, double seconds, std::optional<double> comm_total_ms, double step_total_ms) {
  const Options& o = loop.options;
  const int step = loop.trainer.state().step, steps = step - loop.setup.run.step;
  if (!stopped_by) std::cout << "trained " << steps << " steps in " << fixed(seconds, 1) << " s\n";
  if (comm_total_ms && step_total_ms > 0)
    std::cout << "comm   " << fixed(100.0 * *comm_total_ms / step_total_ms, 1) << " % of rank 0's step time in collectives ("
              << fixed(*comm_total_ms / std::max(1, steps), 2) << " ms a step)\n";
  if (!o.save.empty() && loop.saved_step != step) loop.save();
  if (!stopped_by) return 0;
  std::cout << "\nstopped by " << StopRequest::name(stopped_by) << " after step " << step << " of "
            << loop.setup.run.schedule.steps
            << (o.save.empty() ? ": nothing saved (no --save)"
                               : ": saved " + o.save + "; continue with: ptk train --load " + o.save + " --save " + o.save +
                                     (o.save_every > 0 ? " --save-every " + std::to_string(o.save_every) : ""))
            << std::endl;
  return 128 + stopped_by;
}

}  // namespace

void Loop::save() {
  optimizer.save(options.save, setup.data.vocab, trainer.state());
  saved_step = trainer.state().step;
}

int train_steps(Loop& loop) {
  const nn::RunState& run = loop.setup.run;
  StopRequest stop;
  std::cout << "train  run " << run.id << ": steps " << run.step + 1 << ".." << run.schedule.steps << " of " << run.batch
            << " x " << loop.setup.config.block_size << " tokens, lr " << scientific(run.schedule.lr) << " (warm-up "
            << run.schedule.warmup << ", cosine to lr/10), seed " << run.seed << "\n";
  if (loop.log.active()) loop.log.header(run_header(run, loop.setup.config, loop.setup.data_path));
  Progress progress(run.step, run.schedule.steps);
  const auto run_start = Clock::now();
  const double tokens = static_cast<double>(run.batch) * loop.setup.config.block_size;
  std::optional<double> comm_total_ms;
  double step_total_ms = 0;
  loop.optimizer.take_comm_ms();
  // A stop request ends the run between two steps where this process may stop alone; otherwise (data parallel)
  // it travels in the step's reduction, and every rank stops after the same step.
  const auto stop_alone = [&] { return loop.optimizer.stops_alone() ? stop.signal() : 0; };
  int stopped_by = 0;
  while (!loop.trainer.finished() && !(stopped_by = stopped_by ? stopped_by : stop_alone())) {
    const auto t0 = Clock::now();
    const nn::StepReport r = loop.trainer.step(stop.signal() != 0);
    Timing t;
    t.run_start = run_start;
    t.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    t.comm_ms = loop.optimizer.take_comm_ms();
    if (t.comm_ms) comm_total_ms = comm_total_ms.value_or(0) + *t.comm_ms;
    step_total_ms += t.ms;
    if (r.stop) stopped_by = stop.signal() != 0 ? stop.signal() : SIGTERM;
    progress.done(r.step, t.ms);
    if (!std::isfinite(r.result.loss))  // the global loss: every rank of a data-parallel run sees it
      throw dist::CollectiveError(
          "train: the loss became " + fixed(r.result.loss, 4) + " at step " + std::to_string(r.step) +
          (loop.saved_step >= 0 ? "; the checkpoint of step " + std::to_string(loop.saved_step) + " is intact" : ""));
    t.tokens_per_s = tokens / (t.ms / 1e3);
    t.eta_s = progress.eta_seconds();
    after_step(loop, r, t);
  }
  if (!stopped_by) stopped_by = stop_alone();  // arrived during the last step
  return after_steps(loop, stopped_by, seconds_since(run_start), comm_total_ms, step_total_ms);
}

}  // namespace ptk::tools
