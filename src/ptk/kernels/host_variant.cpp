// Compiled into each set of kernel objects with its variant's flags (src/CMakeLists.txt): see host_variant.hpp.
// The name comes as a bare token (PTK_CPU_VARIANT_ID=avx512), stringified here: a quoted string on the command line
// does not survive nvcc_wrapper.
#include "ptk/kernels/host_variant.hpp"

#define PTK_VARIANT_STRING_(x) #x
#define PTK_VARIANT_STRING(x) PTK_VARIANT_STRING_(x)

namespace ptk::kernels {

const char* host_variant() {
#if defined(PTK_CPU_VARIANT_ID)
  return PTK_VARIANT_STRING(PTK_CPU_VARIANT_ID);
#else
  return "";  // a build without variants
#endif
}

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
