// embedding parity: ptk::ops::embedding (exact copy) and embedding_backward (+=, deterministic) against the oracle.
#include "index_data.hpp"
#include "parity.hpp"
#include "ptk/ops/embedding.hpp"
#include "ptk/reference/embedding.hpp"

namespace ptk::test {
namespace {

struct EmbeddingCase {
  std::int64_t N, V, C;
};

std::string name(const EmbeddingCase& c) {
  return "N" + std::to_string(c.N) + "_V" + std::to_string(c.V) + "_C" + std::to_string(c.C);
}
void PrintTo(const EmbeddingCase& c, std::ostream* os) { *os << name(c); }

const std::vector<EmbeddingCase> kCases = [] {
  std::vector<EmbeddingCase> cases;
  for (std::int64_t n : {1, 3, 17, 127, 513})
    for (std::int64_t v : {1, 3, 17, 127})
      for (std::int64_t c : {1, 3, 17, 127, 513}) cases.push_back({n, v, c});
  cases.push_back({4096, 65, 64});  // many repeats per id
  return cases;
}();

// E: the element type of the table, out, dtable and dout (f32, bf16, f16); the oracle runs on the stored values, and
// the backward's sum is rounded once more as it is stored (stored_output).
template <class Space, class Tune, class E = float>
void check_embedding(const EmbeddingCase& c) {
  const auto ids = random_ids(c.N, static_cast<int>(c.V), name(c) + "ids");
  auto table = uniform(c.V * c.C, -1, 1, name(c) + "table");
  auto dout = uniform(c.N * c.C, -1, 1, name(c) + "dout");
  auto base = uniform(c.V * c.C, -1, 1, name(c) + "base");
  for (auto* x : {&table, &dout, &base}) round_in_place<E>(*x);
  const std::string what = std::string(Space::name()) + ' ' + element_name<E>();
  std::vector<float> want(static_cast<std::size_t>(c.N * c.C)), want_dtable = base;
  reference::embedding_forward(want.data(), ids.data(), table.data(), c.N, c.C);
  reference::embedding_backward(want_dtable.data(), dout.data(), ids.data(), c.N, c.V, c.C);

  const auto id_view = index_view<Space>(ids);
  const auto t = Tensor<Space, E>::from_host({c.V, c.C}, rounded<E>(table));
  const auto out = ops::embedding<Space>(id_view, t);
  EXPECT_EQ(values_of(out.to_vector()), want) << what << " forward (a copy: exact)";

  std::vector<std::int64_t> count(static_cast<std::size_t>(c.V), 0);
  for (int id : ids) ++count[static_cast<std::size_t>(id)];
  const auto dtable = Tensor<Space, E>::from_host({c.V, c.C}, rounded<E>(base));
  ops::embedding_backward<Space>(dtable, Tensor<Space, E>::from_host({c.N, c.C}, rounded<E>(dout)), id_view);
  const auto got = values_of(dtable.to_vector());
  EXPECT_TRUE(all_close(got, want_dtable, {c.V, c.C}, [&](std::size_t i) {
    return stored_output<E>(tolerance::embedding_backward(count[i / static_cast<std::size_t>(c.C)])).allowed(want_dtable[i]);
  })) << what << " backward";

  // Deterministic: a second run gives the same bits.
  const auto again = Tensor<Space, E>::from_host({c.V, c.C}, rounded<E>(base));
  ops::embedding_backward<Space>(again, Tensor<Space, E>::from_host({c.N, c.C}, rounded<E>(dout)), id_view);
  EXPECT_EQ(values_of(again.to_vector()), got) << what << " backward is not bitwise reproducible";
}

class EmbeddingParity : public ::testing::TestWithParam<EmbeddingCase> {};

TEST_P(EmbeddingParity, ForwardBackward) {
  for_each_space([&](auto space) { check_embedding<typename decltype(space)::type, typename decltype(space)::tune>(GetParam()); });
}

TEST_P(EmbeddingParity, ForwardBackward16Bit) {
  for_each_space_16bit([&](auto space, auto e) {
    check_embedding<typename decltype(space)::type, typename decltype(space)::tune, typename decltype(e)::type>(GetParam());
  });
}

INSTANTIATE_TEST_SUITE_P(Sweep, EmbeddingParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

TEST(Embedding, IdsShapeGivesTheOutputShape) {
  using S = Kokkos::DefaultExecutionSpace;
  const auto out = ops::embedding<S>(index_view<S>({0, 1, 2, 1, 0, 2}), Tensor<S>({3, 5}), {2, 3});
  EXPECT_EQ(out.shape(), (Shape{2, 3, 5}));
}

TEST(EmbeddingErrors, NameTheShapes) {
  using S = Kokkos::DefaultExecutionSpace;
  try {
    ops::embedding<S>(index_view<S>({0, 2, 7, 1}), Tensor<S>({5, 8}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "embedding: token id 7 at position 2 is outside [0, 5) (table shape [5, 8])");
  }
  try {
    ops::embedding_backward<S>(Tensor<S>({5, 8}), Tensor<S>({3, 8}), index_view<S>({0, 1, 2, 3}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "embedding_backward: dout has shape [3, 8] but 4 ids and dtable shape [5, 8] need 4 rows of 8");
  }
  EXPECT_THROW(ops::embedding<S>(index_view<S>({-1}), Tensor<S>({5, 8})), Error);
  EXPECT_THROW(ops::embedding<S>(index_view<S>({}), Tensor<S>({5, 8})), Error);
  EXPECT_THROW(ops::embedding<S>(index_view<S>({0, 1}), Tensor<S>({5, 8}), {3}), Error);
  EXPECT_THROW(ops::embedding<S>(index_view<S>({0}), Tensor<S>({5, 8, 1})), Error);
}

}  // namespace
}  // namespace ptk::test
