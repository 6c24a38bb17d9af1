#pragma once
// matmul_forward over stored element types (matmul.hpp): f32 × bf16/f16 (a weight stored for inference:
// ops::linear over Tensor<Space, E>) and bf16 × bf16, f16 × f16; c and the accumulation f32. The same kernels as
// f32's; only their instances live here, in translation units of their own, so that the build compiles them beside
// the f32 GEMM's rather than after it.
#include "ptk/kernels/matmul.hpp"

#define PTK_MATMUL_STORED_INSTANCE(EXT, Space, Tune, EA, EB) \
  EXT template void matmul_forward<Space, Tune, EA, EB>(const Tensor3<Space>& c, const Same<ConstTensor3Of<Space, EA>>& a, const Same<ConstTensor3Of<Space, EB>>& b, bool trans_a, bool trans_b, float alpha, float beta, MatmulImpl impl);
#define PTK_MATMUL_STORED_TUNED_INSTANCES(EXT, Space, Tune)                  \
  PTK_MATMUL_STORED_INSTANCE(EXT, Space, Tune, float, ::ptk::bf16)        \
  PTK_MATMUL_STORED_INSTANCE(EXT, Space, Tune, float, ::ptk::f16)         \
  PTK_MATMUL_STORED_INSTANCE(EXT, Space, Tune, ::ptk::bf16, ::ptk::bf16) \
  PTK_MATMUL_STORED_INSTANCE(EXT, Space, Tune, ::ptk::f16, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_MATMUL_STORED_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
