#pragma once
// A Llama as a Hugging Face directory, the form transformers' LlamaForCausalLM.from_pretrained and ptk's own reader
// (nn/model_files.hpp) load:
//   config.json        LlamaForCausalLM's fields (max_position_embeddings: the context; an untied lm_head, since
//                      ptk's Llama has its own), torch_dtype the matrices' type;
//   model.safetensors  every parameter under its Hugging Face name (ptk's llama names are Hugging Face's, and so is
//                      its rope order: nothing is permuted), the matrices as dtype (f32, bf16, f16), the norms f32;
//   the tokenizer's files (text::Tokenizer::hugging_face_files) and tokenizer_config.json (its class, BOS, EOS and
//                      whether BOS is added), which ptk's tokenizer loader and transformers' AutoTokenizer read.
// The directory is written under a temporary name beside it (DST.partial-PID) and renamed to DST at the end: a
// failure leaves no directory. DST must not exist.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptk/core/dtype_name.hpp"
#include "ptk/nn/model_files.hpp"

namespace ptk::nn {

// What the directory says of the model's tokenizer.
struct HfTokenizer {
  std::vector<std::pair<std::string, std::string>> files;  // (name, bytes): tokenizer.model, or vocab.json, merges.txt
  std::string class_name;                                   // "LlamaTokenizer", "GPT2Tokenizer"
  std::optional<int> bos, eos;
  std::optional<std::string> bos_text, eos_text;            // the tokens' spelling in the vocabulary
  bool add_bos = false;
};

// config.json of a LlamaForCausalLM with the decoder's shape.
std::string hf_llama_config_json(const DecoderConfig& config, DType dtype, std::optional<int> bos, std::optional<int> eos);

// Writes the model `files` holds as a Hugging Face directory at `dir`, its matrices converted to dtype (f32, bf16
// or f16; nn/weight_convert.hpp's refusals) one tensor at a time, streamed into model.safetensors.
// progress(done, total) after each tensor, in bytes. Returns the bytes written. InputError for a gpt2 model or
// another dtype; FileError when dir exists or cannot be written.
std::uint64_t write_hf_llama(const std::string& dir, const ModelFiles& files, DType dtype, const HfTokenizer& tokenizer,
                             const std::function<void(std::uint64_t, std::uint64_t)>& progress);

}  // namespace ptk::nn
