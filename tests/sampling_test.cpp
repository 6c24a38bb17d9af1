// sampling parity: ptk::ops::sample (temperature, top-k, top-p, on the device) against the float64 oracle's
// sort-based sampler: the same kept set, the same normalized distribution, and the same token for the same
// uniform draw, except where a draw (or a top-p cut) falls within rounding of a boundary: such rows are
// counted and must be rare. Greedy and top-k = 1 pick the first largest logit; NaN rows get −1.
#include <limits>

#include "parity.hpp"
#include "ptk/ops/sampling.hpp"
#include "ptk/reference/sampling.hpp"

namespace ptk::test {
namespace {

struct SampleCase {
  std::int64_t B, V;
  float temperature;
  int top_k;
  float top_p;
};

std::string name(const SampleCase& c) {
  const auto milli = [](float x) { return std::to_string(static_cast<int>(std::lround(x * 1000))); };
  return "B" + std::to_string(c.B) + "_V" + std::to_string(c.V) + "_T" + milli(c.temperature) + "m_k" +
         std::to_string(c.top_k) + "_p" + milli(c.top_p) + "m";
}
void PrintTo(const SampleCase& c, std::ostream* os) { *os << name(c); }

const std::vector<SampleCase> kCases = {
    {1, 1, 1.0f, 0, 1.0f},     {3, 3, 1.0f, 0, 1.0f},    {4, 17, 0.7f, 5, 1.0f},   {4, 17, 1.0f, 0, 0.9f},
    {2, 127, 1.3f, 40, 0.95f}, {8, 513, 0.8f, 0, 0.5f},  {2, 513, 1.0f, 1, 1.0f},  {3, 4099, 1.0f, 50, 0.9f},
    {1, 50257, 0.9f, 0, 0.9f}, {2, 50257, 1.0f, 100, 1.0f}, {5, 65, 0.0f, 0, 1.0f}, {2, 33, 2.0f, 33, 0.3f},
    {16, 70, 1.0f, 0, 0.999f},
};

template <class Space, class Tune>
void check_sample(const SampleCase& c, const std::vector<float>& logits, const std::vector<float>& u) {
  IndexVector<Space> tokens("tokens", static_cast<std::size_t>(c.B));
  const auto probs =
      ops::sample<Space, Tune>(tokens, Tensor<Space>::from_host({c.B, c.V}, logits), u, {c.temperature, c.top_k, c.top_p})
          .to_vector();
  auto host_tokens = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), tokens);
  int near_boundary = 0;
  for (std::int64_t b = 0; b < c.B; ++b) {
    const float* row = logits.data() + b * c.V;
    std::vector<double> want(static_cast<std::size_t>(c.V));
    const int want_token = reference::sample(want.data(), row, c.V, c.temperature, c.top_k, c.top_p, u[b]);
    // Rows whose top-p cut or draw lands within 2e-6 (relative) of a boundary may legitimately differ.
    double run = 0.0, gap = 1.0, mass = 0.0;
    std::vector<double> sorted(want);
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    for (std::int64_t i = 0; i < c.V; ++i) gap = std::min(gap, std::fabs((run += want[i]) - u[b]));
    if (c.top_p < 1.0f) {
      std::vector<double> p(static_cast<std::size_t>(c.V));
      const double mx = *std::max_element(row, row + c.V);
      for (std::int64_t i = 0; i < c.V; ++i) p[i] = std::exp((row[i] - mx) / c.temperature);
      std::sort(p.begin(), p.end(), std::greater<double>());
      const double kept_total = [&] {
        double t = 0;
        for (std::int64_t i = 0; i < c.V && (c.top_k == 0 || i < c.top_k); ++i) t += p[i];
        return t;
      }();
      for (std::int64_t i = 0; i < c.V && (c.top_k == 0 || i < c.top_k); ++i)
        gap = std::min(gap, std::fabs((mass += p[i]) / kept_total - c.top_p));
    }
    if (c.temperature != 0.0f && gap < 2e-6) {
      ++near_boundary;
      continue;
    }
    std::vector<float> got(probs.begin() + b * c.V, probs.begin() + (b + 1) * c.V), want_f(want.begin(), want.end());
    const double max_argument = c.temperature == 0.0f ? 0.0 : 8.0 / c.temperature;  // logits in [-4, 4]
    EXPECT_TRUE(all_close(got, want_f, {c.V}, tolerance::sampling(c.V, max_argument)))
        << Space::name() << " row " << b;
    EXPECT_EQ(host_tokens(b), want_token) << Space::name() << " row " << b << ", u " << u[b];
  }
  EXPECT_LE(near_boundary, 1) << Space::name() << ": rows too close to a boundary to compare";
}

class SampleParity : public ::testing::TestWithParam<SampleCase> {};

TEST_P(SampleParity, MatchesTheOracle) {
  const auto& c = GetParam();
  const auto logits = uniform(c.B * c.V, -4, 4, name(c) + "l");
  const auto u = uniform(c.B, 0, 1, name(c) + "u");
  for_each_space([&](auto space) { check_sample<typename decltype(space)::type, typename decltype(space)::tune>(c, logits, u); });
}

INSTANTIATE_TEST_SUITE_P(Sweep, SampleParity, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return name(info.param); });

// Greedy takes the first of tied largest logits, whatever u is; top-k keeps every value tied with the k-th
// largest, so top-k = 1 draws among the tied maxima. A NaN row gives −1.
TEST(Sample, GreedyTiesAndNaN) {
  for_each_space([&](auto space) {
    using Space = typename decltype(space)::type;
    using Tune = typename decltype(space)::tune;
    std::vector<float> logits{0, 3, 1, 3, -1, 2, 2, 0, 1, std::numeric_limits<float>::quiet_NaN(), 0, 0};
    const auto draw = [&](ops::SamplingParams params) {
      IndexVector<Space> tokens("tokens", 3);
      ops::sample<Space, Tune>(tokens, Tensor<Space>::from_host({3, 4}, logits), {0.99f, 0.4f, 0.0f}, params);
      auto t = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), tokens);
      return std::vector<int>{t(0), t(1), t(2)};
    };
    EXPECT_EQ(draw({0.0f, 0, 1.0f}), (std::vector<int>{1, 1, -1})) << Space::name();
    EXPECT_EQ(draw({1.0f, 1, 1.0f}), (std::vector<int>{3, 1, -1})) << Space::name();
  });
}

TEST(Sample, RefusesBadParameters) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  IndexVector<Space> tokens("tokens", 1);
  const auto logits = Tensor<Space>({1, 5}, "logits");
  const auto message = [&](ops::SamplingParams p, std::vector<float> u) {
    try {
      ops::sample(tokens, logits, u, p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({-1.0f, 0, 1.0f}, {0.5f}).find("temperature"), std::string::npos);
  EXPECT_NE(message({1.0f, -2, 1.0f}, {0.5f}).find("top_k"), std::string::npos);
  EXPECT_NE(message({1.0f, 0, 0.0f}, {0.5f}).find("top_p"), std::string::npos);
  EXPECT_NE(message({1.0f, 0, 1.5f}, {0.5f}).find("top_p"), std::string::npos);
  EXPECT_NE(message({1.0f, 0, 1.0f}, {1.0f}).find("outside [0, 1)"), std::string::npos);
  EXPECT_NE(message({1.0f, 0, 1.0f}, {0.5f, 0.5f}).find("2 uniform draws for 1 rows"), std::string::npos);
}

}  // namespace
}  // namespace ptk::test
