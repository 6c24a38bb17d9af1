#pragma once
// The model a command runs (generate, info) from --model (a ptk checkpoint, a Hugging Face directory or a GGUF file:
// nn/model_files.hpp) or --load (a ptk checkpoint), with the tokenizer it needs:
//   a ptk checkpoint: its bytes, or the tokenizer it was trained on, given by --tokenizer (checkpoint_tokenizer.hpp);
//   a Hugging Face directory: --tokenizer, or the directory's own tokenizer files;
//   a GGUF file: its own tokenizer.ggml.* metadata (text/gguf_vocab.hpp), or --tokenizer, whose vocabulary must be
//     the file's tokenizer.ggml.tokens, token for token; tokenizer.ggml.add_bos_token says whether a prompt starts
//     with BOS.
// A tokenizer with more ids than the model's vocabulary is refused. Every refusal is one UsageError line.
#include <memory>
#include <string>

#include "ptk/nn/model_files.hpp"
#include "ptk/text/tokenizer.hpp"

namespace ptk::tools {

struct ModelSource {
  std::unique_ptr<nn::ModelFiles> files;
  std::shared_ptr<const text::Tokenizer> tokenizer;  // nullptr: a ptk byte model
  bool add_bos = false;                              // a prompt starts with the tokenizer's BOS
};

ModelSource open_model_source(const std::string& command, const std::string& path, const std::string& tokenizer_path);

}  // namespace ptk::tools
