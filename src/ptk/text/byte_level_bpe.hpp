#pragma once
// Byte-level BPE (GPT-2's, and Llama 3's, Qwen's ... in Hugging Face's tokenizer.json).
//   encode: text -> pieces (special tokens matched literally, then the pre-tokenization regexes, each match a
//           piece) -> each piece's UTF-8 bytes as one symbol per byte -> merge the adjacent pair of lowest rank,
//           leftmost first, until no pair has a merge -> the symbols' ids.
//   decode: each token's characters map back to the bytes they stand for (GPT-2's bytes_to_unicode table).
// Merging uses a heap of candidate pairs (O(n log n) in a piece's length, as Hugging Face's tokenizers do), so a
// hostile text without spaces or punctuation (one piece of megabytes) cannot take quadratic time.
#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptk/text/regex_split.hpp"
#include "ptk/text/tokenizer.hpp"

namespace ptk::text {

// GPT-2's pre-tokenization: contractions, letters, digits, other symbols, each with one optional leading space,
// and runs of whitespace (Python's `regex`, which OpenAI's encoder and Hugging Face's use).
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// What a byte-level BPE tokenizer is, whichever file it came from (bpe_files.cpp reads them).
struct BpeSpec {
  std::string origin;                                      // the file, for messages
  std::vector<std::string> tokens;                         // by id: the token in the byte alphabet (UTF-8)
  std::vector<std::pair<std::string, std::string>> merges;  // by rank
  std::vector<std::string> patterns{kGpt2Pattern};         // pre-tokenization, applied in order
  bool add_prefix_space = false;                           // a space before a text that starts without one
  bool ignore_merges = false;                              // a piece that is a token is that token (Llama 3)
  struct Added {
    int id;
    bool special;  // matched only when encode's parse_special is set; the others always
  };
  std::vector<Added> added;  // tokens matched literally in the text; their text is tokens[id], not byte-mapped
  SpecialIds special;
};

class ByteLevelBpe final : public Tokenizer {
 public:
  // Checks the spec (ids dense, each merge's parts and result in the vocabulary, every byte a token, patterns
  // compile) and builds the tables; throws IoError naming spec.origin.
  explicit ByteLevelBpe(BpeSpec spec);
  ~ByteLevelBpe() override;

  std::string description() const override { return "byte-level BPE"; }
  int vocab_size() const override { return static_cast<int>(bytes_.size()); }
  std::vector<int> encode(std::string_view text, bool parse_special = true) const override;
  std::string token_bytes(int id, bool first) const override;

  std::optional<int> token_id(std::string_view text) const override;
  VocabularyExport vocabulary() const override;
  std::vector<std::pair<std::string, std::string>> hugging_face_files() const override;

 private:
  void encode_ordinary(std::string_view text, std::vector<int>& out) const;
  void merge_piece(std::string_view piece, std::vector<int>& out) const;
  std::pair<int, int> merge_of(int left, int right) const;  // (rank, result) or (-1, -1)

  BpeSpec spec_;
  std::unordered_map<std::string, int> ids_;               // token text -> id
  std::vector<std::string> bytes_;                         // id -> the bytes it decodes to
  std::array<int, 256> byte_ids_{};                        // byte -> the id of its one-byte token
  std::array<bool, 256> starts_added_{};                   // bytes an added token starts with
  std::unordered_map<std::uint64_t, std::pair<int, int>> merge_;  // (left, right) -> (rank, result)
  std::unique_ptr<RegexSplitter> splitter_;
};

// GPT-2's bytes_to_unicode: the character (UTF-8) that stands for each byte in a byte-level vocabulary.
const std::array<std::string, 256>& byte_alphabet();

}  // namespace ptk::text
