#pragma once
// matmul_forward over stored element types (matmul.hpp): f32 × bf16/f16 (a weight stored for inference:
// ops::linear over Tensor<Space, E>) and bf16 × bf16, f16 × f16; c and the accumulation f32. The same kernels as
// f32's; only their instances live here, in translation units of their own, so that the build compiles them beside
// the f32 GEMM's rather than after it.
// matmul_quantized_weight: c[1,M,N] = alpha · a[1,M,K] · w[N,K]ᵀ + beta · c with w stored as q8_0 or q4_0, the
// host's GEMM widening w's blocks as it packs them (the same values as to_f32(w), so the same bits as the f32 GEMM on
// them, without the f32 copy); the GPU's GEMM does not read blocks (ops::linear converts w for it).
#include "ptk/core/dtype_name.hpp"
#include "ptk/kernels/matmul.hpp"

namespace ptk::kernels {
template <class Space, class Tune, class E>
void matmul_quantized_weight(const Tensor3<Space>& c, const ConstTensor3<Space>& a, const ConstTensor3Of<Space, E>& w,
                             float alpha, float beta) {
  static_assert(is_quantized_v<E>, "q8_0 or q4_0 weights");
  if constexpr (Tune::matmul::register_tiled)
    require(false, "matmul: the GPU GEMM does not read ", dtype_name(Element<E>::dtype), " blocks: convert w first");
  else
    matmul_forward<Space, Tune, float, E>(c, a, w, false, true, alpha, beta);
}
}  // namespace ptk::kernels

#define PTK_MATMUL_STORED_INSTANCE(EXT, Space, Tune, EA, EB) \
  EXT template void matmul_forward<Space, Tune, EA, EB>(const Tensor3<Space>& c, const Same<ConstTensor3Of<Space, EA>>& a, const Same<ConstTensor3Of<Space, EB>>& b, bool trans_a, bool trans_b, float alpha, float beta, MatmulImpl impl, const ConstVector<Space>& bias);
#define PTK_MATMUL_QUANTIZED_WEIGHT_INSTANCE(EXT, Space, Tune, E) \
  EXT template void matmul_quantized_weight<Space, Tune, E>(const Tensor3<Space>& c, const ConstTensor3<Space>& a, const ConstTensor3Of<Space, E>& w, float alpha, float beta);
#define PTK_MATMUL_STORED_TUNED_INSTANCES(EXT, Space, Tune)                  \
  PTK_MATMUL_QUANTIZED_WEIGHT_INSTANCE(EXT, Space, Tune, ::ptk::q8_0)     \
  PTK_MATMUL_QUANTIZED_WEIGHT_INSTANCE(EXT, Space, Tune, ::ptk::q4_0)     \
  PTK_MATMUL_STORED_INSTANCE(EXT, Space, Tune, float, ::ptk::bf16)        \
  PTK_MATMUL_STORED_INSTANCE(EXT, Space, Tune, float, ::ptk::f16)         \
  PTK_MATMUL_STORED_INSTANCE(EXT, Space, Tune, ::ptk::bf16, ::ptk::bf16) \
  PTK_MATMUL_STORED_INSTANCE(EXT, Space, Tune, ::ptk::f16, ::ptk::f16)
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_MATMUL_STORED_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
