// SentencePiece models (tokenizer.model) through libsentencepiece (text/sentencepiece.cpp): a model that loads
// encodes a fixed text, and every id's bytes can be asked for.
#include "fuzz_main.hpp"
#include "ptk/text/tokenizer_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ptk::fuzz::run(data, size, [](const std::string& bytes) {
    const auto t = ptk::text::parse_sentencepiece(bytes, "tokenizer.model");
    const auto ids = t->encode("In the beginning \xF0\x9F\x8E\x89 42");
    t->decode(ids);
    for (int id = 0; id < t->vocab_size(); ++id) t->token_bytes(id, id == 0);
  });
}
