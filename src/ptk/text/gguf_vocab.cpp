#include "ptk/text/gguf_vocab.hpp"

#include <cstring>
#include <optional>

#include "ptk/core/error.hpp"
#include "ptk/core/quote.hpp"
#include "ptk/io/safetensors.hpp"
#include "ptk/text/byte_level_bpe.hpp"
#include "ptk/text/tokenizer_files.hpp"

namespace ptk::text {

io::GgufMetadata gguf_tokenizer_metadata(const Tokenizer& tokenizer, bool add_bos, int pad_to) {
  using io::GgufValue;
  VocabularyExport v = tokenizer.vocabulary();
  if (v.model == "gpt2" && v.pre != "gpt2")
    throw InputError("the tokenizer's pre-tokenization is not GPT-2's, and GGUF can name only that one here "
                     "(tokenizer.ggml.pre \"gpt2\")");
  // A model's rows past the tokenizer's ids (a vocabulary padded to a round size): tokens of their own, never
  // produced by the tokenizer, of GGUF's type 5 (unused).
  for (int id = static_cast<int>(v.tokens.size()); id < pad_to; ++id) {
    v.tokens.push_back("[PAD" + std::to_string(id) + "]");
    if (!v.scores.empty()) v.scores.push_back(0.0f);
    v.types.push_back(kUnusedTokenType);
  }
  io::GgufMetadata kv = {{"tokenizer.ggml.model", GgufValue::of_string(v.model)}};
  // GPT-2's pre-tokenizer by name (llama.cpp picks its regex from it); SentencePiece has none.
  if (v.model == "gpt2") kv.emplace_back("tokenizer.ggml.pre", GgufValue::of_string("gpt2"));
  kv.emplace_back("tokenizer.ggml.tokens", GgufValue::of_strings(std::move(v.tokens)));
  if (!v.scores.empty()) kv.emplace_back("tokenizer.ggml.scores", GgufValue::of_f32s(v.scores));
  kv.emplace_back("tokenizer.ggml.token_type", GgufValue::of_i32s(v.types));
  if (!v.merges.empty()) kv.emplace_back("tokenizer.ggml.merges", GgufValue::of_strings(std::move(v.merges)));
  const SpecialIds& s = tokenizer.special_ids();
  const auto id = [](int x) { return GgufValue::of_u32(static_cast<std::uint32_t>(x)); };
  if (s.bos) kv.emplace_back("tokenizer.ggml.bos_token_id", id(*s.bos));
  if (s.eos) kv.emplace_back("tokenizer.ggml.eos_token_id", id(*s.eos));
  if (v.unknown) kv.emplace_back("tokenizer.ggml.unknown_token_id", id(*v.unknown));
  kv.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::of_bool(add_bos));
  kv.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::of_bool(false));
  return kv;
}

namespace {

// A value of the tokenizer's metadata, checked: IoError naming the file and key for anything else.
struct Keys {
  const io::Gguf& gguf;
  const std::string& name;

  const io::GgufValue* find(const std::string& key, io::GgufType type, bool array) const {
    const io::GgufValue* v = gguf.find("tokenizer.ggml." + key);
    const bool integer = type == io::GgufType::u32;  // any integer type (or bool) will do
    if (v && (v->array != array ||
              (integer ? v->ints.size() != v->count() : type == io::GgufType::f32 ? v->floats.size() != v->count()
                                                                                   : v->type != type)))
    {
      const std::string what = integer ? "integer" : type == io::GgufType::f32 ? "number" : "string";
      throw IoError(name + ": tokenizer.ggml." + key + " is not " +
                    (array ? "an array of " + what + "s" : (integer ? "an " : "a ") + what));
    }
    return v;
  }
  const std::vector<std::string>& strings(const std::string& key, std::size_t count) const {
    const io::GgufValue* v = find(key, io::GgufType::string, true);
    if (!v) throw IoError(name + ": tokenizer.ggml." + key + " is missing");
    if (count && v->strings.size() != count)
      throw IoError(name + ": tokenizer.ggml." + key + " has " + std::to_string(v->strings.size()) + " entries, not " +
                    std::to_string(count) + " (one per token)");
    return v->strings;
  }
  std::optional<std::string> string(const std::string& key) const {
    const io::GgufValue* v = find(key, io::GgufType::string, false);
    return v ? std::optional<std::string>(v->strings.at(0)) : std::nullopt;
  }
  // An id in [0, vocab).
  std::optional<int> id(const std::string& key, std::size_t vocab) const {
    const io::GgufValue* v = find(key, io::GgufType::u32, false);
    if (!v) return std::nullopt;
    if (v->ints[0] < 0 || static_cast<std::uint64_t>(v->ints[0]) >= vocab)
      throw IoError(name + ": tokenizer.ggml." + key + " = " + std::to_string(v->ints[0]) + " is not a token id (of " +
                    std::to_string(vocab) + ")");
    return static_cast<int>(v->ints[0]);
  }
  std::optional<bool> flag(const std::string& key) const {
    const io::GgufValue* v = find(key, io::GgufType::u32, false);
    return v ? std::optional<bool>(v->ints[0] != 0) : std::nullopt;
  }
};

// Protocol buffers' wire format, the little of it a SentencePiece ModelProto needs (sentencepiece_model.proto's
// field numbers; libsentencepiece parses it).
class Proto {
 public:
  void integer(int field, std::int64_t v) { tag(field, 0), varint(static_cast<std::uint64_t>(v)); }
  void bytes(int field, std::string_view b) { tag(field, 2), varint(b.size()), s_.append(b); }
  void real(int field, float v) {
    tag(field, 5);
    char b[4];
    std::memcpy(b, &v, 4);  // little-endian, as ptk's hosts are
    s_.append(b, 4);
  }
  void message(int field, const Proto& m) { bytes(field, m.s_); }
  const std::string& str() const { return s_; }

 private:
  void tag(int field, int wire) { varint(static_cast<std::uint64_t>(field) << 3 | static_cast<std::uint64_t>(wire)); }
  void varint(std::uint64_t v) {
    for (; v >= 0x80; v >>= 7) s_ += static_cast<char>(v | 0x80);
    s_ += static_cast<char>(v);
  }
  std::string s_;
};

// GGUF's token types are SentencePiece's (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte).
std::string sentencepiece_model(const Keys& k, const SpecialIds& special) {
  const auto& tokens = k.strings("tokens", 0);
  const io::GgufValue* scores = k.find("scores", io::GgufType::f32, true);
  const io::GgufValue* types = k.find("token_type", io::GgufType::u32, true);
  if (!scores || scores->floats.size() != tokens.size())
    throw IoError(k.name + ": tokenizer.ggml.scores is missing or not one per token (a SentencePiece model needs them)");
  if (types && types->ints.size() != tokens.size())
    throw IoError(k.name + ": tokenizer.ggml.token_type has " + std::to_string(types->ints.size()) + " entries, not " +
                  std::to_string(tokens.size()) + " (one per token)");
  Proto model;
  std::optional<int> unknown;
  bool bytes = false;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::int64_t type = types ? types->ints[i] : 1;
    if (type < 1 || type > 6)
      throw IoError(k.name + ": tokenizer.ggml.token_type of token " + std::to_string(i) + " is " +
                    std::to_string(type) + ", not a SentencePiece type (1-6)");
    if (type == 2 && !unknown) unknown = static_cast<int>(i);
    bytes = bytes || type == 6;
    Proto piece;
    piece.bytes(1, tokens[i]);
    piece.real(2, static_cast<float>(scores->floats[i]));
    piece.integer(3, type);
    model.message(1, piece);
  }
  const auto piece_of = [&](std::optional<int> id) { return id ? tokens[static_cast<std::size_t>(*id)] : ""; };
  Proto trainer;
  trainer.integer(3, 2);  // model_type: BPE (llama.cpp merges by score, as SentencePiece's BPE does)
  trainer.integer(4, static_cast<std::int64_t>(tokens.size()));
  trainer.integer(35, bytes);  // byte_fallback
  trainer.integer(40, unknown.value_or(-1)), trainer.integer(41, special.bos.value_or(-1));
  trainer.integer(42, special.eos.value_or(-1)), trainer.integer(43, -1);  // unk, bos, eos, pad ids
  trainer.bytes(45, piece_of(unknown)), trainer.bytes(46, piece_of(special.bos)), trainer.bytes(47, piece_of(special.eos));
  model.message(2, trainer);
  Proto normalizer;
  normalizer.bytes(1, "identity");
  normalizer.integer(3, k.flag("add_space_prefix").value_or(true));  // add_dummy_prefix
  normalizer.integer(4, false);                                       // remove_extra_whitespaces
  normalizer.integer(5, true);                                        // escape_whitespaces
  model.message(3, normalizer);
  return model.str();
}

BpeSpec bpe_spec(const Keys& k, const SpecialIds& special) {
  const auto pre = k.string("pre");
  if (pre && *pre != "gpt2")
    throw InputError(k.name + ": tokenizer.ggml.pre = " + quote(*pre) + " is not supported (ptk reads GPT-2's, \"gpt2\")");
  BpeSpec spec;
  spec.origin = k.name;
  spec.tokens = k.strings("tokens", 0);
  const io::GgufValue* types = k.find("token_type", io::GgufType::u32, true);
  if (types && types->ints.size() != spec.tokens.size())
    throw IoError(k.name + ": tokenizer.ggml.token_type has " + std::to_string(types->ints.size()) + " entries, not " +
                  std::to_string(spec.tokens.size()) + " (one per token)");
  for (std::size_t i = 0; types && i < types->ints.size(); ++i)
    if (types->ints[i] == 3 || types->ints[i] == 4) spec.added.push_back({static_cast<int>(i), types->ints[i] == 3});
  for (const std::string& m : k.strings("merges", 0)) {
    const auto space = m.find(' ');
    if (space == std::string::npos || m.find(' ', space + 1) != std::string::npos)
      throw IoError(k.name + ": tokenizer.ggml.merges has " + quote(m.substr(0, 60)) + ", not \"left right\"");
    spec.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  spec.add_prefix_space = k.flag("add_space_prefix").value_or(false);
  spec.special = special;
  return spec;
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const io::Gguf& gguf, const std::string& name) {
  const Keys k{gguf, name};
  const auto model = k.string("model");
  if (!model) throw IoError(name + ": has no tokenizer (tokenizer.ggml.model is missing)");
  if (*model != "llama" && *model != "gpt2")
    throw InputError(name + ": tokenizer.ggml.model = " + quote(*model) +
                     " is not supported (ptk reads \"llama\", SentencePiece, and \"gpt2\", byte-level BPE)");
  const std::size_t vocab = k.strings("tokens", 0).size();
  SpecialIds special;
  special.bos = k.id("bos_token_id", vocab);
  special.eos = k.id("eos_token_id", vocab);
  special.add_bos = k.flag("add_bos_token").value_or(*model == "llama" && special.bos.has_value());
  if (special.add_bos && !special.bos)
    throw IoError(name + ": tokenizer.ggml.add_bos_token is true, and there is no tokenizer.ggml.bos_token_id");
  std::unique_ptr<Tokenizer> t;
  if (*model == "llama")
    t = parse_sentencepiece(sentencepiece_model(k, special), name + "'s tokenizer.ggml.*");
  else
    t = std::make_unique<ByteLevelBpe>(bpe_spec(k, special));
  t->set_special_ids(special);
  io::GgufMetadata keys;
  for (const auto& kv : gguf.metadata)
    if (kv.first.rfind("tokenizer.ggml.", 0) == 0) keys.push_back(kv);
  const std::string bytes = io::serialize_gguf_header(keys, {});
  t->fingerprint_ = t->description() + " crc32:" + io::crc32_hex(bytes.data(), bytes.size());
  return t;
}

}  // namespace ptk::text
