#pragma once
// The element types' names (../shared/DESIGN.md's contract names), without Kokkos: what the model layer and the
// tools pass around. dtype.hpp says how each type stores its values.
#include <string>

namespace ptk {

enum class DType { f32, bf16, f16, q8_0, q4_0 };

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::q8_0: return "q8_0";
    case DType::q4_0: return "q4_0";
  }
  return "?";
}

// The DType a contract name names; false for any other text.
inline bool parse_dtype(const std::string& name, DType& out) {
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::q8_0, DType::q4_0})
    if (name == dtype_name(t)) {
      out = t;
      return true;
    }
  return false;
}

}  // namespace ptk
