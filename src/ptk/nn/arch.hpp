#pragma once
// Which decoder a DecoderConfig describes (nn/decoder.hpp). Its own header, free of the autograd, so that the memory
// estimate (constexpr, nn/memory_estimate.hpp) can name it.
namespace ptk::nn {

enum class Arch { gpt2, llama };

}  // namespace ptk::nn
