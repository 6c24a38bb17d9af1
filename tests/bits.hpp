#pragma once
// A float's bits and back, for the tests that walk bit patterns (fast_exp, the 16-bit types).
#include <cstdint>
#include <cstring>

namespace ptk::test {

inline float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline std::uint32_t to_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

}  // namespace ptk::test
