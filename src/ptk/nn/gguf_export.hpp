#pragma once
// A ptk Llama as llama.cpp reads it from GGUF: the `llama` architecture's metadata and tensor names, with the
// weights in one dtype. GGUF's names and llama.cpp's rope: the q and k projections' rows are permuted from Hugging
// Face's rotate-half order (ptk's rope pairs (i, i + D/2)) to the interleaved pairs (2i, 2i + 1) llama.cpp rotates,
// as its own convert_hf_to_gguf.py does; everything else is renamed as is.
//   model.embed_tokens.weight -> token_embd.weight    model.norm.weight -> output_norm.weight
//   lm_head.weight -> output.weight                   model.layers.N.<x> -> blk.N.<attn_norm | attn_q | attn_k |
//                                                     attn_v | attn_output | ffn_norm | ffn_gate | ffn_up | ffn_down>
// Norm weights (1-D) stay F32, as llama.cpp's converter keeps them; the matrices take `dtype`.
#include <string>
#include <vector>

#include "ptk/core/dtype_name.hpp"
#include "ptk/io/gguf.hpp"
#include "ptk/nn/checkpoint.hpp"

namespace ptk::nn {

struct GgufTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype = DType::f32;
  std::string bytes;
};

// GGUF's name for ptk's llama parameter `name` (the table above); InputError for a name it does not have.
std::string gguf_tensor_name(const std::string& name);

// general.* and llama.* keys of the model (context length = block_size; file_type from dtype).
io::GgufMetadata gguf_llama_metadata(const DecoderConfig& config, DType dtype, const std::string& name);

// The checkpoint's parameters under GGUF's names, converted to dtype (refused with InputError: a gpt2 model, a
// weight that q8_0/q4_0 cannot hold (NaN, inf, past the f16 scale), rows not in whole blocks of 32).
std::vector<GgufTensor> gguf_llama_tensors(const Checkpoint& checkpoint, DType dtype);

}  // namespace ptk::nn
