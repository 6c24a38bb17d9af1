// Tensor: shapes, views and explicit copies between spaces.
#include "parity.hpp"
#include "ptk/core/tensor.hpp"

namespace ptk::test {
namespace {

TEST(Tensor, ShapeAndViews) {
  using S = Kokkos::DefaultExecutionSpace;
  const Tensor<S> t({2, 3, 4});
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dim(-1), 4);
  EXPECT_EQ(t.rows().extent(0), 6u);
  EXPECT_EQ(t.rows().extent(1), 4u);
  EXPECT_EQ(t.batched_matrices().extent(0), 2u);
  EXPECT_THROW(t.dim(3), Error);
  EXPECT_THROW(Tensor<S>({2, 0}), Error);
  EXPECT_THROW(Tensor<S>::from_host({2, 2}, std::vector<float>{1, 2, 3}), Error);
}

// Running out of memory is one ptk::OutOfMemory line that names the size, the label and the space, whatever
// Kokkos version reports it (Kokkos 3 also prints a paragraph to stderr: silenced, checked here).
TEST(Tensor, AllocationFailureIsOneLine) {
  using S = Kokkos::DefaultExecutionSpace;
  testing::internal::CaptureStderr();
  try {
    Tensor<S> huge({std::int64_t{1} << 42}, "ptk::too_big");  // 16 TiB
    testing::internal::GetCapturedStderr();
    FAIL() << "16 TiB were allocated";
  } catch (const OutOfMemory& e) {
    std::string printed = testing::internal::GetCapturedStderr();
    const std::string what = e.what();
    // AddressSanitizer (the debug preset) reports the failed allocation itself, past std::cerr.
    if (printed.find("AddressSanitizer failed to allocate") != std::string::npos) printed.clear();
    EXPECT_EQ(printed, "");
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("cannot allocate 16 TiB for 'ptk::too_big'"), std::string::npos) << what;
  }
}

TEST(Tensor, CopiesBetweenSpacesRoundTrip) {
  const std::vector<float> values{1, 2, 3, 4, 5, 6};
  const auto host = Tensor<Kokkos::DefaultHostExecutionSpace>::from_host({2, 3}, values);
  const auto device = host.to<Kokkos::DefaultExecutionSpace>();
  EXPECT_NE(device.data(), host.data());
#if defined(KOKKOS_ENABLE_SERIAL)
  EXPECT_EQ(device.to<Kokkos::Serial>().to_vector(), values);  // another host space than the one it came from
#endif
  EXPECT_EQ(device.to<Kokkos::DefaultHostExecutionSpace>().to_vector(), values);
  EXPECT_EQ(device.shape(), (Shape{2, 3}));
}

}  // namespace
}  // namespace ptk::test
