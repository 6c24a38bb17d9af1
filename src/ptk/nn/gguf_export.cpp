#include "ptk/nn/gguf_export.hpp"

#include <cmath>
#include <cstring>
#include <map>

#include "ptk/core/dtype.hpp"
#include "ptk/core/error.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/nn/weight_convert.hpp"

namespace ptk::nn {

namespace {

constexpr std::size_t kAlignment = 32;  // GGUF's default (serialize_gguf_header's)

const std::map<std::string, std::string> kLayerNames = {
    {"input_layernorm.weight", "attn_norm.weight"},   {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},     {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},      {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"}};

std::uint32_t file_type(DType dtype) {  // llama.cpp's LLAMA_FTYPE_ALL_F32, MOSTLY_F16, MOSTLY_Q4_0, MOSTLY_Q8_0, MOSTLY_BF16
  switch (dtype) {
    case DType::f32: return 0;
    case DType::f16: return 1;
    case DType::q4_0: return 2;
    case DType::q8_0: return 7;
    case DType::bf16: return 32;
  }
  return 0;
}

}  // namespace

std::string gguf_tensor_name(const std::string& name) {
  if (name == "model.embed_tokens.weight") return "token_embd.weight";
  if (name == "model.norm.weight") return "output_norm.weight";
  if (name == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  const auto dot = name.find('.', prefix.size());
  require(name.rfind(prefix, 0) == 0 && dot != std::string::npos, "gguf: no GGUF name for parameter ", name);
  const auto it = kLayerNames.find(name.substr(dot + 1));
  require(it != kLayerNames.end(), "gguf: no GGUF name for parameter ", name);
  return "blk." + name.substr(prefix.size(), dot - prefix.size()) + "." + it->second;
}

int gguf_rope_heads(const DecoderConfig& c, const std::string& name) {
  if (name.find("self_attn.q_proj.") != std::string::npos) return c.n_head;
  if (name.find("self_attn.k_proj.") != std::string::npos) return kv_heads(c);
  return 0;
}

io::GgufMetadata gguf_llama_metadata(const DecoderConfig& c, DType dtype, const std::string& name) {
  using io::GgufValue;
  require(c.arch == Arch::llama, "gguf: only a llama model can be written as GGUF (this one is ", to_string(c.arch), ")");
  const auto u32 = [](std::int64_t v) { return GgufValue::of_u32(static_cast<std::uint32_t>(v)); };
  return {{"general.architecture", GgufValue::of_string("llama")},
          {"general.name", GgufValue::of_string(name)},
          {"general.file_type", u32(file_type(dtype))},
          {"llama.context_length", u32(c.block_size)},
          {"llama.embedding_length", u32(c.n_embd)},
          {"llama.block_count", u32(c.n_layer)},
          {"llama.feed_forward_length", u32(mlp_hidden(c))},
          {"llama.attention.head_count", u32(c.n_head)},
          {"llama.attention.head_count_kv", u32(kv_heads(c))},
          {"llama.rope.dimension_count", u32(c.n_embd / c.n_head)},
          {"llama.rope.freq_base", GgufValue::of_f32(c.rope_base)},
          {"llama.attention.layer_norm_rms_epsilon", GgufValue::of_f32(c.norm_eps)},
          {"llama.vocab_size", u32(c.vocab_size)}};
}

std::uint64_t write_gguf_llama(const std::string& path, const ModelFiles& files, DType dtype, const std::string& name,
                               const io::GgufMetadata& tokenizer_metadata,
                               const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  const DecoderConfig& c = files.config();
  if (c.arch != Arch::llama)
    throw InputError(files.path() + " is a " + to_string(c.arch) + " model; ptk writes llama models as GGUF so far");
  io::GgufMetadata metadata = gguf_llama_metadata(c, dtype, name);
  for (const auto& kv : tokenizer_metadata) metadata.push_back(kv);
  std::vector<io::GgufTensorSpec> specs;
  std::uint64_t total = 0;
  for (const auto& [pname, shape] : parameter_shapes(c)) {
    specs.push_back({gguf_tensor_name(pname), shape, shape.size() == 1 ? DType::f32 : dtype});
    total += io::gguf_tensor_bytes(shape, specs.back().dtype);
  }
  io::AtomicFileWriter out(path);
  out.write(io::serialize_gguf_header(metadata, specs));
  const std::string padding(kAlignment, '\0');
  std::size_t i = 0;
  std::uint64_t done = 0;
  for (const auto& [pname, shape] : parameter_shapes(c)) {
    const std::vector<char> bytes = convert_tensor(files.tensor(pname), shape, specs[i++].dtype, gguf_rope_heads(c, pname));
    out.write({bytes.data(), bytes.size()});
    out.write(std::string_view(padding).substr(0, (kAlignment - bytes.size() % kAlignment) % kAlignment));
    done += bytes.size();
    if (progress) progress(done, total);
  }
  out.commit();
  return out.written();
}

}  // namespace ptk::nn
