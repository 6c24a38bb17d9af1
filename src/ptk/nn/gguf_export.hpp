#pragma once
// A ptk Llama as llama.cpp reads it from GGUF: the `llama` architecture's metadata and tensor names, with the
// weights in one dtype. GGUF's names and llama.cpp's rope: the q and k projections' rows are permuted from Hugging
// Face's rotate-half order (ptk's rope pairs (i, i + D/2)) to the interleaved pairs (2i, 2i + 1) llama.cpp rotates,
// as its own convert_hf_to_gguf.py does; everything else is renamed as is.
//   model.embed_tokens.weight -> token_embd.weight    model.norm.weight -> output_norm.weight
//   lm_head.weight -> output.weight                   model.layers.N.<x> -> blk.N.<attn_norm | attn_q | attn_k |
//                                                     attn_v | attn_output | ffn_norm | ffn_gate | ffn_up | ffn_down>
// Norm weights (1-D) stay F32, as llama.cpp's converter keeps them; the matrices take `dtype`.
#include <cstdint>
#include <functional>
#include <string>

#include "ptk/core/dtype_name.hpp"
#include "ptk/io/gguf.hpp"
#include "ptk/nn/model_files.hpp"

namespace ptk::nn {

// GGUF's name for ptk's llama parameter `name` (the table above); InputError for a name it does not have.
std::string gguf_tensor_name(const std::string& name);

// The heads whose rope pairs GGUF interleaves in ptk's parameter `name`: n_head for the q projection, the kv heads
// for the k projection, 0 for any other parameter.
int gguf_rope_heads(const DecoderConfig& config, const std::string& name);

// general.* and llama.* keys of the model (context length = block_size; file_type from dtype).
io::GgufMetadata gguf_llama_metadata(const DecoderConfig& config, DType dtype, const std::string& name);

// Writes the model `files` holds as a GGUF file at `path` (atomically: the old file or the new one), its matrices
// converted to dtype one tensor at a time (nn/weight_convert.hpp: refused with InputError where dtype cannot hold a
// value or a row is not whole blocks), with `tokenizer_metadata` after the model's keys. progress(done, total) is
// called after each tensor with the bytes written so far. Returns the file's size. A gpt2 model is an InputError.
std::uint64_t write_gguf_llama(const std::string& path, const ModelFiles& files, DType dtype, const std::string& name,
                               const io::GgufMetadata& tokenizer_metadata,
                               const std::function<void(std::uint64_t, std::uint64_t)>& progress);

}  // namespace ptk::nn
