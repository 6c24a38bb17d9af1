// Encoding any text with a byte-level BPE (GPT-2's pattern, merges that build long tokens, two special tokens):
// ill-formed UTF-8 is refused; well-formed text decodes back to itself, with and without special tokens parsed; a
// stream of the ids, pushed one by one, gives the same text and only well-formed UTF-8 at every step.
#include "fuzz_main.hpp"
#include "ptk/text/byte_level_bpe.hpp"

namespace {

const ptk::text::ByteLevelBpe& tokenizer() {
  static const ptk::text::ByteLevelBpe t = [] {
    ptk::text::BpeSpec spec;
    spec.origin = "fuzz";
    for (int b = 0; b < 256; ++b) spec.tokens.push_back(ptk::text::byte_alphabet()[b]);
    const char* merges[][2] = {{"t", "h"}, {"th", "e"}, {"\xC4\xA0", "the"}, {"a", "a"}, {"aa", "aa"}, {"e", "e"},
                               {"\xC4\xA0", "\xC4\xA0"}, {"\xC3\xB0", "\xC5\x81"}, {"1", "2"}, {"'", "s"}};
    for (const auto& m : merges) {
      spec.merges.emplace_back(m[0], m[1]);
      spec.tokens.push_back(std::string(m[0]) + m[1]);
    }
    spec.tokens.push_back("<|endoftext|>");
    spec.tokens.push_back("<|end|>");
    const int n = static_cast<int>(spec.tokens.size());
    spec.added = {{n - 2, true}, {n - 1, false}};
    return ptk::text::ByteLevelBpe(std::move(spec));
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ptk::fuzz::run(data, size, [](const std::string& text) {
    const auto& t = tokenizer();
    for (const bool special : {true, false}) {
      const auto ids = t.encode(text, special);
      if (t.decode(ids) != text) std::abort();
      ptk::text::TokenStream stream(t);
      std::string streamed;
      for (int id : ids) {
        const std::string out = stream.push(id);
        if (ptk::text::first_invalid_utf8(out) != out.size()) std::abort();
        streamed += out;
      }
      if (streamed + stream.finish() != text) std::abort();
    }
  });
}
