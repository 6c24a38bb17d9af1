// GPT-2's vocab.json and merges.txt (text/bpe_files.cpp): the input is the two files joined by one NUL byte.
#include "fuzz_main.hpp"
#include "ptk/text/tokenizer_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ptk::fuzz::run(data, size, [](const std::string& bytes) {
    const auto nul = bytes.find('\0');
    const std::string vocab = bytes.substr(0, nul), merges = nul == std::string::npos ? "" : bytes.substr(nul + 1);
    const ptk::text::ByteLevelBpe t(ptk::text::parse_gpt2_files(vocab, merges, "vocab.json", "merges.txt"));
    const std::string text = "the quick brown \xC3\xA9t\xC3\xA9 <|endoftext|>";
    if (t.decode(t.encode(text, /*parse_special=*/false)) != text) std::abort();
  });
}
