#pragma once
// One stored tensor of a model file made into one of ptk's parameters, on the host, tensor by tensor: a weight
// stored in the run's type as ptk lays it out is copied as it lies; anything else goes row by row through float
// (its source decoded: f32, bf16, f16, q8_0, q4_0) into the run's type (rounded to nearest even; q8_0 and q4_0
// quantized as ops::convert does, with the same refusals: a value the type cannot hold is an InputError naming the
// tensor, the value and its place). Two layouts differ from ptk's: GPT-2's Conv1D matrices, stored [in, out]
// (read transposed), and GGUF's q and k projections, whose rows hold rope's pairs interleaved (read back in
// rotate-half order, the inverse of nn/gguf_export.hpp's permutation).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptk/autograd/variable.hpp"
#include "ptk/core/dtype_name.hpp"

namespace ptk::nn {

struct StoredTensor {
  std::string name;                 // the file's name, for messages
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;  // as stored, outermost first
  std::string_view bytes;           // in a mapped file (or a loaded checkpoint)
  bool transposed = false;          // a [in, out] matrix for ptk's [out, in]
  int rope_heads = 0;               // > 0: rows interleaved for llama.cpp's rope, over this many heads
};

// The bytes a tensor of `shape` takes stored as dtype (q8_0 / q4_0: the last dimension in whole blocks of 32).
std::uint64_t stored_bytes(const std::vector<std::int64_t>& shape, DType dtype);

// The bytes of `source` as ptk's tensor of `shape` stored as dtype, on the host. With interleave_heads > 0 the rows
// are written in llama.cpp's interleaved rope order over that many heads (GGUF's q and k: ptk convert). InputError
// when the source's shape is not shape (transposed: reversed), or a row of a q8_0 / q4_0 result is not whole blocks.
std::vector<char> convert_tensor(const StoredTensor& source, const std::vector<std::int64_t>& shape, DType dtype,
                                 int interleave_heads = 0);

// The parameter of `shape` (ptk's) from `source`, stored as dtype (f32 for the parameters that are not linear
// weights) on `device`: copied as it lies when it is stored so, else made by convert_tensor (its refusals).
ag::Var make_parameter(const StoredTensor& source, const std::vector<std::int64_t>& shape, DType dtype,
                       ag::Device device);

}  // namespace ptk::nn
