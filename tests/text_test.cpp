// The tokenizers' own logic against oracles that share no code with it: UTF-8 decoding against the WHATWG rules
// worked by hand, byte-level BPE against OpenAI's merge loop (ptk/reference/bpe.hpp) on random vocabularies,
// pre-tokenization against Python's `regex` results, special tokens, streaming, and the refusal of malformed
// files. The real vocabularies against independent encoders: tests/tokenize_reference_test.sh.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ptk/core/error.hpp"
#include "ptk/reference/bpe.hpp"
#include "ptk/text/byte_level_bpe.hpp"
#include "ptk/text/regex_split.hpp"
#include "ptk/text/tokenizer.hpp"
#include "ptk/text/tokenizer_files.hpp"

namespace {

using namespace ptk::text;

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, FirstInvalidByte) {
  EXPECT_EQ(first_invalid_utf8("plain"), 5u);
  EXPECT_EQ(first_invalid_utf8("caf\xC3\xA9 \xF0\x9F\x8E\x89"), 10u);   // é, 🎉
  EXPECT_EQ(first_invalid_utf8("ab\xC0\xAF"), 2u);                        // overlong '/'
  EXPECT_EQ(first_invalid_utf8("a\xED\xA0\x80"), 1u);                     // a surrogate, U+D800
  EXPECT_EQ(first_invalid_utf8("\xF4\x90\x80\x80"), 0u);                  // beyond U+10FFFF
  EXPECT_EQ(first_invalid_utf8("ok\xE2\x82"), 2u);                        // truncated €
  EXPECT_EQ(first_invalid_utf8(std::string("a\0b", 3)), 3u);              // NUL is a character
}

// Each expectation follows the WHATWG decoder by hand (Python's bytes.decode(errors="replace") agrees).
TEST(Utf8, LossyDecodeReplacesMaximalSubparts) {
  EXPECT_EQ(decode_utf8_lossy("\xE0\x80"), kFffd + kFffd);          // E0 wants A0..BF: two errors
  EXPECT_EQ(decode_utf8_lossy("\xE2\x82"), kFffd);                  // one truncated sequence, one U+FFFD
  EXPECT_EQ(decode_utf8_lossy("\xE2\x82" "A"), kFffd + "A");        // the A is read again, kept
  EXPECT_EQ(decode_utf8_lossy("\xFF\xC3\xA9"), kFffd + "\xC3\xA9");
  EXPECT_EQ(decode_utf8_lossy("\xF0\x9F\x8E"), kFffd);
  EXPECT_EQ(decode_utf8_lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // ED wants 80..9F
}

TEST(Utf8, QuoteIsOneLine) {
  EXPECT_EQ(quote("a\nb\tc'd\\"), R"('a\nb\tc\'d\\')");
  EXPECT_EQ(quote("\x01\x7f\xff\xC3\xA9"), "'\\x01\\x7f\\xff\xC3\xA9'");
  EXPECT_EQ(quote(std::string(100, 'x'), 4), "'xxxx...'");
}

TEST(Utf8, StreamingEqualsWholeForAnySplit) {
  std::mt19937 rng(7);
  const std::string pool[] = {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x8E\x89", "\xE2\x82", "\xFF", "\x80", " "};
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes;
    for (int i = 0; i < 12; ++i) bytes += pool[rng() % 8];
    Utf8Decoder d;
    std::string streamed;
    for (std::size_t at = 0; at < bytes.size();) {
      const std::size_t n = std::min<std::size_t>(1 + rng() % 3, bytes.size() - at);
      const std::string out = d.push(bytes.substr(at, n));
      EXPECT_EQ(first_invalid_utf8(out), out.size()) << "a push returned ill-formed UTF-8";
      streamed += out;
      at += n;
    }
    ASSERT_EQ(streamed + d.finish(), decode_utf8_lossy(bytes)) << "trial " << trial;
  }
}

// A byte-level vocabulary: the 256 byte tokens, then `merges` (in byte-alphabet spelling) as tokens in rank order.
BpeSpec tiny_spec(const std::vector<std::pair<std::string, std::string>>& merges) {
  BpeSpec spec;
  spec.origin = "tiny";
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(byte_alphabet()[b]);
  for (const auto& [a, b] : merges) {
    if (std::find(spec.tokens.begin(), spec.tokens.end(), a + b) == spec.tokens.end()) spec.tokens.push_back(a + b);
    spec.merges.emplace_back(a, b);
  }
  return spec;
}

std::vector<std::string> spelled(const ByteLevelBpe& t, const std::vector<int>& ids) {
  std::vector<std::string> out;
  for (int id : ids) {
    std::string s;
    for (char c : t.token_bytes(id, false)) s += byte_alphabet()[static_cast<unsigned char>(c)];
    out.push_back(s);
  }
  return out;
}

TEST(Bpe, LowestRankFirstAndLeftmostAmongEquals) {
  // "a b" before "b c": abc -> ab c. Then "aa" on "aaa" -> aa a (left to right, no overlap).
  ByteLevelBpe t(tiny_spec({{"a", "b"}, {"b", "c"}, {"a", "a"}}));
  EXPECT_EQ(spelled(t, t.encode("abc")), (std::vector<std::string>{"ab", "c"}));
  EXPECT_EQ(spelled(t, t.encode("aaa")), (std::vector<std::string>{"aa", "a"}));
  EXPECT_EQ(spelled(t, t.encode("bca")), (std::vector<std::string>{"bc", "a"}));
}

// Random vocabularies over a four-letter alphabet (each merge joins two tokens that exist) and random texts with no
// pre-tokenization (the whole text is one piece, where the merge order matters most): every text's tokens are the
// oracle's.
TEST(Bpe, EqualsTheReferenceMergeLoop) {
  std::mt19937 rng(2026);
  const std::string letters = "abc ";
  for (int vocab = 0; vocab < 40; ++vocab) {
    std::vector<std::string> known;
    for (char c : letters) known.push_back(byte_alphabet()[static_cast<unsigned char>(c)]);
    std::vector<std::pair<std::string, std::string>> merges;
    std::map<std::pair<std::string, std::string>, int> ranks;
    while (merges.size() < 30) {
      const std::string a = known[rng() % known.size()], b = known[rng() % known.size()];
      if (ranks.count({a, b}) || (a + b).size() > 12) continue;
      ranks[{a, b}] = static_cast<int>(merges.size());
      merges.emplace_back(a, b);
      if (std::find(known.begin(), known.end(), a + b) == known.end()) known.push_back(a + b);
    }
    BpeSpec spec = tiny_spec(merges);
    spec.patterns.clear();
    const ByteLevelBpe t(std::move(spec));
    for (int text = 0; text < 25; ++text) {
      std::string s;
      std::vector<std::string> symbols;
      for (std::size_t i = 0, n = 1 + rng() % 40; i < n; ++i) {
        s += letters[rng() % 4];
        symbols.push_back(byte_alphabet()[static_cast<unsigned char>(s.back())]);
      }
      ASSERT_EQ(spelled(t, t.encode(s)), ptk::reference::bpe(symbols, ranks)) << "vocabulary " << vocab << ", '" << s << "'";
    }
  }
}

// One piece of 200,000 letters: the heap keeps it O(n log n) (the reference loop would take minutes).
TEST(Bpe, LongPieceIsNotQuadratic) {
  BpeSpec spec = tiny_spec({{"a", "a"}, {"aa", "aa"}, {"aaaa", "aaaa"}});
  spec.patterns.clear();
  const ByteLevelBpe t(std::move(spec));
  const auto ids = t.encode(std::string(200000, 'a'));
  EXPECT_EQ(ids.size(), 25000u);
  EXPECT_EQ(t.decode(ids), std::string(200000, 'a'));
}

std::vector<std::string> pieces(const std::string& text) {
  const RegexSplitter s({kGpt2Pattern}, "test");
  std::vector<std::string> out;
  for (auto p : s.split(text)) out.emplace_back(p);
  return out;
}

// Expected pieces are Python's: regex.findall(GPT-2's pattern, text) with the `regex` module.
TEST(Pretokenize, Gpt2PatternAsPythonRegex) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("Hello world's  3 x"), (V{"Hello", " world", "'s", " ", " 3", " x"}));
  EXPECT_EQ(pieces("a  \n\nb"), (V{"a", "  \n", "\n", "b"}));  // \s+(?!\S) leaves the last space to the next piece
  EXPECT_EQ(pieces("x!!! 42abc"), (V{"x", "!!!", " 42", "abc"}));
  // U+180E MONGOLIAN VOWEL SEPARATOR is not White_Space (PCRE2's own \s takes it: the rewrite matters here).
  EXPECT_EQ(pieces("a \xE1\xA0\x8E" "b"), (V{"a", " \xE1\xA0\x8E", "b"}));
  // U+0085 NEXT LINE is White_Space (JavaScript's \s does not take it; gpt-3-encoder differs here).
  EXPECT_EQ(pieces("a\xC2\x85 b"), (V{"a", "\xC2\x85", " b"}));
  EXPECT_EQ(unicode_whitespace(R"(\s+\S\\s[^\s])"), R"(\p{White_Space}+\P{White_Space}\\s[^\p{White_Space}])");
}

// A pattern that can match nothing (\p{N}{0,3}, found by the tokenizer_json fuzz target): an empty match is no
// piece, and the text between matches is one gap piece, once.
TEST(Pretokenize, EmptyMatchesAddNoPieceAndGapsComeOnce) {
  const RegexSplitter s({R"(\p{N}{0,3})"}, "test");
  std::vector<std::string> got;
  for (auto p : s.split("ab1\xF0\x9F\x8E\x89" "2345")) got.emplace_back(p);
  EXPECT_EQ(got, (std::vector<std::string>{"ab", "1", "\xF0\x9F\x8E\x89", "234", "5"}));
}

TEST(Bpe, SpecialTokensParsedOnlyWhenAsked) {
  BpeSpec spec = tiny_spec({});
  spec.tokens.push_back("<|endoftext|>");
  spec.tokens.push_back("<|end|>");
  const int eot = 256, end = 257;
  spec.added = {{end, true}, {eot, true}};
  const ByteLevelBpe t(std::move(spec));
  EXPECT_EQ(t.encode("x<|endoftext|>y"), (std::vector<int>{t.token_id("x").value(), eot, t.token_id("y").value()}));
  EXPECT_EQ(t.encode("<|end|><|endoftext|>"), (std::vector<int>{end, eot}));
  const auto plain = t.encode("<|endoftext|>", /*parse_special=*/false);
  EXPECT_EQ(plain.size(), 13u);
  EXPECT_EQ(t.decode({eot}), "<|endoftext|>");
}

TEST(Tokenizer, StreamHoldsBackUnfinishedCharacters) {
  const ByteLevelBpe t(tiny_spec({}));
  const auto ids = t.encode("\xF0\x9F\x8E\x89!");  // 🎉 as four byte tokens, then '!'
  ASSERT_EQ(ids.size(), 5u);
  TokenStream stream(t);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(stream.push(ids[i]), "");
  EXPECT_EQ(stream.push(ids[3]), "\xF0\x9F\x8E\x89");
  EXPECT_EQ(stream.push(ids[4]), "!");
  EXPECT_EQ(stream.finish(), "");
  TokenStream cut(t);
  cut.push(ids[0]);
  EXPECT_EQ(cut.finish(), kFffd);
  EXPECT_THROW(t.decode({256}), ptk::InputError);
  EXPECT_THROW(t.encode("bad \xC3("), ptk::InputError);
}

// Malformed and unsupported files: refused with one line naming the file and the place (IoError), or the field and
// its value (InputError); never a crash or a silent guess.
class TokenizerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = testing::TempDir() + "ptk_text_test.XXXXXX";  // mkdtemp's template: a new directory
    ASSERT_NE(mkdtemp(name.data()), nullptr);
    dir_ = name;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << bytes;
    return dir_ + "/" + name;
  }
  // A GPT-2 pair whose vocabulary is the 256 bytes plus `extra` (JSON members), with `merges` as merges.txt.
  std::string gpt2(const std::string& extra, const std::string& merges) {
    std::string vocab = "{";
    for (int b = 0; b < 256; ++b) {
      std::string t = byte_alphabet()[b];
      if (t == "\"" || t == "\\") t = "\\" + t;
      vocab += (b ? "," : "") + std::string("\"") + t + "\":" + std::to_string(b);
    }
    write("vocab.json", vocab + extra + "}");
    write("merges.txt", "#version: 0.2\n" + merges);
    return dir_ + "/vocab.json";
  }
  template <class E>
  void expect_refused(const std::string& path, const std::string& needle) {
    try {
      load_tokenizer(path);
      ADD_FAILURE() << path << ": accepted, expected a refusal naming '" << needle << "'";
    } catch (const E& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  std::string dir_;
};

TEST_F(TokenizerFiles, Gpt2PairLoadsAndMalformedOnesAreRefused) {
  const auto ok = load_tokenizer(gpt2(",\"ab\":256", "a b\n"));
  EXPECT_EQ(ok->encode("ab").size(), 1u);
  EXPECT_EQ(load_tokenizer(dir_)->vocab_size(), 257);  // the directory finds vocab.json
  expect_refused<ptk::IoError>(gpt2(",\"ab\":256", "a b c\n"), "not two tokens with one space");
  expect_refused<ptk::IoError>(gpt2(",\"ab\":256", "a x9\n"), "'x9', which is not in the vocabulary");
  expect_refused<ptk::IoError>(gpt2(",\"ab\":300", ""), "not an integer in [0, 257)");
  expect_refused<ptk::IoError>(gpt2(",\"ab\":-1", ""), "not an integer");
  expect_refused<ptk::IoError>(gpt2(",\"ab\":\"7\"", ""), "not an integer");
  expect_refused<ptk::IoError>(gpt2(",\"ab\":3", ""), "id 3 is given to both");
  // A token holding a newline (found by the tokenizer_json fuzz target): the message stays one line.
  expect_refused<ptk::IoError>(gpt2(",\"a\\nb\":256", ""), "the token 'a\\nb' (id 256) has a character outside");
  write("vocab.json", "{\"a\":0");
  expect_refused<ptk::IoError>(dir_ + "/vocab.json", "not valid JSON");
  write("vocab.json", "[1,2]");
  expect_refused<ptk::IoError>(dir_ + "/vocab.json", "not a JSON object");
  write("vocab.json", "{\"a\":0}");
  expect_refused<ptk::IoError>(dir_ + "/vocab.json", "no token for byte 0");
  ::unlink((dir_ + "/merges.txt").c_str());
  expect_refused<ptk::IoError>(dir_ + "/vocab.json", "needs its merges beside it");
}

TEST_F(TokenizerFiles, TokenizerJsonSupportedAndRefusedFields) {
  const std::string vocab = [&] {
    gpt2("", "");
    std::ifstream in(dir_ + "/vocab.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const auto json = [&](const std::string& model_extra, const std::string& rest) {
    return write("tokenizer.json", "{\"model\":{\"type\":\"BPE\",\"vocab\":" + vocab + ",\"merges\":[[\"a\",\"b\"]]" +
                                       model_extra + "},\"added_tokens\":[{\"id\":256,\"content\":\"ab\"}," +
                                       "{\"id\":257,\"content\":\"<s>\",\"special\":true}]" + rest + "}");
  };
  const std::string byte_level = ",\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}";
  const std::string bos = ",\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":"
                          "{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}]}";
  const auto t = load_tokenizer(json("", byte_level + bos));
  EXPECT_EQ(t->encode_for_model("<s>ab"), (std::vector<int>{257, 257, 256}));
  EXPECT_EQ(t->special_ids().bos, 257);
  expect_refused<ptk::InputError>(json("", ",\"normalizer\":{\"type\":\"NFC\"}" + byte_level), "normalizer type 'NFC'");
  expect_refused<ptk::InputError>(json(",\"byte_fallback\":true", byte_level), "byte_fallback");
  expect_refused<ptk::InputError>(json("", ",\"pre_tokenizer\":{\"type\":\"Whitespace\"}"), "pre_tokenizer type 'Whitespace'");
  expect_refused<ptk::InputError>(json("", ""), "pre_tokenizer null");
  expect_refused<ptk::IoError>(json("", ",\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"use_regex\":\"yes\"}"), "malformed");
  write("tokenizer.json", "{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}");
  expect_refused<ptk::InputError>(dir_ + "/tokenizer.json", "model type \"WordPiece\"");
  const std::string bad_regex = ",\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
                                "\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\",\"invert\":false},"
                                "{\"type\":\"ByteLevel\",\"use_regex\":false}]}";
  expect_refused<ptk::InputError>(json("", bad_regex), "does not compile");
}

TEST_F(TokenizerFiles, NotRegularFilesAndMissingOnes) {
  expect_refused<ptk::IoError>("/dev/zero", "not a regular file");
  expect_refused<ptk::IoError>(dir_, "no tokenizer in it");
  expect_refused<ptk::IoError>(dir_ + "/absent", "no such file or directory");
  expect_refused<ptk::IoError>(write("x.model", "not a protobuf"), "not a SentencePiece model");
  // A model whose trie libsentencepiece cannot build: it throws (Darts::Details::Exception) rather than returning a
  // status. Found by the sentencepiece fuzz target; the input is that target's finding.
  expect_refused<ptk::IoError>(std::string(PTK_SOURCE_DIR) + "/tests/data/sentencepiece_empty_trie_key.model",
                               "not a SentencePiece model (");
  ASSERT_EQ(mkfifo((dir_ + "/fifo.json").c_str(), 0600), 0);
  expect_refused<ptk::IoError>(dir_ + "/fifo.json", "not a regular file");
}

}  // namespace
