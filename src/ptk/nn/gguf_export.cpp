#include "ptk/nn/gguf_export.hpp"

#include <cmath>
#include <cstring>
#include <map>

#include "ptk/core/dtype.hpp"
#include "ptk/core/error.hpp"

namespace ptk::nn {

namespace {

const std::map<std::string, std::string> kLayerNames = {
    {"input_layernorm.weight", "attn_norm.weight"},   {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},     {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},      {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"}};

// Rows [heads * D, K] from rotate-half order to interleaved pairs: row h·D + 2i + j <- row h·D + j·D/2 + i.
std::vector<float> interleave_rope_rows(const std::vector<float>& w, std::int64_t heads, std::int64_t D, std::int64_t K) {
  std::vector<float> out(w.size());
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < D / 2; ++i)
      for (std::int64_t j = 0; j < 2; ++j)
        std::memcpy(&out[static_cast<std::size_t>((h * D + 2 * i + j) * K)],
                    &w[static_cast<std::size_t>((h * D + j * (D / 2) + i) * K)], static_cast<std::size_t>(K) * sizeof(float));
  return out;
}

template <class Block>
std::string quantize(const std::string& name, const std::vector<float>& x, std::int64_t row) {
  require(row % quant_block == 0, "gguf: ", name, " has rows of ", row, " values, not whole blocks of ", quant_block,
          " for ", dtype_name(Element<Block>::dtype));
  std::string out(x.size() / quant_block * sizeof(Block), '\0');
  for (std::size_t b = 0; b < x.size() / quant_block; ++b) {
    for (int i = 0; i < quant_block; ++i) {
      const float v = x[b * quant_block + i];
      require(std::isfinite(v) && std::fabs(v) <= quant_max_abs<Block>(), "gguf: ", name, " holds ", v, " at ",
              b * quant_block + i, ", which ", dtype_name(Element<Block>::dtype), " cannot store");
    }
    const Block q = quantize_block<Block>(&x[b * quant_block]);
    std::memcpy(&out[b * sizeof(Block)], &q, sizeof(Block));
  }
  return out;
}

std::string convert(const std::string& name, const std::vector<float>& x, std::int64_t row, DType dtype) {
  std::string out;
  switch (dtype) {
    case DType::f32:
      out.assign(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
      return out;
    case DType::f16:
    case DType::bf16:
      out.resize(x.size() * 2);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const std::uint16_t bits = dtype == DType::f16 ? to_f16(x[i]).bits : to_bf16(x[i]).bits;
        std::memcpy(&out[2 * i], &bits, 2);
      }
      return out;
    case DType::q8_0: return quantize<q8_0>(name, x, row);
    case DType::q4_0: return quantize<q4_0>(name, x, row);
  }
  return out;
}

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

std::vector<GgufTensor> gguf_llama_tensors(const Checkpoint& checkpoint, DType dtype) {
  const DecoderConfig& c = checkpoint.config;
  require(c.arch == Arch::llama, "gguf: only a llama model can be written as GGUF (this one is ", to_string(c.arch), ")");
  const std::int64_t D = c.n_embd / c.n_head;
  std::map<std::string, Shape> shapes;
  for (const auto& [name, shape] : parameter_shapes(c)) shapes[name] = shape;
  std::vector<GgufTensor> out;
  for (const auto& [name, values] : checkpoint.parameters) {
    const Shape& shape = shapes.at(name);
    const bool q = name.find("q_proj") != std::string::npos, k = name.find("k_proj") != std::string::npos;
    const std::vector<float> w = q || k ? interleave_rope_rows(values, q ? c.n_head : kv_heads(c), D, shape[1]) : values;
    const DType t = shape.size() == 1 ? DType::f32 : dtype;
    out.push_back({gguf_tensor_name(name), shape, t, convert(name, w, shape.back(), t)});
  }
  return out;
}

}  // namespace ptk::nn
