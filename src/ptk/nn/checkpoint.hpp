#pragma once
// Checkpoints: a safetensors file with one F32 tensor per model parameter under its GPT-2 name and, in
// __metadata__, n_layer, n_head, n_embd, block_size, vocab_size, vocab (the byte values in id order,
// comma-separated decimal), step, and crc32 (CRC-32 of the data section, checked on load). The optimizer's
// moments go in a second safetensors file beside it (optimizer_path), as m.<name> and v.<name>, so the model
// file holds exactly the model. Values are host floats: a checkpoint written on one target loads on another.
#include <string>
#include <utility>
#include <vector>

#include "ptk/nn/adamw.hpp"
#include "ptk/nn/data.hpp"
#include "ptk/nn/gpt.hpp"

namespace ptk::nn {

// "run.safetensors" -> "run.optim.safetensors"; any other name gets ".optim.safetensors" appended.
std::string optimizer_path(const std::string& checkpoint_path);

// Writes the model (and, with optimizer, its state beside it). Each file is written whole and renamed into
// place, so a failed save leaves no partial file.
void save_checkpoint(const std::string& path, const Gpt& model, const Vocab& vocab, int step,
                     const Adamw* optimizer = nullptr);

struct Checkpoint {
  GptConfig config;
  Vocab vocab;
  int step = 0;
  std::vector<std::pair<std::string, std::vector<float>>> parameters;  // in the model's order
};

// Reads and checks a model checkpoint. A file that is truncated, fails its checksum or is not a ptk model
// (not safetensors, metadata or a parameter missing, a shape that disagrees with the metadata) throws
// io::SafetensorsError whose one-line what() says which.
Checkpoint load_checkpoint(const std::string& path);

// Copies the checkpoint's parameters into a model built from its config.
void assign_parameters(const Gpt& model, const Checkpoint& checkpoint);

// Restores optimizer state from optimizer_path(path) when that file exists; returns whether it did.
bool load_optimizer_state(const std::string& path, Adamw& optimizer, int step);

}  // namespace ptk::nn
