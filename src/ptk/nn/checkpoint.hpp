#pragma once
// Checkpoints: two safetensors files that are a pair.
//
// The model file (path) holds one F32 tensor per model parameter under its architecture's name (nn/decoder.hpp:
// GPT-2's or Hugging Face Llama's) and, in __metadata__, arch ("gpt2" or "llama"), n_layer, n_head, n_kv_head
// (kv_heads: n_head for gpt2), n_embd, ffn_hidden (mlp_hidden: 4·n_embd for gpt2), block_size, vocab_size,
// rope_base and norm_eps (floats in 9 significant digits; rope_base unused by gpt2), vocab (the byte values in id
// order, comma-separated decimal) or, for a model trained on a tokenizer's ids, tokenizer (its fingerprint:
// "SentencePiece crc32:1a2b3c4d"; a run or generation with another tokenizer is refused), step, and io's two
// CRC-32s (data, header). It is exactly the model: any
// reader of the architecture loads it. A file without arch (written before the Llama decoder) is gpt2, and
// loads with gpt2's defaults for the keys it lacks.
//
// The training state (state_path(path, step), beside it: "run.safetensors" -> "run.state-200.safetensors")
// holds the optimizer's moments (m.<name>, v.<name>) and, in __metadata__, the run (train.hpp's RunState:
// run id, step, schedule, batch, seed, sampler draws, the text's size and CRC) and the optimizer's step count.
// The model file names it (state_file), with its run id and its header CRC (state_crc32), which fingerprints
// the whole state file. A reader therefore never pairs files of different steps or runs.
//
// Saving writes the state file first, then the model file, each atomically (io/atomic_file.hpp), then removes
// every other NAME.state-N.safetensors beside it (the one the previous model file named, and any a kill left
// unnamed). A process killed at any moment leaves the previous pair or the new one: the model file switches
// from one to the other in a single rename, and the state file it names exists before and after. So a copy of
// a checkpoint is a copy of both files. Values are host floats: a checkpoint written on one target loads on
// another.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptk/io/safetensors.hpp"
#include "ptk/nn/adamw.hpp"
#include "ptk/nn/data.hpp"
#include "ptk/nn/data_parallel.hpp"
#include "ptk/nn/decoder.hpp"
#include "ptk/nn/train.hpp"

namespace ptk::nn {

// "run.safetensors" -> "run.state-<step>.safetensors"; any other name gets ".state-<step>.safetensors".
std::string state_path(const std::string& checkpoint_path, int step);

// The model alone (an export, or `--eval-only --save`): a later load starts a new run from its weights.
void save_model(const std::string& path, const Decoder& model, const Vocab& vocab, int step);
// The same from host values (ptk convert, without Kokkos): `tensors` must be every parameter of `config`, by name.
void save_model(const std::string& path, const DecoderConfig& config, io::Safetensors tensors, const Vocab& vocab,
                int step);

// The model and its training state, paired (above); step = run.step.
void save_checkpoint(const std::string& path, const Decoder& model, const Vocab& vocab, const Adamw& optimizer,
                     const RunState& run);
// The same from the optimizer's moments as Adamw::state() names them (a data-parallel run's, gathered to rank 0).
void save_checkpoint(const std::string& path, const Decoder& model, const Vocab& vocab, const NamedParameters& moments,
                     int optimizer_steps, const RunState& run);

struct TrainingState {
  std::string path;
  RunState run;
  int optimizer_steps = 0;
  std::vector<std::pair<std::string, std::vector<float>>> moments;
};

struct Checkpoint {
  DecoderConfig config;
  Vocab vocab;
  int step = 0;
  std::vector<std::pair<std::string, std::vector<float>>> parameters;  // in the model's order
  std::string state_file;                // the training state the model file names; "" for a model alone
  std::optional<TrainingState> training;  // loaded when asked for and named
};

// Reads and checks a checkpoint, with its training state when with_training_state and the model file names
// one. Throws io::SafetensorsError whose one-line what() says what is wrong: a file truncated, failing a
// checksum or not a ptk model (metadata or a parameter missing, a shape that disagrees with the metadata);
// or (Kind::unpaired) a named training state that is missing or belongs to another run or step.
Checkpoint load_checkpoint(const std::string& path, bool with_training_state = true);

// Copies the checkpoint's parameters into a model built from its config.
void assign_parameters(const Decoder& model, const Checkpoint& checkpoint);

// Copies the moments and the step count into an optimizer over the same model.
void restore_optimizer(Adamw& optimizer, const TrainingState& state);
// Each rank of a data-parallel run takes its slice (sharded) or all of the moments.
void restore_optimizer(DataParallelAdamw& optimizer, const TrainingState& state);

}  // namespace ptk::nn
