// Hugging Face's tokenizer.json (text/bpe_files.cpp). A file that loads encodes a fixed text, whose ids decode back
// to it (byte-level BPE loses nothing).
#include "fuzz_main.hpp"
#include "ptk/text/tokenizer_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ptk::fuzz::run(data, size, [](const std::string& bytes) {
    const ptk::text::ByteLevelBpe t(ptk::text::parse_tokenizer_json(bytes, "tokenizer.json"));
    const std::string text = "Hello, world's 42 \xF0\x9F\x8E\x89  x";
    if (t.decode(t.encode(text, /*parse_special=*/false)) != text) std::abort();
  });
}
