#pragma once
// The consumers' check of a softmax over the rows of x ([rows, cols]) against double arithmetic: the number of
// elements off by more than 1e-6, each printed.
#include <cmath>
#include <cstdio>
#include <vector>

inline int softmax_mismatches(const char* program, const std::vector<float>& x, const std::vector<float>& y, int rows,
                              int cols) {
  int bad = 0;
  for (int r = 0; r < rows; ++r) {
    double top = x[cols * r], sum = 0;
    for (int c = 1; c < cols; ++c) top = std::fmax(top, x[cols * r + c]);
    for (int c = 0; c < cols; ++c) sum += std::exp(double(x[cols * r + c]) - top);
    for (int c = 0; c < cols; ++c) {
      const double want = std::exp(double(x[cols * r + c]) - top) / sum;
      if (std::abs(y[cols * r + c] - want) > 1e-6) {
        std::printf("%s: softmax[%d][%d] = %.8f, expected %.8f\n", program, r, c, y[cols * r + c], want);
        ++bad;
      }
    }
  }
  return bad;
}
