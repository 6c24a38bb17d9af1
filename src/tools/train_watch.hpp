#pragma once
// What `ptk train` shows and records while it runs: the progress line with its ETA, the --log file (one JSON
// object a line), the streamed --sample, and the SIGINT/SIGTERM request to stop after the current step.
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>

#include "ptk/nn/train.hpp"

namespace ptk::tools {

// SIGINT and SIGTERM, from install() until the object dies, only set a flag: the loop finishes its step,
// saves and exits 128 + the signal. A second signal of either kind acts as it would without ptk (ends the
// process at once): the way out of a save that hangs on a dead file system.
class StopRequest {
 public:
  StopRequest();
  ~StopRequest();
  StopRequest(const StopRequest&) = delete;
  StopRequest& operator=(const StopRequest&) = delete;
  int signal() const;  // 0 while none arrived
  static const char* name(int signal);
};

// "1:02:03", "4:05", or "--" when unknown.
std::string clock_text(double seconds);

// The progress of the steps this process runs: mean step time and the time left.
class Progress {
 public:
  Progress(int first_step, int last_step) : first_(first_step), last_(last_step) {}
  void done(int step, double ms) {
    total_ms_ += ms;
    steps_ = step - first_;
  }
  double eta_seconds() const { return steps_ > 0 ? total_ms_ / steps_ * (last_ - first_ - steps_) / 1e3 : -1; }

 private:
  int first_, last_, steps_ = 0;
  double total_ms_ = 0;
};

// --log FILE: a header object {"run": {...}} per process, then one object per step with step, loss, lr,
// grad_norm, ms, tokens_per_s, elapsed_s, comm_ms (data-parallel runs), loss_scale and skipped (f16 mixed precision)
// and, when the validation set was evaluated at that step, val_loss.
// A resumed run appends to the same file (scripts/plot_training.py keeps the last record of each step).
class TrainLog {
 public:
  TrainLog() = default;
  // Opens path for appending; throws UsageError when it cannot, or when it exists and is not a regular file.
  explicit TrainLog(const std::string& path);
  bool active() const { return out_.is_open(); }
  void header(const std::string& json_object);
  // comm_ms >= 0 (a data-parallel run): the step's time inside collectives, written as comm_ms.
  void step(const nn::StepReport& r, double ms, double tokens_per_s, double elapsed_s, const double* val_loss,
            double comm_ms = -1);

 private:
  std::ofstream out_;
  std::string path_;
};

// Throws UsageError "<command>: cannot write to standard output: <reason>" once a write to it has failed (a full
// disk, /dev/full): a command that streams its result stops there, before reporting success on stderr.
void check_stdout(const std::string& command);

// Writes the bytes of a --sample as they come; on a terminal, control bytes other than newline and tab (and
// DEL) are shown as \xNN so a sampled escape sequence cannot drive the terminal.
class SampleStream {
 public:
  explicit SampleStream(bool terminal) : terminal_(terminal) {}
  void operator()(unsigned char byte) const;

 private:
  bool terminal_;
};

}  // namespace ptk::tools
