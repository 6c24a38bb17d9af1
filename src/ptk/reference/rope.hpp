// Shapes: X[O,T,H,D] with D even -> Y[O,T,H,D]; backward: dY -> dX (+=). [B,H,T,D] is O = B·H, H = 1; [B,T,H,D] is O = B.
// Math:   half-split pairs (GPT-NeoX / Llama): for i < D/2, θ = (t + pos_offset) · base^(-2i/D) (in double),
//         Y_i = x_i cos θ - x_{i+D/2} sin θ,  Y_{i+D/2} = x_i sin θ + x_{i+D/2} cos θ;
//         dX_i += dY_i cos θ + dY_{i+D/2} sin θ,  dX_{i+D/2} += -dY_i sin θ + dY_{i+D/2} cos θ (the transposed rotation).
#pragma once

#include <cmath>
#include <cstdint>

namespace ptk {
namespace reference {

namespace detail {
template <class T>
inline void rope_apply(T* out, const T* inp, std::int64_t O, std::int64_t Tn, std::int64_t H, std::int64_t D, double base,
                       std::int64_t pos_offset, bool backward) {
    const std::int64_t half = D / 2;
    for (std::int64_t o = 0; o < O; ++o)
        for (std::int64_t t = 0; t < Tn; ++t)
            for (std::int64_t h = 0; h < H; ++h) {
                const std::int64_t at = ((o * Tn + t) * H + h) * D;
                for (std::int64_t i = 0; i < half; ++i) {
                    const double theta = static_cast<double>(t + pos_offset) *
                                         std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(D));
                    const double c = std::cos(theta), s = backward ? -std::sin(theta) : std::sin(theta);
                    const double x1 = static_cast<double>(inp[at + i]), x2 = static_cast<double>(inp[at + i + half]);
                    const double y1 = x1 * c - x2 * s, y2 = x1 * s + x2 * c;
                    if (backward) {
                        out[at + i] = static_cast<T>(static_cast<double>(out[at + i]) + y1);
                        out[at + i + half] = static_cast<T>(static_cast<double>(out[at + i + half]) + y2);
                    } else {
                        out[at + i] = static_cast<T>(y1);
                        out[at + i + half] = static_cast<T>(y2);
                    }
                }
            }
}
}  // namespace detail

template <class T>
inline void rope_forward(T* out, const T* inp, std::int64_t O, std::int64_t Tn, std::int64_t H, std::int64_t D,
                         double base = 10000.0, std::int64_t pos_offset = 0) {
    detail::rope_apply(out, inp, O, Tn, H, D, base, pos_offset, false);
}

template <class T>
inline void rope_backward(T* dinp, const T* dout, std::int64_t O, std::int64_t Tn, std::int64_t H, std::int64_t D,
                          double base = 10000.0, std::int64_t pos_offset = 0) {
    detail::rope_apply(dinp, dout, O, Tn, H, D, base, pos_offset, true);
}

}  // namespace reference
}  // namespace ptk
