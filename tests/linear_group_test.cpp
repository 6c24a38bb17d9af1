// ops::linear_group: a layer's q, k and v (or gate and up) from one x in one decode launch give, bit for bit, what
// ops::linear gives for each weight alone (whose parity against the oracle is Linear.StoredWeights and the decode
// suite), for every element type, row counts on both sides of the decode limits and weights of different heights
// (the league split between the parts); and its refusals.
#include <cstring>
#include <type_traits>

#include "parity.hpp"
#include "ptk/ops/convert.hpp"
#include "ptk/ops/linear.hpp"

namespace ptk::test {
namespace {

// The first element where a and b differ in their bits, as "row r, column c: a vs b", or "" where none does.
std::string first_difference(const std::vector<float>& a, const std::vector<float>& b, std::int64_t N) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return "row " + std::to_string(i / static_cast<std::size_t>(N)) + ", column " +
             std::to_string(i % static_cast<std::size_t>(N)) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
  return "";
}

TEST(LinearGroup, EqualsEachLinearBitForBit) {
  const auto run = [](auto e) {
    using E = decltype(e);
    for (std::int64_t M : {1, 3, 8, 9, 24, 25})
      for (const auto& heights : std::vector<std::vector<std::int64_t>>{{127, 33, 33}, {65, 1}})
        for_each_space([&](auto space) {
          using Space = typename decltype(space)::type;
          using Tune = typename decltype(space)::tune;
          const std::int64_t K = 544;
          const std::string name = "group M" + std::to_string(M) + " of " + std::to_string(heights.size()) + " " +
                                   dtype_name(Element<E>::dtype);
          const auto x = Tensor<Space>::from_host({M, K}, uniform(M * K, -1, 1, name + "x"));
          std::vector<Tensor<Space, E>> ws;
          for (std::size_t p = 0; p < heights.size(); ++p) {
            const auto w = uniform(heights[p] * K, -1, 1, name + "w" + std::to_string(p));
            const auto W = Tensor<Space>::from_host({heights[p], K}, w);
            if constexpr (std::is_same_v<E, float>) ws.push_back(W);
            else ws.push_back(ops::convert<E>(W));
          }
          const auto ys = ops::linear_group<Space, Tune, E>(x, ws);
          ASSERT_EQ(ys.size(), ws.size());
          for (std::size_t p = 0; p < ws.size(); ++p) {
            EXPECT_EQ(ys[p].shape(), (Shape{M, heights[p]}));
            const std::string diff =
                first_difference(ys[p].to_vector(), ops::linear<Space, Tune>(x, ws[p]).to_vector(), heights[p]);
            EXPECT_EQ(diff, "") << Space::name() << " " << name << ", weight " << p;
          }
        });
  };
  run(float{});
  run(bf16{});
  run(f16{});
  run(q8_0{});
  run(q4_0{});
  using Host = Kokkos::DefaultHostExecutionSpace;
  const Tensor<Host> x({2, 64}), w({4, 64});
  EXPECT_THROW(ops::linear_group(x, std::vector<Tensor<Host>>{}), InputError);
  EXPECT_THROW(ops::linear_group(x, std::vector<Tensor<Host>>{w, w, w, w}), InputError);
  EXPECT_THROW(ops::linear_group(x, std::vector<Tensor<Host>>{w, Tensor<Host>({4, 32})}), InputError);
}

}  // namespace
}  // namespace ptk::test
