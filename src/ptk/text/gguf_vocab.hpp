#pragma once
// A tokenizer as GGUF's tokenizer.ggml.* metadata (what llama.cpp builds its tokenizer from): the model
// ("llama" for SentencePiece, "gpt2" for byte-level BPE), tokens, scores, token types, merges, and the special ids.
#include "ptk/io/gguf.hpp"
#include "ptk/text/tokenizer.hpp"

namespace ptk::text {

// add_bos: whether llama.cpp puts BOS in front of a prompt (tokenizer.ggml.add_bos_token); a model trained without
// one (ptk train --tokenizer) must say false.
io::GgufMetadata gguf_tokenizer_metadata(const Tokenizer& tokenizer, bool add_bos);

}  // namespace ptk::text
