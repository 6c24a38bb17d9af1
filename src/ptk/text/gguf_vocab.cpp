#include "ptk/text/gguf_vocab.hpp"

namespace ptk::text {

io::GgufMetadata gguf_tokenizer_metadata(const Tokenizer& tokenizer, bool add_bos, int pad_to) {
  using io::GgufValue;
  VocabularyExport v = tokenizer.vocabulary();
  // A model's rows past the tokenizer's ids (a vocabulary padded to a round size): tokens of their own, never
  // produced by the tokenizer, of GGUF's type 5 (unused).
  for (int id = static_cast<int>(v.tokens.size()); id < pad_to; ++id) {
    v.tokens.push_back("[PAD" + std::to_string(id) + "]");
    if (!v.scores.empty()) v.scores.push_back(0.0f);
    v.types.push_back(kUnusedTokenType);
  }
  io::GgufMetadata kv = {{"tokenizer.ggml.model", GgufValue::of_string(v.model)}};
  // GPT-2's pre-tokenizer by name (llama.cpp picks its regex from it); SentencePiece has none.
  if (v.model == "gpt2") kv.emplace_back("tokenizer.ggml.pre", GgufValue::of_string("gpt2"));
  kv.emplace_back("tokenizer.ggml.tokens", GgufValue::of_strings(std::move(v.tokens)));
  if (!v.scores.empty()) kv.emplace_back("tokenizer.ggml.scores", GgufValue::of_f32s(v.scores));
  kv.emplace_back("tokenizer.ggml.token_type", GgufValue::of_i32s(v.types));
  if (!v.merges.empty()) kv.emplace_back("tokenizer.ggml.merges", GgufValue::of_strings(std::move(v.merges)));
  const SpecialIds& s = tokenizer.special_ids();
  const auto id = [](int x) { return GgufValue::of_u32(static_cast<std::uint32_t>(x)); };
  if (s.bos) kv.emplace_back("tokenizer.ggml.bos_token_id", id(*s.bos));
  if (s.eos) kv.emplace_back("tokenizer.ggml.eos_token_id", id(*s.eos));
  if (v.unknown) kv.emplace_back("tokenizer.ggml.unknown_token_id", id(*v.unknown));
  kv.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::of_bool(add_bos));
  kv.emplace_back("tokenizer.ggml.add_eos_token", GgufValue::of_bool(false));
  return kv;
}

}  // namespace ptk::text
