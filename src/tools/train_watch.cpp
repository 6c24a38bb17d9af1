#include "train_watch.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "ptk/io/atomic_file.hpp"

namespace ptk::tools {

namespace {

volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_stop_signal(int signal) {
  g_stop = signal;
  std::signal(SIGINT, SIG_DFL);  // a second signal ends the process at once
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace

StopRequest::StopRequest() {
  g_stop = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a write or read in progress goes on
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

StopRequest::~StopRequest() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

int StopRequest::signal() const { return g_stop; }

const char* StopRequest::name(int signal) { return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal"; }

std::string clock_text(double seconds) {
  if (!(seconds >= 0)) return "--";
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

TrainLog::TrainLog(const std::string& path) : path_(path) {
  try {
    io::require_regular_file(path);  // appended to, so a link to a file is fine; a fifo would block the open
  } catch (const io::FileError& e) {
    throw UsageError{"train: --log " + std::string(e.what())};
  }
  out_.open(path, std::ios::app);
  if (!out_) throw UsageError{"train: --log " + path + ": cannot open it for appending"};
}

void TrainLog::header(const std::string& json_object) {
  out_ << "{\"run\": " << json_object << "}\n" << std::flush;
}

void TrainLog::step(const nn::StepReport& r, double ms, double tokens_per_s, double elapsed_s, const double* val_loss,
                    double comm_ms) {
  nlohmann::json line = {{"step", r.step},         {"loss", r.result.loss}, {"lr", r.lr},
                         {"grad_norm", r.result.grad_norm}, {"ms", ms}, {"tokens_per_s", tokens_per_s},
                         {"elapsed_s", elapsed_s}};
  if (comm_ms >= 0) line["comm_ms"] = comm_ms;
  if (r.result.loss_scale != 1.0f) line["loss_scale"] = r.result.loss_scale, line["skipped"] = r.result.skipped;
  if (val_loss) line["val_loss"] = *val_loss;
  out_ << line.dump() << '\n' << std::flush;
  if (!out_) throw UsageError{"train: --log " + path_ + ": cannot write (disk full?)"};
}

void check_stdout(const std::string& command) {
  std::cout.flush();
  if (std::fflush(stdout) == 0 && std::ferror(stdout) == 0 && std::cout) return;
  const int err = errno;
  throw UsageError{command + ": cannot write to standard output: " + std::strerror(err != 0 ? err : EIO)};
}

void SampleStream::operator()(unsigned char byte) const {
  if (terminal_ && ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7f)) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", byte);
    std::cout << buf;
  } else {
    std::cout << static_cast<char>(byte);
  }
  std::cout << std::flush;
}

}  // namespace ptk::tools
