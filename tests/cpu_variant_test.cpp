// The CPU ISA variants (core/cpu_variants.def, cmake/cpu_variants.cmake): the table names only features that
// cpu_features.hpp reads, and each test binary holds the kernels of the variant it was linked with (ctest sets
// PTK_EXPECT_CPU_VARIANT: ptk_tests this tree's, ptk_tests_<variant> the others').
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "ptk/core/cpu_features.hpp"
#include "ptk/kernels/host_variant.hpp"

namespace {

bool known(const std::string& name) {
  for (const auto& b : ptk::cpu::known_features())
    if (name == b.name) return true;
  return false;
}

}  // namespace

TEST(CpuVariant, TheTableNamesOnlyFeaturesThatAreRead) {
  ASSERT_FALSE(ptk::cpu::variants().empty());
  for (const auto& v : ptk::cpu::variants()) {
    std::istringstream needs(v.needs);
    int count = 0;
    for (std::string name; needs >> name; ++count) EXPECT_TRUE(known(name)) << v.name << " needs '" << name << "'";
    EXPECT_GT(count, 0) << v.name;
    EXPECT_NE(std::string(v.flags).find("-march="), std::string::npos) << v.name << ": " << v.flags;
  }
}

TEST(CpuVariant, MissingListsWhatTheCpuLacks) {
  const ptk::cpu::Variant v{"test", "-march=x86-64-v3", "avx2 fma avx512vbmi"};
  EXPECT_EQ(ptk::cpu::missing(v, ptk::cpu::Features{{"avx2", "fma", "avx512vbmi"}}), "");
  EXPECT_EQ(ptk::cpu::missing(v, ptk::cpu::Features{{"avx2"}}), "fma avx512vbmi");
  EXPECT_EQ(ptk::cpu::missing(v, ptk::cpu::Features{}), "avx2 fma avx512vbmi");
}

TEST(CpuVariant, TheBinaryHoldsTheKernelsItNames) {
  const char* expected = std::getenv("PTK_EXPECT_CPU_VARIANT");
  if (!expected) GTEST_SKIP() << "a build without CPU variants (kernels: '" << ptk::kernels::host_variant() << "')";
  EXPECT_STREQ(ptk::kernels::host_variant(), expected);
  const int bits = ptk::kernels::host_vector_bits();
  EXPECT_EQ(bits, std::string(expected).rfind("avx512", 0) == 0 ? 512 : 256) << expected;
  for (const auto& v : ptk::cpu::variants())
    if (std::string(v.name) == expected) EXPECT_EQ(ptk::cpu::missing(v, ptk::cpu::features()), "") << "ctest runs it here";
}
