// A GGUF file's tokenizer (text/gguf_vocab.hpp: tokenizer.ggml.*, SentencePiece rebuilt as a ModelProto or a
// byte-level BPE): a header that parses and a tokenizer that builds encodes a fixed text, which decodes to valid
// UTF-8, and every id's bytes can be asked for.
#include "fuzz_main.hpp"
#include "ptk/io/gguf.hpp"
#include "ptk/text/gguf_vocab.hpp"
#include "ptk/text/utf8.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ptk::fuzz::run(data, size, [](const std::string& bytes) {
    const auto t = ptk::text::tokenizer_from_gguf(ptk::io::parse_gguf(bytes, "fuzz.gguf"), "fuzz.gguf");
    const auto ids = t->encode("In the beginning \xF0\x9F\x8E\x89 42  the<|endoftext|>");
    const std::string text = t->decode(ids);
    if (ptk::text::first_invalid_utf8(text) != text.size()) std::abort();
    for (int id = 0; id < t->vocab_size(); ++id) t->token_bytes(id, id == 0);
  });
}
