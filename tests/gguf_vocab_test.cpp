// A tokenizer as GGUF metadata and back (text/gguf_vocab.hpp), through a GGUF file's bytes: a byte-level BPE gives
// the same ids after the round trip; a SentencePiece vocabulary written by hand segments as llama.cpp's rules say,
// worked by hand (merges by score, no normalization, whitespace kept, byte fallback); a malformed or unsupported
// tokenizer is refused naming its key. The real vocabularies against llama.cpp and python3-sentencepiece:
// tests/llama_cpp_test.sh and tests/tokenize_reference_test.sh.
#include "ptk/text/gguf_vocab.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ptk/core/error.hpp"
#include "ptk/text/byte_level_bpe.hpp"

namespace {

using namespace ptk;
using namespace ptk::text;

// The metadata written as a GGUF file's bytes and read back, as a model file's header is.
std::unique_ptr<Tokenizer> through_file(const io::GgufMetadata& metadata) {
  const std::string bytes = io::serialize_gguf(metadata, {});
  return tokenizer_from_gguf(io::parse_gguf(bytes, "t.gguf"), "t.gguf");
}

template <class E>
void expect_refused(const io::GgufMetadata& metadata, const std::string& part) {
  try {
    through_file(metadata);
    ADD_FAILURE() << "not refused; expected: " << part;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

void set(io::GgufMetadata& m, const std::string& key, io::GgufValue v) {
  for (auto& kv : m)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  m.emplace_back(key, std::move(v));
}

// The 256 byte tokens, merges that build "the", " t", " the", "<|endoftext|>" (control) and "<b>" (user-defined).
BpeSpec small_bpe() {
  BpeSpec spec;
  spec.origin = "small";
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(byte_alphabet()[b]);
  const std::string space = byte_alphabet()[' '];
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"t", "h"}, {"th", "e"}, {space, "t"}, {space + "t", "he"}, {"h", "e"}}) {
    spec.merges.emplace_back(a, b);
    spec.tokens.push_back(a + b);
  }
  spec.tokens.push_back("<|endoftext|>");
  spec.tokens.push_back("<b>");
  spec.added = {{static_cast<int>(spec.tokens.size()) - 2, true}, {static_cast<int>(spec.tokens.size()) - 1, false}};
  spec.special.bos = spec.special.eos = static_cast<int>(spec.tokens.size()) - 2;
  return spec;
}

TEST(GgufVocab, BytePairRoundTripsThroughTheFile) {
  const ByteLevelBpe original(small_bpe());
  const auto metadata = gguf_tokenizer_metadata(original, false, 270);  // padded: 263 ids, 270 rows
  const auto t = through_file(metadata);
  EXPECT_EQ(t->description(), "byte-level BPE");
  EXPECT_EQ(t->vocab_size(), 270);
  for (const std::string text : {"the theme", " then<|endoftext|>x<b>", "émigré 🎉  \n\tthe", ""}) {
    EXPECT_EQ(t->encode(text), original.encode(text)) << text;
    EXPECT_EQ(t->encode(text, false), original.encode(text, false)) << text;
    EXPECT_EQ(t->decode(t->encode(text)), text);
  }
  EXPECT_EQ(t->special_ids().bos, original.special_ids().bos);
  EXPECT_EQ(t->special_ids().eos, original.special_ids().eos);
  EXPECT_FALSE(t->special_ids().add_bos);
  EXPECT_EQ(t->vocabulary().merges, original.vocabulary().merges);
  EXPECT_EQ(t->fingerprint().rfind("byte-level BPE crc32:", 0), 0u) << t->fingerprint();
  auto other = metadata;
  set(other, "tokenizer.ggml.add_bos_token", io::GgufValue::of_bool(true));
  EXPECT_TRUE(through_file(other)->special_ids().add_bos);
  EXPECT_NE(through_file(other)->fingerprint(), t->fingerprint());
}

// SentencePiece's space, U+2581.
const std::string kS = "\xE2\x96\x81";

// A SentencePiece BPE vocabulary as llama.cpp's GGUF files hold one: <unk>, <s>, </s>, the 256 byte tokens, then
// pieces whose scores rank their merges (higher first).
io::GgufMetadata small_spm() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<std::int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    static const char* hex = "0123456789ABCDEF";
    tokens.push_back(std::string("<0x") + hex[b / 16] + hex[b % 16] + ">");
    scores.push_back(0), types.push_back(6);
  }
  for (const auto& [piece, score] : std::vector<std::pair<std::string, float>>{
           {kS + "a", -1}, {"ab", -2}, {kS + "ab", -3}, {kS, -4}, {"a", -5}, {"b", -6}}) {
    tokens.push_back(piece);
    scores.push_back(score), types.push_back(1);
  }
  return {{"tokenizer.ggml.model", io::GgufValue::of_string("llama")},
          {"tokenizer.ggml.tokens", io::GgufValue::of_strings(tokens)},
          {"tokenizer.ggml.scores", io::GgufValue::of_f32s(scores)},
          {"tokenizer.ggml.token_type", io::GgufValue::of_i32s(types)},
          {"tokenizer.ggml.bos_token_id", io::GgufValue::of_u32(1)},
          {"tokenizer.ggml.eos_token_id", io::GgufValue::of_u32(2)}};
}

TEST(GgufVocab, SentencePieceSegmentsAsLlamaCppDoes) {
  const auto t = through_file(small_spm());
  EXPECT_EQ(t->description(), "SentencePiece");
  const auto id = [&](const std::string& piece) { return t->token_id(piece).value(); };
  const int sa = id(kS + "a"), ab = id("ab"), sab = id(kS + "ab"), s = id(kS), b = id("b");
  // "▁ab▁ab": ▁a (-1) merges first, then ▁a + b -> ▁ab (-3); "ab" alone would be -2, but ▁a took the a.
  EXPECT_EQ(t->encode("ab ab"), (std::vector<int>{sab, sab}));
  // Whitespace runs stay (no normalization): "▁a▁▁b".
  EXPECT_EQ(t->encode("a  b"), (std::vector<int>{sa, s, s, b}));
  // Byte fallback: 'z' is no piece, so its byte token; 'é' two byte tokens.
  EXPECT_EQ(t->encode("z"), (std::vector<int>{s, id("<0x7A>")}));
  EXPECT_EQ(t->encode("é"), (std::vector<int>{s, id("<0xC3>"), id("<0xA9>")}));
  EXPECT_EQ(t->decode(t->encode("ab  zé ab")), "ab  zé ab");
  EXPECT_EQ(t->special_ids().bos, 1);
  EXPECT_EQ(t->special_ids().eos, 2);
  EXPECT_TRUE(t->special_ids().add_bos);  // llama's default where there is a BOS
  EXPECT_EQ(t->encode_for_model("ab").front(), 1);

  auto no_prefix = small_spm();
  set(no_prefix, "tokenizer.ggml.add_space_prefix", io::GgufValue::of_bool(false));
  set(no_prefix, "tokenizer.ggml.add_bos_token", io::GgufValue::of_bool(false));
  const auto u = through_file(no_prefix);
  EXPECT_EQ(u->encode("ab"), (std::vector<int>{ab}));
  EXPECT_FALSE(u->special_ids().add_bos);
  // Exported again, the metadata is the same vocabulary.
  const auto again = gguf_tokenizer_metadata(*t, true);
  EXPECT_EQ(through_file(again)->encode("ab  zé ab"), t->encode("ab  zé ab"));
}

TEST(GgufVocab, RefusalsNameTheKey) {
  using V = io::GgufValue;
  const auto with = [](io::GgufMetadata m, const std::string& key, V v) {
    set(m, "tokenizer.ggml." + key, std::move(v));
    return m;
  };
  const auto without = [](io::GgufMetadata m, const std::string& key) {
    m.erase(std::remove_if(m.begin(), m.end(), [&](const auto& kv) { return kv.first == "tokenizer.ggml." + key; }),
            m.end());
    return m;
  };
  const auto spm = small_spm();
  const auto bpe = gguf_tokenizer_metadata(ByteLevelBpe(small_bpe()), false);
  expect_refused<IoError>({}, "tokenizer.ggml.model is missing");
  expect_refused<InputError>(with(spm, "model", V::of_string("bert")), "tokenizer.ggml.model = 'bert' is not supported");
  expect_refused<InputError>(with(bpe, "pre", V::of_string("llama-bpe")), "tokenizer.ggml.pre = 'llama-bpe'");
  expect_refused<IoError>(without(spm, "tokens"), "tokenizer.ggml.tokens is missing");
  expect_refused<IoError>(with(spm, "tokens", V::of_string("a")), "tokenizer.ggml.tokens is not an array of strings");
  expect_refused<IoError>(without(spm, "scores"), "tokenizer.ggml.scores is missing");
  expect_refused<IoError>(with(spm, "token_type", V::of_i32s({1, 2})), "token_type has 2 entries, not 265");
  expect_refused<IoError>(with(spm, "token_type", V::of_i32s(std::vector<std::int32_t>(265, 9))),
                          "token_type of token 0 is 9");
  expect_refused<IoError>(with(spm, "bos_token_id", V::of_u32(265)), "bos_token_id = 265 is not a token id (of 265)");
  expect_refused<IoError>(with(spm, "eos_token_id", V::of_string("x")), "eos_token_id is not an integer");
  expect_refused<IoError>(with(without(spm, "bos_token_id"), "add_bos_token", V::of_bool(true)), "no tokenizer.ggml.bos_token_id");
  expect_refused<IoError>(with(bpe, "merges", V::of_strings({"a b c"})), "'a b c', not \"left right\"");
  expect_refused<IoError>(without(bpe, "merges"), "tokenizer.ggml.merges is missing");
  // An empty piece: libsentencepiece's own refusal, as one line.
  auto tokens = spm;
  set(tokens, "tokenizer.ggml.tokens", [] {
    std::vector<std::string> t(265, "");
    for (int i = 0; i < 265; ++i) t[i] = i ? "p" + std::to_string(i) : "";
    return V::of_strings(t);
  }());
  expect_refused<IoError>(tokens, "not a SentencePiece model");
  // A byte-level BPE whose pre-tokenization GGUF cannot name is not written.
  BpeSpec llama3 = small_bpe();
  llama3.patterns = {"\\s+"};
  EXPECT_THROW(gguf_tokenizer_metadata(ByteLevelBpe(std::move(llama3)), false), InputError);
}

}  // namespace
