// A steady-state training step, watched through Kokkos' profiling hooks (Kokkos::Tools callbacks): after
// the first step it allocates and frees nothing, makes exactly two deep copies (the upload of the batch's
// inputs and targets, and the read-back of the loss and the gradient norm) and, on Kokkos 4 (whose fences
// report to tools; 3.4's do not), the same fences every step, all of them inside those deep copies.
// Reusing buffers must not change a single bit of the results. Both in f32 and in mixed precision (bf16, f16).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "kokkos_events.hpp"
#include "parity.hpp"
#include "ptk/nn/train.hpp"

namespace ptk::test {
namespace {

std::vector<int> tokens(int n, int V) {
  std::vector<int> t(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = (i * 7 + i / 5) % V;
  return t;
}

const nn::DecoderConfig kConfig{2, 2, 32, 16, 23};

// Each precision a run trains in: f32, and mixed precision in bf16 and f16 (loss scaling).
std::vector<nn::Precision> precisions() {
  std::vector<nn::Precision> out(3);
  out[1].dtype = DType::bf16;
  out[2].dtype = DType::f16;
  return out;
}

void expect_steady_state(nn::Precision precision) {
  SCOPED_TRACE(std::string("precision ") + dtype_name(precision.dtype));
  const auto data = tokens(2000, kConfig.vocab_size);
  nn::Decoder model(kConfig, ag::Device::host, 3);
  nn::Adamw optimizer(model.parameters(), nn::AdamwConfig{});
  nn::BatchSampler sampler(data, 4, kConfig.block_size, 5);
  Watch watch;
  ag::ReuseBuffers reuse;
  std::vector<Events> steps(4);
  for (auto& events : steps) {
    const Recording recording(events);
    nn::train_step(model, optimizer, sampler.next(), 1e-3f, precision);
  }
  EXPECT_GT(Events::total(steps[0].allocations), 0) << "the hooks saw no allocation in the first step: not reporting?";
  for (std::size_t i = 1; i < steps.size(); ++i) {
    const Events& e = steps[i];
    SCOPED_TRACE("step " + std::to_string(i + 1));
    EXPECT_EQ(Events::total(e.allocations), 0) << Events::list(e.allocations);
    EXPECT_EQ(Events::total(e.deallocations), 0) << Events::list(e.deallocations);
    // The ids upload and the read-back of (loss, gradient norm).
    EXPECT_EQ(Events::total(e.deep_copies), 2) << Events::list(e.deep_copies);
    EXPECT_EQ(e.fences, steps[1].fences) << "fences differ from step 2's:" << Events::list(e.fences);
    // ptk fences nothing itself: every fence is one Kokkos 4 makes inside those two deep copies.
    for (const auto& f : e.fences)
      EXPECT_EQ(f.first.rfind("Kokkos::deep_copy", 0), 0u) << "a fence outside deep_copy: " << f.first;
    EXPECT_LE(Events::total(e.fences), 8) << Events::list(e.fences);
  }
  std::cout << "[ steady state ] step 3: " << Events::total(steps[2].allocations) << " allocations, "
            << Events::total(steps[2].deep_copies) << " deep copies:" << Events::list(steps[2].deep_copies) << "\n  "
            << Events::total(steps[2].fences) << " fences:" << Events::list(steps[2].fences) << "\n";
}

TEST(TrainStep, SteadyStateAllocatesNothing) {
  for (const auto& p : precisions()) expect_steady_state(p);
}

// Reused buffers hold the previous step's values: every kernel that writes an output must write all of it.
TEST(TrainStep, ReusingBuffersChangesNoBit) {
  const auto data = tokens(2000, kConfig.vocab_size);
  for (auto precision : precisions()) {
  const auto run = [&](bool reuse) {
    nn::Precision p = precision;
    nn::Decoder model(kConfig, ag::Device::host, 3);
    nn::Adamw optimizer(model.parameters(), nn::AdamwConfig{});
    nn::BatchSampler sampler(data, 4, kConfig.block_size, 5);
    std::optional<ag::ReuseBuffers> scope;
    if (reuse) scope.emplace();
    std::vector<float> out;
    for (int i = 0; i < 5; ++i) {
      const auto r = nn::train_step(model, optimizer, sampler.next(), 1e-3f, p);
      out.push_back(r.loss);
      out.push_back(r.grad_norm);
    }
    for (const auto& np : model.parameters())
      for (float x : np.second.values()) out.push_back(x);
    return out;
  };
  const auto fresh = run(false), reused = run(true);
  ASSERT_EQ(fresh.size(), reused.size());
  std::size_t differing = 0;
  for (std::size_t i = 0; i < fresh.size(); ++i)
    if (std::memcmp(&fresh[i], &reused[i], sizeof(float)) != 0) ++differing;
  EXPECT_EQ(differing, 0u) << "losses, gradient norms and weights after 5 steps, " << dtype_name(precision.dtype);
  }
}

}  // namespace
}  // namespace ptk::test
