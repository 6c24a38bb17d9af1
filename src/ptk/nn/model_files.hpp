#pragma once
// A model on disk in any of the three forms ptk reads, opened the same way and read into a Decoder tensor by tensor
// from the mapped files (nn/weight_convert.hpp):
//   a ptk checkpoint: NAME.safetensors with ptk's metadata (nn/checkpoint.hpp);
//   a Hugging Face directory: config.json (nn/hf_config.hpp) and model.safetensors, or the shards that
//     model.safetensors.index.json's weight_map names (plain file names in the directory); F32, BF16, F16 tensors;
//   a GGUF file of the llama architecture (llama.cpp's keys and names, nn/gguf_export.hpp): F32, F16, BF16, Q8_0
//     and Q4_0 tensors; output.weight absent means a head tied to token_embd.weight.
// Opening reads the headers and checks every parameter against the config (present, of its shape) before a weight
// is read; load() then converts each weight to the run's type on the host, one at a time, or copies it as it lies
// when it is stored in that type. The peak holds the model in the run's types plus one tensor: never a full f32
// copy of a 16-bit or quantized model.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ptk/nn/data.hpp"
#include "ptk/nn/decoder.hpp"
#include "ptk/nn/weight_convert.hpp"

namespace ptk::io {
struct Gguf;
}

namespace ptk::nn {

enum class ModelFormat { ptk, hugging_face, gguf };

class ModelFiles {
 public:
  // A directory is a Hugging Face model; a file starting with "GGUF" is GGUF; any other file is a ptk checkpoint.
  // Refusals are one line: InputError for what ptk does not support (naming the field, tensor or value), IoError
  // (and its children) for files that cannot be read or break their format.
  explicit ModelFiles(const std::string& path);
  ~ModelFiles();
  ModelFiles(const ModelFiles&) = delete;
  ModelFiles& operator=(const ModelFiles&) = delete;

  ModelFormat format() const;
  const std::string& path() const;
  const DecoderConfig& config() const;
  // "Hugging Face LlamaForCausalLM (2 safetensors shards)", "GGUF v3 llama", "ptk checkpoint (step 300)".
  std::string description() const;
  // A limit ptk applied that the user should know (HfConfig::note), or "".
  const std::string& note() const;
  // The linear weights' type as stored (the first layer's attention weight's).
  DType stored_dtype() const;
  // The bytes of every parameter as stored.
  std::uint64_t stored_bytes() const;
  // A ptk checkpoint's vocabulary (bytes, or a tokenizer's fingerprint); nullptr for the other forms, whose
  // tokenizer is the directory's or the one --tokenizer names.
  const Vocab* vocab() const;
  // The directory for a Hugging Face model (its tokenizer files), else "".
  std::string tokenizer_directory() const;
  // config.json's bos_token_id and eos_token_id (Hugging Face), GGUF's tokenizer.ggml.bos/eos_token_id.
  std::optional<int> bos() const;
  std::optional<int> eos() const;
  // The GGUF header (its tokenizer metadata), or nullptr for the other forms.
  const io::Gguf* gguf() const;

  // Where ptk's parameter `name` lies (nn/weight_convert.hpp), for a writer (ptk convert).
  const StoredTensor& tensor(const std::string& name) const;

  // A decoder on `device` with its linear weights (and an untied head) stored as dtype, the rest f32.
  Decoder load(ag::Device device, DType dtype) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptk::nn
