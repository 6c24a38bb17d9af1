#pragma once
// The tokenizer a checkpoint needs, as a command's --tokenizer gives it (generate, convert): none for a byte model
// given none; otherwise the same fingerprint as the checkpoint records. Every mismatch is one UsageError line.
#include <memory>
#include <string>

#include "commands.hpp"
#include "ptk/nn/data.hpp"
#include "ptk/text/tokenizer.hpp"

namespace ptk::tools {

inline std::shared_ptr<const text::Tokenizer> checkpoint_tokenizer(const std::string& command, const std::string& checkpoint,
                                                                   const nn::Vocab& vocab, const std::string& path) {
  const std::string& stored = vocab.tokenizer();
  if (path.empty()) {
    if (!stored.empty())
      throw UsageError{command + ": " + checkpoint + " was trained on the ids of a tokenizer (" + stored +
                       "): give it with --tokenizer"};
    return nullptr;
  }
  std::shared_ptr<const text::Tokenizer> t;
  try {
    t = text::load_tokenizer(path);
  } catch (const Error& e) {
    throw UsageError{command + ": --tokenizer " + std::string(e.what())};
  }
  if (t->fingerprint() != stored)
    throw UsageError{command + ": --tokenizer " + path + " is " + t->fingerprint() + ", but " + checkpoint +
                     " was trained on " + (stored.empty() ? std::string("bytes") : stored)};
  return t;
}

}  // namespace ptk::tools
