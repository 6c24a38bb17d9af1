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

TEST(Tensor, CopiesBetweenSpacesRoundTrip) {
  const std::vector<float> values{1, 2, 3, 4, 5, 6};
  const auto host = Tensor<Kokkos::DefaultHostExecutionSpace>::from_host({2, 3}, values);
  const auto device = host.to<Kokkos::DefaultExecutionSpace>();
  EXPECT_NE(device.data(), host.data());
  EXPECT_EQ(device.to<Kokkos::Serial>().to_vector(), values);
  EXPECT_EQ(device.shape(), (Shape{2, 3}));
}

}  // namespace
}  // namespace ptk::test
