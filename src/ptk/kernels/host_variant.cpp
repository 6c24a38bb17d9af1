// Compiled into each set of kernel objects with its variant's flags (src/CMakeLists.txt): see host_variant.hpp.
#include "ptk/kernels/host_variant.hpp"

#ifndef PTK_CPU_VARIANT_NAME
#error "compiled by src/CMakeLists.txt with the variant's name"
#endif

namespace ptk::kernels {

const char* host_variant() { return PTK_CPU_VARIANT_NAME; }

int host_vector_bits() {
#if defined(__AVX512F__)
  return 512;
#elif defined(__AVX__)
  return 256;
#elif defined(__SSE2__) || defined(__ARM_NEON)
  return 128;
#else
  return 0;
#endif
}

}  // namespace ptk::kernels
