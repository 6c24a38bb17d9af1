#include "model_source.hpp"

#include "checkpoint_tokenizer.hpp"
#include "commands.hpp"
#include "ptk/core/quote.hpp"
#include "ptk/io/gguf.hpp"
#include "ptk/text/gguf_vocab.hpp"

namespace ptk::tools {

namespace {

std::unique_ptr<text::Tokenizer> load(const std::string& command, const std::string& option, const std::string& path) {
  try {
    return text::load_tokenizer(path);
  } catch (const Error& e) {
    throw UsageError{command + ": " + option + std::string(e.what())};
  }
}

// The GGUF file's tokenizer.ggml.tokens must be the tokenizer's vocabulary, id for id.
void check_gguf_tokens(const std::string& command, const std::string& model, const io::Gguf& gguf,
                       const text::Tokenizer& tokenizer) {
  const io::GgufValue* tokens = gguf.find("tokenizer.ggml.tokens");
  if (!tokens || !tokens->array || tokens->strings.empty())
    throw UsageError{command + ": " + model + " has no tokenizer.ggml.tokens to check --tokenizer against"};
  const auto vocabulary = tokenizer.vocabulary().tokens;
  // Rows past the tokenizer's ids (a padded vocabulary, text::gguf_tokenizer_metadata's pad_to) are unused tokens.
  const io::GgufValue* types = gguf.find("tokenizer.ggml.token_type");
  std::size_t used = tokens->strings.size();
  while (used > vocabulary.size() && types && types->ints.size() == tokens->strings.size() &&
         types->ints[used - 1] == text::kUnusedTokenType)
    --used;
  if (vocabulary.size() != used)
    throw UsageError{command + ": --tokenizer has " + std::to_string(vocabulary.size()) + " tokens, " + model + " " +
                     std::to_string(used)};
  for (std::size_t i = 0; i < vocabulary.size(); ++i)
    if (vocabulary[i] != tokens->strings[i])
      throw UsageError{command + ": --tokenizer's token " + std::to_string(i) + " is " + quote(vocabulary[i]) + ", " +
                       model + "'s " + quote(tokens->strings[i])};
}

}  // namespace

ModelSource open_model_source(const std::string& command, const std::string& path, const std::string& tokenizer_path) {
  ModelSource m;
  m.files = std::make_unique<nn::ModelFiles>(path);
  const nn::ModelFiles& f = *m.files;
  if (f.format() == nn::ModelFormat::ptk) {
    m.tokenizer = checkpoint_tokenizer(command, path, *f.vocab(), tokenizer_path);
    return m;  // (ptk train feeds no BOS)
  }
  std::unique_ptr<text::Tokenizer> t;
  if (f.format() == nn::ModelFormat::hugging_face) {
    t = load(command, tokenizer_path.empty() ? path + ": " : "--tokenizer ",
             tokenizer_path.empty() ? f.tokenizer_directory() : tokenizer_path);
    m.add_bos = t->special_ids().add_bos;
  } else if (tokenizer_path.empty()) {  // the file's own (tokenizer.ggml.*), as llama.cpp builds it
    try {
      t = text::tokenizer_from_gguf(*f.gguf(), path);
    } catch (const Error& e) {
      throw UsageError{command + ": " + e.what() + " (or give the model's tokenizer with --tokenizer)"};
    }
    m.add_bos = t->special_ids().add_bos;
  } else {
    t = load(command, "--tokenizer ", tokenizer_path);
    check_gguf_tokens(command, path, *f.gguf(), *t);
    const io::GgufValue* add = f.gguf()->find("tokenizer.ggml.add_bos_token");
    text::SpecialIds ids = t->special_ids();
    if (f.bos()) ids.bos = f.bos();
    if (f.eos()) ids.eos = f.eos();
    ids.add_bos = add && !add->array && add->ints.size() == 1 ? add->ints[0] != 0 : ids.bos.has_value();
    t->set_special_ids(ids);
    m.add_bos = ids.add_bos;
  }
  if (t->vocab_size() > f.config().vocab_size)
    throw UsageError{command + ": the tokenizer has " + std::to_string(t->vocab_size()) + " ids, more than the model's " +
                     std::to_string(f.config().vocab_size)};
  m.tokenizer = std::move(t);
  return m;
}

}  // namespace ptk::tools
