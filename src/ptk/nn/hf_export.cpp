#include "ptk/nn/hf_export.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ptk/core/error.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/io/safetensors.hpp"
#include "ptk/nn/weight_convert.hpp"

namespace ptk::nn {

namespace {

const char* torch_dtype(DType dtype) {
  return dtype == DType::bf16 ? "bfloat16" : dtype == DType::f16 ? "float16" : "float32";
}

std::string tokenizer_config_json(const HfTokenizer& t) {
  nlohmann::json j = {{"tokenizer_class", t.class_name}, {"add_bos_token", t.add_bos}, {"add_eos_token", false}};
  if (t.bos_text) j["bos_token"] = *t.bos_text;
  if (t.eos_text) j["eos_token"] = *t.eos_text;
  return j.dump(2) + "\n";
}

// A directory written under a temporary name and renamed into place by commit(); removed, with what it holds,
// when destroyed before.
class StagedDirectory {
 public:
  explicit StagedDirectory(const std::string& dir) : dir_(dir), temp_(dir + ".partial-" + std::to_string(::getpid())) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0) throw io::FileError(dir + ": exists (ptk convert writes a new directory)");
    std::error_code ec;
    std::filesystem::remove_all(temp_, ec);  // a leftover of this pid's earlier, killed run
    if (::mkdir(temp_.c_str(), 0755) != 0) throw io::FileError(temp_ + ": cannot create it (" + std::strerror(errno) + ")");
  }
  ~StagedDirectory() {
    if (committed_) return;
    std::error_code ec;
    std::filesystem::remove_all(temp_, ec);
  }
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  std::string path(const std::string& name) const { return temp_ + "/" + name; }
  void commit() {
    if (std::rename(temp_.c_str(), dir_.c_str()) != 0)
      throw io::FileError(dir_ + ": cannot rename " + temp_ + " to it (" + std::strerror(errno) + ")");
    committed_ = true;
  }

 private:
  std::string dir_, temp_;
  bool committed_ = false;
};

}  // namespace

std::string hf_llama_config_json(const DecoderConfig& c, DType dtype, std::optional<int> bos, std::optional<int> eos) {
  require(c.arch == Arch::llama, "hf: only a llama model is written as LlamaForCausalLM (this one is ", to_string(c.arch), ")");
  nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}},
                      {"model_type", "llama"},
                      {"hidden_size", c.n_embd},
                      {"intermediate_size", mlp_hidden(c)},
                      {"num_hidden_layers", c.n_layer},
                      {"num_attention_heads", c.n_head},
                      {"num_key_value_heads", kv_heads(c)},
                      {"head_dim", c.n_embd / c.n_head},
                      {"max_position_embeddings", c.block_size},
                      {"rms_norm_eps", c.norm_eps},
                      {"rope_theta", c.rope_base},
                      {"vocab_size", c.vocab_size},
                      {"hidden_act", "silu"},
                      {"attention_bias", false},
                      {"mlp_bias", false},
                      {"tie_word_embeddings", false},
                      {"torch_dtype", torch_dtype(dtype)}};
  if (bos) j["bos_token_id"] = *bos;
  if (eos) j["eos_token_id"] = *eos;
  return j.dump(2) + "\n";
}

std::uint64_t write_hf_llama(const std::string& dir, const ModelFiles& files, DType dtype, const HfTokenizer& tokenizer,
                             const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  const DecoderConfig& c = files.config();
  if (c.arch != Arch::llama)
    throw InputError(files.path() + " is a " + to_string(c.arch) + " model; ptk writes llama models as Hugging Face "
                     "directories so far");
  if (dtype != DType::f32 && dtype != DType::bf16 && dtype != DType::f16)
    throw InputError(std::string("a Hugging Face directory holds f32, bf16 or f16 weights, not ") + dtype_name(dtype));
  std::vector<io::SafetensorsSpec> specs;
  std::uint64_t total = 0;
  for (const auto& [name, shape] : parameter_shapes(c)) {
    specs.push_back({name, shape.size() == 1 ? DType::f32 : dtype, shape});
    total += stored_bytes(shape, specs.back().dtype);
  }
  StagedDirectory out(dir);
  io::write_file_atomically(out.path("config.json"), hf_llama_config_json(c, dtype, tokenizer.bos, tokenizer.eos));
  for (const auto& [name, bytes] : tokenizer.files) io::write_file_atomically(out.path(name), bytes);
  io::write_file_atomically(out.path("tokenizer_config.json"), tokenizer_config_json(tokenizer));
  io::AtomicFileWriter weights(out.path("model.safetensors"));
  weights.write(io::serialize_safetensors_header(specs, {{"format", "pt"}}));
  std::uint64_t done = 0;
  std::size_t i = 0;
  for (const auto& [name, shape] : parameter_shapes(c)) {
    const std::vector<char> bytes = convert_tensor(files.tensor(name), shape, specs[i++].dtype);
    weights.write({bytes.data(), bytes.size()});
    done += bytes.size();
    if (progress) progress(done, total);
  }
  weights.commit();
  const std::uint64_t written = weights.written();
  out.commit();
  return written;
}

}  // namespace ptk::nn
