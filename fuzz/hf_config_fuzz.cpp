// Hugging Face config.json (nn/hf_config.hpp). A config that parses must be one the decoder accepts
// (check_config), with a positive context and the head dim a whole number.
#include "fuzz_main.hpp"
#include "ptk/nn/hf_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return ptk::fuzz::run(data, size, [](const std::string& bytes) {
    const auto hf = ptk::nn::parse_hf_config(bytes, "config.json");
    ptk::nn::check_config(hf.config);
    if (hf.config.block_size <= 0 || hf.config.n_embd % hf.config.n_head != 0) std::abort();
    for (const char* name : {"lm_head.weight", "h.0.attn.c_attn.weight", "model.layers.0.mlp.up_proj.weight"})
      if (ptk::nn::hf_tensor_name(hf, name).candidates.empty()) std::abort();
  });
}
