#pragma once
// Hard rows for the row ops: a large offset with a small spread (1000 + N(0,1)), 768 wide, and
// long rows (2^20 wide). Sequential fp32 sums lose digits on both; tolerances::*_row bound them.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "parity.hpp"

namespace ptk::test {

struct HardRows {
  Shape shape;
  std::string label;
};

inline const std::vector<HardRows>& hard_rows() {
  static const std::vector<HardRows> rows{{{17, 768}, "offset1000_17x768"}, {{1, 1 << 20}, "offset1000_1x1048576"}};
  return rows;
}

// offset + N(0, 1), deterministic per seed.
inline std::vector<float> offset_normal(std::int64_t n, float offset, const std::string& seed) {
  std::mt19937 gen(static_cast<std::uint32_t>(std::hash<std::string>{}(seed)));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = offset + dist(gen);
  return v;
}

// max over the data of |x| * rstd: how far the rows sit from 0 in units of their spread.
inline double magnitude_over_spread(const std::vector<float>& x, const std::vector<float>& rstd, std::int64_t cols) {
  double k = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    k = std::fmax(k, std::fabs(static_cast<double>(x[i])) * rstd[i / static_cast<std::size_t>(cols)]);
  return k;
}

}  // namespace ptk::test
