#pragma once
// A tokenizer as GGUF's tokenizer.ggml.* metadata (what llama.cpp builds its tokenizer from): the model
// ("llama" for SentencePiece, "gpt2" for byte-level BPE), tokens, scores, token types, merges, and the special ids;
// and back: the tokenizer a GGUF file describes, so that a GGUF model runs without a tokenizer file beside it.
#include <memory>
#include <string>

#include "ptk/io/gguf.hpp"
#include "ptk/text/tokenizer.hpp"

namespace ptk::text {

// GGUF's token type of a token no text produces.
constexpr std::int32_t kUnusedTokenType = 5;

// add_bos: whether llama.cpp puts BOS in front of a prompt (tokenizer.ggml.add_bos_token); a model trained without
// one (ptk train --tokenizer) must say false. pad_to: the model's vocabulary size, when it has more rows than the
// tokenizer has ids (llama.cpp wants one token per row): "[PAD<id>]" tokens of kUnusedTokenType fill the rest.
// A byte-level BPE whose pre-tokenization is not GPT-2's is refused (InputError): GGUF names a pre-tokenizer, and
// ptk writes only "gpt2".
io::GgufMetadata gguf_tokenizer_metadata(const Tokenizer& tokenizer, bool add_bos, int pad_to = 0);

// The tokenizer of a GGUF file's metadata, as llama.cpp builds it (`name`: the file, for messages):
//   "llama": a SentencePiece BPE model rebuilt from the tokens, scores and types, run by libsentencepiece. GGUF
//            keeps no normalization rules, so none are applied (llama.cpp applies none): text is kept as it is,
//            whitespace runs too, and a space goes in front when tokenizer.ggml.add_space_prefix says so (default
//            true). Byte fallback where the vocabulary has byte tokens (type 6).
//   "gpt2":  byte-level BPE from the tokens and merges, with GPT-2's pre-tokenization (tokenizer.ggml.pre "gpt2" or
//            absent; another is refused, naming it); control tokens are special tokens, user-defined ones added.
// BOS, EOS and add_bos (default: BOS added where there is one, for "llama") as the keys say. The fingerprint is the
// CRC-32 of the tokenizer's metadata as GGUF stores it. Throws IoError naming the key for what is missing or
// malformed, InputError for another tokenizer model.
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const io::Gguf& gguf, const std::string& name);

}  // namespace ptk::text
