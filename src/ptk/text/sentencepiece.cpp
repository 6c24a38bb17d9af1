// SentencePiece models (tokenizer.model) through Debian's libsentencepiece: its encoder (normalization, unigram or
// BPE segmentation, byte fallback) is the reference, so ptk calls it rather than re-implementing it. Decoding is
// ptk's, token by token, so that text streams (TokenStream): each id's bytes are computed once at load, with
// SentencePiece's rules: "▁" is a space, dropped at the start of the text; control tokens (<s>, </s>) are
// nothing; <0xNN> byte pieces are the byte; the unknown token is its surface (" ⁇ " by default).
#include <sentencepiece_processor.h>

#include "ptk/core/error.hpp"
#include "ptk/text/tokenizer_files.hpp"

namespace ptk::text {

namespace {

const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string replace_spaces(std::string piece) {
  for (std::size_t at = piece.find(kSpace); at != std::string::npos; at = piece.find(kSpace, at + 1))
    piece.replace(at, kSpace.size(), " ");
  return piece;
}

class SentencePiece final : public Tokenizer {
 public:
  SentencePiece(const std::string& bytes, const std::string& path) : path_(path) {
    // libsentencepiece also throws (its trie builder's Darts::Details::Exception on an empty piece, found by the
    // sentencepiece fuzz target): every way it fails is this one refusal.
    sentencepiece::util::Status status;
    try {
      status = sp_.LoadFromSerializedProto(bytes);
    } catch (const std::exception& e) {
      throw IoError(path + ": not a SentencePiece model (" + one_line(e.what()) + ")");
    }
    if (!status.ok()) throw IoError(path + ": not a SentencePiece model (" + one_line(status.ToString()) + ")");
    const int n = sp_.GetPieceSize();
    bytes_.resize(static_cast<std::size_t>(n));
    first_bytes_.resize(static_cast<std::size_t>(n));
    for (int id = 0; id < n; ++id) {
      const std::string& piece = sp_.IdToPiece(id);
      std::string& b = bytes_[static_cast<std::size_t>(id)];
      std::string& first = first_bytes_[static_cast<std::size_t>(id)];
      if (sp_.IsControl(id)) continue;
      if (sp_.IsUnknown(id)) {
        b = first = sp_.DecodeIds({id});
      } else if (sp_.IsByte(id)) {  // "<0xNN>"
        b = first = std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
      } else {
        b = replace_spaces(piece);
        first = replace_spaces(piece.rfind(kSpace, 0) == 0 ? piece.substr(kSpace.size()) : piece);
      }
    }
    if (sp_.bos_id() >= 0) special_.bos = sp_.bos_id(), special_.add_bos = true;
    if (sp_.eos_id() >= 0) special_.eos = sp_.eos_id();
  }

  std::string description() const override { return "SentencePiece"; }
  int vocab_size() const override { return static_cast<int>(bytes_.size()); }

  // SentencePiece has no special tokens written in text: parse_special changes nothing.
  std::vector<int> encode(std::string_view text, bool) const override {
    const std::size_t bad = first_invalid_utf8(text);
    require(bad == text.size(), "tokenize: the text is not UTF-8: byte ", bad, " (of ", text.size(),
            ") starts no well-formed character");
    std::vector<int> ids;
    const auto status = sp_.Encode(text, &ids);
    if (!status.ok()) throw InputError(path_ + ": SentencePiece could not encode the text (" + one_line(status.ToString()) + ")");
    return ids;
  }

  std::optional<int> token_id(std::string_view text) const override {
    const int id = sp_.PieceToId(text);
    if (id < 0 || sp_.IdToPiece(id) != text) return std::nullopt;  // PieceToId answers unk_id for any other text
    return id;
  }

  VocabularyExport vocabulary() const override {
    VocabularyExport v;
    v.model = "llama";
    for (int id = 0; id < sp_.GetPieceSize(); ++id) {
      v.tokens.push_back(sp_.IdToPiece(id));
      v.scores.push_back(sp_.GetScore(id));
      v.types.push_back(sp_.IsUnknown(id) ? 2 : sp_.IsControl(id) ? 3 : sp_.IsUnused(id) ? 5 : sp_.IsByte(id) ? 6 : 1);
    }
    if (sp_.unk_id() >= 0) v.unknown = sp_.unk_id();
    return v;
  }

  std::vector<std::pair<std::string, std::string>> hugging_face_files() const override {
    return {{"tokenizer.model", sp_.serialized_model_proto()}};
  }

  std::string token_bytes(int id, bool first) const override {
    check_id(id);
    return (first ? first_bytes_ : bytes_)[static_cast<std::size_t>(id)];
  }

 private:
  static std::string one_line(std::string s) {
    for (char& c : s) if (c == '\n') c = ' ';
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
  }
  std::string path_;
  sentencepiece::SentencePieceProcessor sp_;
  std::vector<std::string> bytes_, first_bytes_;
};

}  // namespace

std::unique_ptr<Tokenizer> read_sentencepiece(const std::string& path) {
  return parse_sentencepiece(read_tokenizer_file(path), path);
}

std::unique_ptr<Tokenizer> parse_sentencepiece(const std::string& bytes, const std::string& name) {
  return std::make_unique<SentencePiece>(bytes, name);
}

}  // namespace ptk::text
