#pragma once
// A tokenizer as GGUF's tokenizer.ggml.* metadata (what llama.cpp builds its tokenizer from): the model
// ("llama" for SentencePiece, "gpt2" for byte-level BPE), tokens, scores, token types, merges, and the special ids.
#include "ptk/io/gguf.hpp"
#include "ptk/text/tokenizer.hpp"

namespace ptk::text {

// GGUF's token type of a token no text produces.
constexpr std::int32_t kUnusedTokenType = 5;

// add_bos: whether llama.cpp puts BOS in front of a prompt (tokenizer.ggml.add_bos_token); a model trained without
// one (ptk train --tokenizer) must say false. pad_to: the model's vocabulary size, when it has more rows than the
// tokenizer has ids (llama.cpp wants one token per row): "[PAD<id>]" tokens of kUnusedTokenType fill the rest.
io::GgufMetadata gguf_tokenizer_metadata(const Tokenizer& tokenizer, bool add_bos, int pad_to = 0);

}  // namespace ptk::text
