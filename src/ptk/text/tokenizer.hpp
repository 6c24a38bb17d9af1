#pragma once
// Tokenizers: text <-> ids for the models ptk did not train on bytes. The two families open models ship:
//   byte-level BPE (GPT-2, Llama 3, Qwen, ...): vocab.json + merges.txt, or Hugging Face's tokenizer.json
//     (byte_level_bpe.hpp; its files: bpe_files.cpp);
//   SentencePiece (Llama 1/2, Mistral, ...): tokenizer.model, through Debian's libsentencepiece (sentencepiece.cpp).
// Text is UTF-8: an encoder refuses ill-formed input (InputError naming the byte offset) rather than guess, and
// decoding always yields well-formed UTF-8 (U+FFFD where the tokens' bytes are not), as Hugging Face does.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptk/text/utf8.hpp"

namespace ptk::io {
struct Gguf;
}

namespace ptk::text {

// A tokenizer's whole vocabulary as GGUF (and llama.cpp) describe one: its kind ("llama": SentencePiece; "gpt2":
// byte-level BPE), each token's text as the vocabulary spells it, its score (SentencePiece) and type (GGUF's: 1
// normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte), and the merges (BPE, "left right" by rank).
struct VocabularyExport {
  std::string model;
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;
  std::vector<std::string> merges;
  std::optional<int> unknown;
  // Byte-level BPE: "gpt2" when the pre-tokenization is GPT-2's (the name GGUF's tokenizer.ggml.pre gives it),
  // empty for another (Llama 3's regexes, a prefix space), which GGUF can name only by model.
  std::string pre;
};

// The ids a model gives a meaning to, and whether a text fed to the model starts with BOS (Llama's convention; a
// directory's tokenizer_config.json "add_bos_token" says otherwise). Absent where the tokenizer has none.
struct SpecialIds {
  std::optional<int> bos, eos;
  bool add_bos = false;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // "byte-level BPE" or "SentencePiece (unigram)"..., for messages and `ptk info`.
  virtual std::string description() const = 0;
  virtual int vocab_size() const = 0;
  // The ids of `text`, without BOS. With parse_special, a special token's text written in `text` ("<|endoftext|>")
  // is that token, as Hugging Face encodes; without, it is ordinary text.
  virtual std::vector<int> encode(std::string_view text, bool parse_special = true) const = 0;
  // The bytes token `id` adds to a text; `first` when nothing was decoded before it (SentencePiece drops the space
  // it put in front of the text). SentencePiece's control tokens (<s>, </s>) add nothing; byte-level BPE's special
  // tokens add their text, as Hugging Face's decode does. An id outside the vocabulary is refused.
  virtual std::string token_bytes(int id, bool first) const = 0;
  // The id of the token written `text` in the vocabulary's own spelling ("<s>", "<|endoftext|>", "Ġthe").
  virtual std::optional<int> token_id(std::string_view text) const = 0;
  virtual VocabularyExport vocabulary() const = 0;
  // The tokenizer as the files of a Hugging Face directory, (name, bytes): tokenizer.model (SentencePiece's
  // ModelProto), or vocab.json and merges.txt (GPT-2's byte-level BPE). InputError for a tokenizer those files
  // cannot describe (another pre-tokenization, added tokens other than GPT-2's <|endoftext|>).
  virtual std::vector<std::pair<std::string, std::string>> hugging_face_files() const = 0;

  // encode() with BOS in front when the tokenizer's convention asks for it and add_bos.
  std::vector<int> encode_for_model(std::string_view text, bool add_bos = true, bool parse_special = true) const;
  // The text of `ids`: their bytes in order, decoded as UTF-8 with U+FFFD for ill-formed parts.
  std::string decode(const std::vector<int>& ids) const;
  // "SentencePiece crc32:1a2b3c4d": the description and the CRC-32 of the files load_tokenizer read (the
  // vocabulary and merges, tokenizer.json or tokenizer.model; not tokenizer_config.json, which changes no id of a
  // text). A checkpoint trained on the tokenizer records it. Empty for a tokenizer built in memory.
  const std::string& fingerprint() const { return fingerprint_; }
  const SpecialIds& special_ids() const { return special_; }
  void set_special_ids(const SpecialIds& ids) { special_ = ids; }  // a directory's tokenizer_config.json

 protected:
  // Throws InputError "token id X is outside the vocabulary of N" (for token_bytes' implementations).
  void check_id(int id) const;
  SpecialIds special_;

 private:
  friend std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);
  friend std::unique_ptr<Tokenizer> tokenizer_from_gguf(const io::Gguf& gguf, const std::string& name);
  std::string fingerprint_;
};

// Decoding while tokens arrive (ptk generate): push() returns the text the token completes, holding back the bytes
// of a character it leaves unfinished; finish() ends the stream. The concatenation equals decode() of the ids.
class TokenStream {
 public:
  explicit TokenStream(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::string push(int id);
  std::string finish() { return utf8_.finish(); }

 private:
  const Tokenizer& tokenizer_;
  Utf8Decoder utf8_;
  bool first_ = true;
};

// The tokenizer at `path`: a file (tokenizer.model, tokenizer.json, vocab.json with merges.txt beside it, or a
// GGUF model's tokenizer.ggml.* metadata: NAME.gguf, gguf_vocab.hpp) or a directory holding one of them (tried in that order; OpenAI's encoder.json + vocab.bpe are GPT-2's vocab.json +
// merges.txt). A directory's tokenizer_config.json, when present, sets add_bos and names BOS/EOS. Throws IoError
// for a file that cannot be read or is malformed, InputError for a well-formed tokenizer ptk does not support
// (one line naming the field and its value).
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

}  // namespace ptk::text
