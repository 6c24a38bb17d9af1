#pragma once
// The GEMM's test cases, shared by the parity suite (matmul_test.cpp) and the vendor GEMM's (vendor_blas_test.cpp).
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ptk/core/tensor.hpp"

namespace ptk::test {

struct MatmulCase {
  std::int64_t batch_a, batch_b;  // 0: that operand is rank 2
  std::int64_t M, N, K;
  bool trans_a, trans_b;
};

inline std::string name(const MatmulCase& c) {
  return "A" + std::to_string(c.batch_a) + (c.trans_a ? "T" : "N") + "_B" + std::to_string(c.batch_b) +
         (c.trans_b ? "T" : "N") + "_M" + std::to_string(c.M) + "_N" + std::to_string(c.N) + "_K" + std::to_string(c.K);
}

// gtest and ctest show the case by its name, not its bytes.
inline void PrintTo(const MatmulCase& c, std::ostream* os) { *os << name(c); }

// alpha · product + bias[column] (none if empty) + beta · c0 in double, rounded once: what a GEMM that applies alpha,
// a bias and beta as it stores must give, from the oracle's product of N columns a row.
template <class P>
std::vector<float> scaled_product(const std::vector<P>& product, float alpha, const std::vector<float>& bias,
                                  float beta, const std::vector<float>& c0, std::int64_t N) {
  std::vector<float> want(product.size());
  for (std::size_t e = 0; e < want.size(); ++e)
    want[e] = static_cast<float>(double(alpha) * product[e] + (bias.empty() ? 0.0 : double(bias[e % N])) +
                                 double(beta) * c0[e]);
  return want;
}

inline Shape operand_shape(std::int64_t batch, std::int64_t rows, std::int64_t cols, bool trans) {
  Shape s = trans ? Shape{cols, rows} : Shape{rows, cols};
  if (batch > 0) s.insert(s.begin(), batch);
  return s;
}

// The stored types change only the tile copies, so their sweep is a smaller one that still reaches every copy
// path: odd sizes, every transpose pair, batched and broadcast operands, a long K (the f32 sweep's largest cases,
// four times over, made the debug build's GPU-tuning run 190 s longer).
inline const std::vector<MatmulCase> kStoredCases = [] {
  std::vector<MatmulCase> cases{{0, 0, 1, 1, 1, false, false}, {0, 0, 3, 3, 3, false, false},
                                {0, 0, 17, 17, 17, false, false}, {0, 0, 127, 1, 513, false, false},
                                {4, 0, 33, 129, 17, false, true},  {0, 2, 5, 7, 513, true, false},
                                {3, 3, 17, 9, 65, true, true},     {0, 0, 3, 5, 4096, false, false},
                                {3, 0, 9, 17, 33, true, false}};  // a batched and transposed, b shared
  for (bool ta : {false, true})
    for (bool tb : {false, true}) cases.push_back({0, 0, 17, 127, 33, ta, tb});
  return cases;
}();

}  // namespace ptk::test
