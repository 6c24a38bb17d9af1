#pragma once
// ptk train's steps, between the run's setup (train_run.hpp) and its end: a line per step kept every 5 % (rewritten
// in place on a terminal), the --log records, --eval-every, --save-every, and the stop on SIGINT/SIGTERM. The same
// code for one process and for the ranks of a data-parallel run: what differs is the optimizer's (nn/optimizer.hpp).
#include "ptk/nn/optimizer.hpp"
#include "ptk/nn/train.hpp"
#include "train_options.hpp"
#include "train_run.hpp"
#include "train_watch.hpp"

namespace ptk::tools {

struct Loop {
  const Options& options;
  const TrainRun& setup;  // setup.run: the run as it started
  nn::Optimizer& optimizer;
  nn::Trainer& trainer;
  TrainLog& log;
  bool live;  // rewrite the step line in place (a terminal)
  int saved_step = -1, evaluated_step = -1;
  double val_loss = 0;

  // Collective: the checkpoint of the run as it is now, to --save.
  void save();
};

// Takes the run's remaining steps and saves at the end (with --save). Returns 0, or 128 + the signal that stopped
// the run, after the line that says so.
int train_steps(Loop& loop);

}  // namespace ptk::tools
