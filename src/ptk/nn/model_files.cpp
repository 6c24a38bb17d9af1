#include "ptk/nn/model_files.hpp"

#include <sys/stat.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ptk/core/quote.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/io/gguf.hpp"
#include "ptk/io/mapped_file.hpp"
#include "ptk/io/safetensors.hpp"
#include "ptk/nn/checkpoint.hpp"
#include "ptk/nn/gguf_export.hpp"
#include "ptk/nn/hf_config.hpp"
#include "ptk/nn/weight_convert.hpp"

namespace ptk::nn {

struct ModelFiles::Impl {
  ModelFormat format = ModelFormat::ptk;
  std::string path, description, note;
  DecoderConfig config;
  std::optional<int> bos, eos;
  std::vector<std::unique_ptr<io::MappedFile>> files;
  std::optional<io::Gguf> gguf;
  std::optional<Checkpoint> checkpoint;
  std::map<std::string, StoredTensor> tensors;  // by ptk's parameter name

  // Every parameter of the config from `find` (name -> the stored tensor or nullptr), checked for its shape.
  template <class Find>
  void bind(const Find& find) {
    for (const auto& [name, shape] : parameter_shapes(config)) {
      StoredTensor t = find(name);
      const std::vector<std::int64_t> expected = t.transposed ? std::vector<std::int64_t>(shape.rbegin(), shape.rend()) : shape;
      if (t.shape != expected)
        throw InputError(path + ": tensor " + quote(t.name) + " has shape " + to_string(Shape(t.shape)) +
                         ", but the config needs " + to_string(Shape(expected)) + " for " + name);
      tensors.emplace(name, std::move(t));
    }
  }
  void open_ptk();
  void open_hugging_face();
  void open_gguf();
};

namespace {

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool starts_with_gguf(const std::string& path) {
  io::require_regular_file(path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char magic[4] = {};
  const bool gguf = std::fread(magic, 1, 4, f) == 4 && std::string(magic, 4) == "GGUF";
  std::fclose(f);
  return gguf;
}

// A shard's name from model.safetensors.index.json: a plain file name in the directory, nothing that leaves it.
bool plain_file_name(const std::string& name) {
  if (name.empty() || name[0] == '.' || name.size() > 255) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) return false;
  return true;
}

// The shards model.safetensors.index.json names, each once, and which shard holds each tensor.
std::map<std::string, std::string> read_weight_map(const std::string& index) {
  const std::string text = io::read_regular_file(index, 64u << 20);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    const std::string what = one_line(e.what());
    throw InputError(index + ": not valid JSON (" + what + ")");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j.at("weight_map").is_object())
    throw InputError(index + ": weight_map is missing or not an object");
  std::map<std::string, std::string> map;
  for (const auto& [name, file] : j.at("weight_map").items()) {
    if (!file.is_string() || !plain_file_name(file.get<std::string>()))
      throw InputError(index + ": weight_map[" + quote(name) + "] is not a plain file name in the directory");
    map[name] = file.get<std::string>();
  }
  return map;
}

}  // namespace

void ModelFiles::Impl::open_ptk() {
  format = ModelFormat::ptk;
  checkpoint = load_checkpoint(path, /*with_training_state=*/false);
  config = checkpoint->config;
  description = "ptk checkpoint (" + to_string(config.arch) + ", step " + std::to_string(checkpoint->step) + ")";
  std::map<std::string, const std::vector<float>*> values;
  for (const auto& [name, v] : checkpoint->parameters) values[name] = &v;
  std::map<std::string, Shape> shapes;
  for (const auto& [name, shape] : parameter_shapes(config)) shapes[name] = shape;
  bind([&](const std::string& name) {
    const auto* v = values.at(name);  // (load_checkpoint checked every parameter's presence and shape)
    return StoredTensor{name, DType::f32, shapes.at(name),
                        {reinterpret_cast<const char*>(v->data()), v->size() * sizeof(float)}, false, 0};
  });
}

void ModelFiles::Impl::open_hugging_face() {
  format = ModelFormat::hugging_face;
  const std::string config_path = path + "/config.json";
  if (!exists(config_path)) throw InputError(path + ": a directory without config.json is not a Hugging Face model");
  const HfConfig hf = parse_hf_config(io::read_regular_file(config_path, 1u << 20), config_path);
  config = hf.config;
  note = hf.note;
  bos = hf.bos;
  eos = hf.eos;
  std::map<std::string, std::string> weight_map;
  std::set<std::string> shards;
  const std::string index = path + "/model.safetensors.index.json";
  if (exists(index)) {
    weight_map = read_weight_map(index);
    for (const auto& [name, file] : weight_map) shards.insert(file);
  } else if (exists(path + "/model.safetensors")) {
    shards.insert("model.safetensors");
  } else {
    throw InputError(path + ": no model.safetensors or model.safetensors.index.json (ptk reads safetensors weights, not "
                            "pytorch_model.bin)");
  }
  std::map<std::string, StoredTensor> stored;
  for (const auto& shard : shards) {
    files.push_back(std::make_unique<io::MappedFile>(path + "/" + shard));
    const io::MappedFile& f = *files.back();
    for (const auto& e : io::parse_safetensors_header(f.bytes(), f.path(), /*check_data_crc=*/false).tensors) {
      if (!weight_map.empty() && weight_map.count(e.name) && weight_map.at(e.name) != shard) continue;
      if (!stored.emplace(e.name, StoredTensor{e.name, e.dtype, e.shape, e.bytes, false, 0}).second)
        throw InputError(path + ": tensor " + quote(e.name) + " is in two shards");
    }
  }
  for (const auto& [name, file] : weight_map)
    if (!stored.count(name)) throw InputError(index + ": " + quote(name) + " is said to be in " + file + ", which lacks it");
  bind([&](const std::string& name) {
    const HfTensorName n = hf_tensor_name(hf, name);
    for (const auto& candidate : n.candidates) {
      const auto it = stored.find(candidate);
      if (it == stored.end()) continue;
      StoredTensor t = it->second;
      t.transposed = n.transposed;
      return t;
    }
    throw InputError(path + ": tensor " + quote(n.candidates.front()) + " is missing (" + hf.architecture + " needs it)");
  });
  description = "Hugging Face " + hf.architecture + " (" + std::to_string(shards.size()) + " safetensors " +
                (shards.size() == 1 ? "file" : "shards") + ")";
}

namespace {

// A GGUF metadata value that must be one integer (of any integer type) in [1, 2^31).
std::optional<int> gguf_int(const io::Gguf& g, const std::string& key, const std::string& path) {
  const io::GgufValue* v = g.find(key);
  if (!v) return std::nullopt;
  if (v->array || v->ints.size() != 1 || v->ints[0] < 0 || v->ints[0] > 0x7fffffff)
    throw InputError(path + ": " + key + " is not one integer ptk can hold");
  return static_cast<int>(v->ints[0]);
}
std::optional<float> gguf_float(const io::Gguf& g, const std::string& key, const std::string& path) {
  const io::GgufValue* v = g.find(key);
  if (!v) return std::nullopt;
  if (v->array || v->floats.size() != 1) throw InputError(path + ": " + key + " is not one number");
  return static_cast<float>(v->floats[0]);
}

}  // namespace

void ModelFiles::Impl::open_gguf() {
  format = ModelFormat::gguf;
  files.push_back(std::make_unique<io::MappedFile>(path));
  gguf = io::parse_gguf(files.back()->bytes(), path);
  const io::GgufValue* arch = gguf->find("general.architecture");
  if (!arch || arch->strings.size() != 1 || arch->array)
    throw InputError(path + ": general.architecture is missing or not a string");
  if (arch->strings[0] != "llama")
    throw InputError(path + ": general.architecture = " + quote(arch->strings[0]) + " is not supported (ptk reads llama)");
  const auto need = [&](const std::string& key) {
    const auto v = gguf_int(*gguf, key, path);
    if (!v || *v == 0) throw InputError(path + ": " + key + " is missing or zero");
    return *v;
  };
  config.arch = Arch::llama;
  config.n_layer = need("llama.block_count");
  config.n_embd = need("llama.embedding_length");
  config.ffn_hidden = need("llama.feed_forward_length");
  config.n_head = need("llama.attention.head_count");
  config.n_kv_head = gguf_int(*gguf, "llama.attention.head_count_kv", path).value_or(config.n_head);
  config.block_size = need("llama.context_length");
  config.rope_base = gguf_float(*gguf, "llama.rope.freq_base", path).value_or(10000.0f);
  const auto eps = gguf_float(*gguf, "llama.attention.layer_norm_rms_epsilon", path);
  if (!eps) throw InputError(path + ": llama.attention.layer_norm_rms_epsilon is missing");
  config.norm_eps = *eps;
  const auto rope_dims = gguf_int(*gguf, "llama.rope.dimension_count", path);
  if (rope_dims && *rope_dims != config.n_embd / std::max(config.n_head, 1))
    throw InputError(path + ": llama.rope.dimension_count = " + std::to_string(*rope_dims) +
                     " is not supported (ptk rotates the whole head, " + std::to_string(config.n_embd / std::max(config.n_head, 1)) + ")");
  const io::GgufValue* scaling = gguf->find("llama.rope.scaling.type");
  if (scaling && !(scaling->strings.size() == 1 && scaling->strings[0] == "none"))
    throw InputError(path + ": llama.rope.scaling.type is not supported (ptk's rope is unscaled)");
  const io::GgufTensorInfo* embed = gguf->tensor("token_embd.weight");
  if (!embed || embed->shape.size() != 2 || embed->shape[0] <= 0 || embed->shape[0] > 0x7fffffff)
    throw InputError(path + ": token_embd.weight is missing or not a matrix");
  config.vocab_size = static_cast<int>(embed->shape[0]);
  try {
    check_config(config);
  } catch (const Error& e) {
    throw InputError(path + ": " + e.what());
  }
  bos = gguf_int(*gguf, "tokenizer.ggml.bos_token_id", path);
  eos = gguf_int(*gguf, "tokenizer.ggml.eos_token_id", path);
  bind([&](const std::string& name) {
    std::string g = gguf_tensor_name(name);
    if (name == "lm_head.weight" && !gguf->tensor(g)) g = "token_embd.weight";  // a tied head
    const io::GgufTensorInfo* t = gguf->tensor(g);
    if (!t) throw InputError(path + ": tensor " + quote(g) + " is missing (llama needs it)");
    return StoredTensor{g, t->dtype, t->shape, files.back()->bytes().substr(t->offset, t->bytes), false,
                        gguf_rope_heads(config, name)};
  });
  description = "GGUF v" + std::to_string(gguf->version) + " llama (" + std::to_string(gguf->tensors.size()) + " tensors)";
}

ModelFiles::ModelFiles(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  if (is_directory(path)) impl_->open_hugging_face();
  else if (starts_with_gguf(path)) impl_->open_gguf();
  else impl_->open_ptk();
}

ModelFiles::~ModelFiles() = default;

ModelFormat ModelFiles::format() const { return impl_->format; }
const std::string& ModelFiles::path() const { return impl_->path; }
const DecoderConfig& ModelFiles::config() const { return impl_->config; }
std::string ModelFiles::description() const { return impl_->description; }
const std::string& ModelFiles::note() const { return impl_->note; }
const Vocab* ModelFiles::vocab() const { return impl_->checkpoint ? &impl_->checkpoint->vocab : nullptr; }
std::string ModelFiles::tokenizer_directory() const { return impl_->format == ModelFormat::hugging_face ? impl_->path : ""; }
std::optional<int> ModelFiles::bos() const { return impl_->bos; }
std::optional<int> ModelFiles::eos() const { return impl_->eos; }
const io::Gguf* ModelFiles::gguf() const { return impl_->gguf ? &*impl_->gguf : nullptr; }

DType ModelFiles::stored_dtype() const {
  const char* first = impl_->config.arch == Arch::llama ? "model.layers.0.self_attn.q_proj.weight" : "h.0.attn.c_attn.weight";
  return impl_->tensors.at(first).dtype;
}

std::uint64_t ModelFiles::stored_bytes() const {
  std::set<const char*> seen;  // a tied head's tensor once
  std::uint64_t n = 0;
  for (const auto& [name, t] : impl_->tensors)
    if (seen.insert(t.bytes.data()).second) n += t.bytes.size();
  return n;
}

const StoredTensor& ModelFiles::tensor(const std::string& name) const {
  const auto it = impl_->tensors.find(name);
  if (it == impl_->tensors.end()) throw InputError(impl_->path + ": the model has no parameter " + quote(name));
  return it->second;
}

Decoder ModelFiles::load(ag::Device device, DType dtype) const {
  return Decoder(impl_->config, device, [&](const Decoder::ParameterInfo& p) {
    const StoredTensor& t = impl_->tensors.at(p.name);
    ag::Var var = make_parameter(t, p.shape, p.linear_weight ? dtype : DType::f32, device);
    for (const auto& f : impl_->files)
      if (f->release(t.bytes)) break;  // read once: the peak holds the model, not also its files
    return var;
  });
}

}  // namespace ptk::nn
