#pragma once
// convert:   y = x stored as E (dtype.hpp), on the device: bf16 and f16 round to nearest even; q8_0 and q4_0 take
//            x[n·32, K] rows in blocks of 32 values, one block per work item (ggml's rounding, quant.hpp).
// dequantize: y[n] = x's values as float (exact for every E).
// value_range: the largest finite |x| and the count of NaN and infinities, which ops::convert checks first.
#include <Kokkos_Core.hpp>

#include <cstdint>

#include "ptk/core/dtype.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/load.hpp"
#include "ptk/kernels/instances.hpp"

namespace ptk::kernels {

// Item i of y from x's values [i·B, (i + 1)·B): one value rounded, or one block quantized.
template <class E>
KOKKOS_INLINE_FUNCTION E stored_item(const float* x) {
  if constexpr (Element<E>::block == 1) return round_to<E>(*x);
  else return quantize_block<E>(x);
}

template <class Space, class E>
void convert(const Kokkos::View<E*, Kokkos::LayoutRight, Space>& y, const ConstVector<Space>& x) {
#if defined(PTK_HOST_AVX512)
  // f16 on a host with AVX-512: 16 values an instruction (VCVTPS2PH, round to nearest even: the bits of to_f16,
  // Half.VectorF16RoundingMatchesToF16). to_f16's integer sequence left g++ scalar and branchy, and the casts of a
  // mixed-precision f16 step (every linear input and output gradient) took a third of its time.
  if constexpr (std::is_same_v<E, f16> &&
                Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible) {
    const auto n = static_cast<std::int64_t>(y.extent(0)), vectors = n / 16;
    const float* in = x.data();
    E* out = y.data();
    Kokkos::parallel_for("ptk::convert", Kokkos::RangePolicy<Space>(0, vectors), [=](const std::int64_t i) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 16 * i),
                          _mm512_cvtps_ph(_mm512_loadu_ps(in + 16 * i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    });
    if (vectors * 16 < n)
      Kokkos::parallel_for("ptk::convert_tail", Kokkos::RangePolicy<Space>(vectors * 16, n),
                           [=](const std::int64_t i) { out[i] = to_f16(in[i]); });
    return;
  }
#endif
  Kokkos::parallel_for(
      "ptk::convert", Kokkos::RangePolicy<Space>(0, static_cast<std::int64_t>(y.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i) { y(i) = stored_item<E>(&x(i * Element<E>::block)); });
}

template <class Space, class E>
void dequantize(const Vector<Space>& y, const Kokkos::View<const E*, Kokkos::LayoutRight, Space>& x) {
  Kokkos::parallel_for(
      "ptk::dequantize", Kokkos::RangePolicy<Space>(0, static_cast<std::int64_t>(y.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i) {
        constexpr int B = Element<E>::block;  // value i is value i % B of item i / B
        y(i) = load(x.data() + i / B, static_cast<int>(i % B));
      });
}

struct ValueRange {
  float max_abs = 0.0f;       // over the finite values
  std::int64_t nonfinite = 0;  // NaN and ±inf
};

template <class Space>
ValueRange value_range(const ConstVector<Space>& x) {
  ValueRange r;
  const auto n = static_cast<std::int64_t>(x.extent(0));
  Kokkos::parallel_reduce(
      "ptk::value_range/max", Kokkos::RangePolicy<Space>(0, n),
      KOKKOS_LAMBDA(const std::int64_t i, float& m) {
        const float a = x(i) < 0.0f ? -x(i) : x(i);
        if (a <= 3.4028234663852886e38f && a > m) m = a;  // false for NaN and inf
      },
      Kokkos::Max<float>(r.max_abs));
  Kokkos::parallel_reduce(
      "ptk::value_range/nonfinite", Kokkos::RangePolicy<Space>(0, n),
      KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& c) {
        const float a = x(i) < 0.0f ? -x(i) : x(i);
        c += a <= 3.4028234663852886e38f ? 0 : 1;
      },
      r.nonfinite);
  if (r.max_abs < 0.0f) r.max_abs = 0.0f;  // Max's identity when every value is non-finite
  return r;
}

}  // namespace ptk::kernels

#define PTK_CONVERT_ELEMENT_INSTANCE(EXT, Space, E)                                                                 \
  EXT template void convert<Space, E>(const Kokkos::View<E*, Kokkos::LayoutRight, Space>& y, const ConstVector<Space>& x); \
  EXT template void dequantize<Space, E>(const Vector<Space>& y, const Kokkos::View<const E*, Kokkos::LayoutRight, Space>& x);
#define PTK_CONVERT_SPACE_INSTANCES(EXT, Space)          \
  PTK_CONVERT_ELEMENT_INSTANCE(EXT, Space, ::ptk::bf16) \
  PTK_CONVERT_ELEMENT_INSTANCE(EXT, Space, ::ptk::f16)  \
  PTK_CONVERT_ELEMENT_INSTANCE(EXT, Space, ::ptk::q8_0) \
  PTK_CONVERT_ELEMENT_INSTANCE(EXT, Space, ::ptk::q4_0) \
  EXT template ValueRange value_range<Space>(const ConstVector<Space>& x);
namespace ptk::kernels {
PTK_FOR_EACH_SPACE(PTK_CONVERT_SPACE_INSTANCES, extern)
}  // namespace ptk::kernels
