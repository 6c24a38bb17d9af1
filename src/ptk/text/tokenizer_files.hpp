#pragma once
// The readers of tokenizer files (one concern: bytes on disk -> what a tokenizer is). Every reader refuses what is
// not a regular file, more than kMaxTokenizerFile bytes, malformed JSON or lines (IoError, one line naming the file
// and the place), and a well-formed tokenizer ptk does not implement (InputError naming the field and its value).
#include <cstdint>
#include <memory>
#include <string>

#include "ptk/text/byte_level_bpe.hpp"

namespace ptk::text {

// The largest tokenizer file read (Gemma's tokenizer.json, the largest common one, is 34 MB).
inline constexpr std::uint64_t kMaxTokenizerFile = 512ull << 20;

// GPT-2's vocab.json (token -> id) and merges.txt ("#version" line, then "left right" per line, by rank). A
// "<|endoftext|>" token is GPT-2's special token: matched in text, and BOS and EOS (not added: add_bos false).
BpeSpec read_gpt2_files(const std::string& vocab_path, const std::string& merges_path);

// Hugging Face's tokenizer.json with a BPE model and byte-level pre-tokenization (ByteLevel, or a Sequence of
// Split regexes ending in ByteLevel); added_tokens; a TemplateProcessing post-processor that puts a special token
// first makes that token BOS (add_bos). Normalizers, byte fallback (SentencePiece-style BPE), dropout, subword
// prefixes and suffixes and other models are refused, naming the field.
BpeSpec read_tokenizer_json(const std::string& path);

// A SentencePiece model (tokenizer.model) through libsentencepiece; BOS and EOS as the model defines them, BOS
// added (the Llama convention).
std::unique_ptr<Tokenizer> read_sentencepiece(const std::string& path);

// The same from bytes already read (the fuzz targets'), `name`s for messages.
BpeSpec parse_gpt2_files(const std::string& vocab_json, const std::string& merges_txt, const std::string& vocab_name,
                         const std::string& merges_name);
BpeSpec parse_tokenizer_json(const std::string& bytes, const std::string& name);
std::unique_ptr<Tokenizer> parse_sentencepiece(const std::string& bytes, const std::string& name);

// A file's bytes under the readers' rules (io::read_regular_file with kMaxTokenizerFile; FileError -> IoError).
std::string read_tokenizer_file(const std::string& path);

}  // namespace ptk::text
