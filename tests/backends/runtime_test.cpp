// ptk::rt (ptk/rt/backend.hpp), the library API over the backend modules, as a caller's program uses it: no Kokkos
// here. Backend::open chooses the cpu module of this build tree (auto: no GPU here); ops run there against float64
// arithmetic written below; refusals come back as rt::Error with `ptk op`'s words and status; tensors of another
// backend are refused until moved with to(); a second backend in the process is refused. Prints the cost of a call
// (measured, not asserted). Exit 0 when every check holds.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ptk/rt/backend.hpp"

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

template <typename F>
std::string refusal(F&& f, int* status = nullptr) {
  try {
    f();
  } catch (const ptk::rt::Error& e) {
    if (status) *status = e.status();
    return e.what();
  }
  return "";
}

}  // namespace

int main() {
  const auto backend = ptk::rt::Backend::open();
  std::printf("%s\n", backend.choice().c_str());
  check(backend.name() == "cpu", "auto chose " + backend.name() + " (cpu expected on a machine without a GPU)");

  // C = A·B, A [17,33], B [33,9], against float64 sums; the bound: K·u·Σ|a||b| per element (docs/tolerances.md).
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  const int M = 17, K = 33, N = 9;
  std::vector<float> a(M * K), b(K * N);
  for (auto& v : a) v = normal(rng);
  for (auto& v : b) v = normal(rng);
  const auto c = backend.run("matmul", {ptk::rt::Tensor::floats({M, K}, a), ptk::rt::Tensor::floats({K, N}, b)});
  bool within = c.size() == 1 && c[0].shape == std::vector<std::int64_t>{M, N} && c[0].backend == "cpu";
  for (int i = 0; within && i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double exact = 0, magnitude = 0;
      for (int k = 0; k < K; ++k) {
        exact += double(a[i * K + k]) * b[k * N + j];
        magnitude += std::fabs(double(a[i * K + k]) * b[k * N + j]);
      }
      if (std::fabs(c[0].values[i * N + j] - exact) > K * std::ldexp(1.0, -24) * magnitude) within = false;
    }
  check(within, "matmul [17,33]·[33,9] within K·u·Σ|a·b| of float64");

  // softmax with a setting: every row sums to 1.
  const auto y = backend.run("softmax", {ptk::rt::Tensor::floats({3, 5}, std::vector<float>(a.begin(), a.begin() + 15))},
                             {{"scale", "0.5"}});
  double worst = 0;
  for (int r = 0; r < 3; ++r) {
    double sum = 0;
    for (int j = 0; j < 5; ++j) sum += y[0].values[r * 5 + j];
    worst = std::max(worst, std::fabs(sum - 1));
  }
  check(worst < 1e-6, "softmax rows sum to 1 (worst " + std::to_string(worst) + ")");

  int status = 0;
  std::string line = refusal([&] { backend.run("nope", {}); }, &status);
  check(status == 2 && line.find("unknown op 'nope'") != std::string::npos, "unknown op -> " + line);
  line = refusal([&] { backend.run("matmul", {c[0]}); }, &status);
  check(status == 2 && line.find("op matmul: expects 2 inputs (A, B), got 1") != std::string::npos, "one input -> " + line);
  line = refusal([&] { backend.run("softmax", {c[0]}, {{"x", "1"}}); }, &status);
  check(status == 2 && line.find("unknown key 'x'") != std::string::npos, "unknown key -> " + line);
  line = refusal([&] { backend.run("softmax", {ptk::rt::Tensor::floats({2, 3}, {1, 2})}); }, &status);
  check(status == 2 && line.find("holds 2 values for 6 elements") != std::string::npos, "short tensor -> " + line);
  line = refusal([&] { backend.run("cross_entropy", {c[0], c[0]}); }, &status);
  check(status == 2 && line.find("targets (input 1) must hold int64 ids") != std::string::npos, "float targets -> " + line);
  const auto ce = backend.run("cross_entropy", {c[0], ptk::rt::Tensor::indices({M}, std::vector<std::int64_t>(M, 2))});
  check(ce.size() >= 2 && ce[1].shape == std::vector<std::int64_t>{M}, "cross_entropy with int64 targets runs");
  const auto foreign = c[0].to("cuda");
  line = refusal([&] { backend.run("softmax", {foreign}); });
  check(line.find("input 0 is a tensor of the cuda backend, given to cpu") != std::string::npos, "another backend's tensor -> " + line);
  check(backend.run("softmax", {foreign.to("cpu")}).size() == 1, "the same tensor moved with to(\"cpu\") runs");
  line = refusal([&] { ptk::rt::Backend::open("cuda"); });
  check(line.find("one backend per process") != std::string::npos, "a second backend in the process -> " + line);
  check(ptk::rt::Backend::open("auto").name() == "cpu", "open again: the same module");

  // The cost of a call: a [1,16] softmax, inputs copied in and outputs out through the C boundary.
  const auto x = ptk::rt::Tensor::floats({1, 16}, std::vector<float>(16, 0.5f));
  for (int i = 0; i < 200; ++i) backend.run("softmax", {x});
  const int calls = 5000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) backend.run("softmax", {x});
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
  std::printf("a [1,16] softmax through ptk::rt: %.1f us per call (%d calls)\n", us, calls);
  return failures == 0 ? 0 : 1;
}
