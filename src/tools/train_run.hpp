#pragma once
// ptk train's run, resolved before anything is allocated: the checkpoint --load names, the text, the model's
// configuration, the run's settings (a resumed run's own, changed where given again with another value), the
// agreement of every rank on all of them, and the memory check.
#include <memory>
#include <string>
#include <vector>

#include "ptk/autograd/variable.hpp"
#include "ptk/dist/comm.hpp"
#include "ptk/nn/checkpoint.hpp"
#include "ptk/nn/data.hpp"
#include "ptk/nn/decoder.hpp"
#include "ptk/nn/train.hpp"
#include "ptk/text/tokenizer.hpp"
#include "train_options.hpp"

namespace ptk::tools {

struct TrainRun {
  nn::Checkpoint checkpoint;  // --load's (empty without it)
  std::string data_path, text, text_crc;
  nn::DecoderConfig config;
  nn::Dataset data;
  std::shared_ptr<const text::Tokenizer> tokenizer;  // --tokenizer's (null: a byte model)
  double val_target_bytes = 0;        // the bytes of text the validation loss predicts (for bits per byte)
  nn::RunState run;                   // as it starts here
  bool resuming = false;              // continues the checkpoint's run
  bool train = false;                 // has steps to take (not --eval-only, not done)
  std::vector<std::string> changed;   // "steps 100 -> 200 (...)": settings given again with another value
  std::string data_was;               // the text a resumed run trained on, when this one differs ("" if the same)
};

// Everything above, refused with a UsageError (or, found by every rank together, a dist::CollectiveError) when the
// options, the checkpoint, the text and the ranks do not fit together. Collective: every rank calls it.
TrainRun resolve_run(const Options& o, const Given& given, dist::Comm& comm, ag::Device device);

// Refuses, before anything is allocated, a run whose estimated memory exceeds what the device has free (windows:
// this rank's share of the batch).
// The validation loss in bits per byte of text: a byte model's per-token loss / ln 2; a tokenizer's scaled by the
// tokens per byte of the validation windows' targets. Compares byte-level and subword runs.
double bits_per_byte(double val_loss, const TrainRun& t);

void check_memory(const nn::DecoderConfig& c, int windows, bool training, ag::Device device, DType dtype);

}  // namespace ptk::tools
