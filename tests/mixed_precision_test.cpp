// Mixed precision (ag::Autocast, nn::Precision): a linear layer under Autocast(bf16|f16) against the float64
// oracle applied to its operands rounded to the type (forward, dX, dW; the output gradient rounded too), the
// loss scaler's rule, and an f16 step whose scaled gradients overflow: skipped, nothing updated, scale halved.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "parity.hpp"
#include "ptk/autograd/functions.hpp"
#include "ptk/autograd/storage.hpp"
#include "ptk/nn/optimizer.hpp"
#include "ptk/nn/train.hpp"
#include "ptk/reference/matmul.hpp"

namespace ptk::test {
namespace {

using ag::Var;

const ag::Device kDevice = ag::Device::device;

// x [R, K] · w [N, K]ᵀ in double (the oracle), on values already rounded as the kernel reads them.
std::vector<float> product(const std::vector<float>& a, const std::vector<float>& b, std::int64_t M, std::int64_t N,
                           std::int64_t K, bool trans_a, bool trans_b) {
  std::vector<float> c(static_cast<std::size_t>(M * N));
  reference::matmul_forward(c.data(), a.data(), b.data(), 1, M, N, K, trans_a, trans_b, false, false);
  return c;
}

template <class E>
void check_autocast_linear() {
  const std::int64_t R = 2 * 17, K = 33, N = 19;  // more rows than the decode kernel takes: the GEMM
  const auto xv = uniform(R * K, -1, 1, "x"), wv = uniform(N * K, -1, 1, "w"), gv = uniform(R * N, -1, 1, "g");
  const Var x = Var::from_vector({2, 17, K}, xv, kDevice, true), w = Var::from_vector({N, K}, wv, kDevice, true);
  const Var g = Var::from_vector({2, 17, N}, gv, kDevice);
  Var y;
  {
    const ag::Autocast autocast(Element<E>::dtype);
    y = ag::linear(x, w);
  }
  // loss = Σ y ⊙ g: dY = g, so dX = g_E · W_E and dW = g_Eᵀ · X_E.
  ag::sum_product(y, g).backward();
  const auto xE = values_of(rounded<E>(xv)), wE = values_of(rounded<E>(wv)), gE = values_of(rounded<E>(gv));
  const char* type = dtype_name(Element<E>::dtype);
  EXPECT_TRUE(all_close(y.values(), product(xE, wE, R, N, K, false, true), {R, N}, tolerance::matmul(K))) << type << " Y";
  EXPECT_TRUE(all_close(x.grad(), product(gE, wE, R, K, N, false, false), {R, K}, tolerance::matmul(N))) << type << " dX";
  EXPECT_TRUE(all_close(w.grad(), product(gE, xE, N, K, R, true, false), {N, K}, tolerance::matmul(R))) << type << " dW";
  // The rounding is real: the f32 product differs (else this test could not tell the paths apart).
  EXPECT_NE(y.values(), product(xv, wv, R, N, K, false, true));
}

TEST(MixedPrecision, LinearMultipliesRoundedOperands) {
  check_autocast_linear<bf16>();
  check_autocast_linear<f16>();
  EXPECT_EQ(ag::autocast_dtype(), DType::f32);  // the scopes restored it
}

TEST(MixedPrecision, AutocastRefusesQuantizedTypes) {
  EXPECT_THROW(ag::Autocast{DType::q8_0}, Error);  // braces: clang (hipcc) reads the parentheses as a declaration
}

TEST(MixedPrecision, LossScaleHalvesOnOverflowAndGrowsAfterGoodSteps) {
  nn::Precision p;
  p.dtype = DType::f16;
  EXPECT_TRUE(p.scaled());
  EXPECT_EQ(p.loss_scale, 65536.0f);
  p.update(true);
  EXPECT_EQ(p.loss_scale, 32768.0f);
  for (int i = 0; i < nn::Precision::growth_interval - 1; ++i) p.update(false);
  EXPECT_EQ(p.loss_scale, 32768.0f);
  p.update(false);
  EXPECT_EQ(p.loss_scale, 65536.0f);
  EXPECT_EQ(p.good_steps, 0);
  nn::Precision bf;
  bf.dtype = DType::bf16;
  EXPECT_FALSE(bf.scaled());
  // A run whose gradients are inf at any scale ends with a clear error instead of a scale that reaches 0.
  p.loss_scale = 0x1p-13f;
  p.update(true);
  EXPECT_EQ(p.loss_scale, 0x1p-14f);
  EXPECT_THROW(p.update(true), Error);
}

const std::string kText =
    "In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
    "darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters.\n";

// A 2-layer model on kText with AdamW and a batch sampler: what a few calls of nn::train_step need.
struct SmallRun {
  nn::Dataset data = nn::Dataset::from_text(kText);
  nn::DecoderConfig config{2, 2, 16, 16, data.vocab.size()};
  nn::Decoder model;
  nn::Adamw adamw;
  nn::BatchSampler sampler;
  explicit SmallRun(std::uint64_t seed)
      : model(config, kDevice, seed), adamw(model.parameters(), nn::AdamwConfig{}),
        sampler(data.train, 3, config.block_size, seed + 1) {}
  nn::StepResult step(float lr, nn::Precision& p) { return nn::train_step(model, adamw, sampler.next(), lr, p); }
};

// An f16 step at a loss scale its output gradients cannot hold (2^40 · |dlogits| > 65504): the norm is inf, the
// step is skipped on the device (weights and moments bitwise unchanged, the step not counted), the scale halves;
// at a scale they can hold the next step updates.
TEST(MixedPrecision, F16OverflowSkipsTheStep) {
  SmallRun run(5);
  const nn::Decoder& model = run.model;
  const nn::Adamw& adamw = run.adamw;
  nn::Precision p;
  p.dtype = DType::f16;
  p.loss_scale = 0x1p40f;
  std::vector<std::vector<float>> before;
  for (const auto& q : model.parameters()) before.push_back(q.second.values());
  const auto skipped = run.step(1e-3f, p);
  EXPECT_TRUE(skipped.skipped);
  EXPECT_FALSE(std::isfinite(skipped.grad_norm));
  EXPECT_TRUE(std::isfinite(skipped.loss));
  EXPECT_EQ(skipped.loss_scale, 0x1p40f);
  EXPECT_EQ(p.loss_scale, 0x1p39f);
  EXPECT_EQ(adamw.steps_taken(), 0);
  for (std::size_t i = 0; i < before.size(); ++i) {
    const auto now = model.parameters()[i].second.values();
    EXPECT_EQ(std::memcmp(now.data(), before[i].data(), now.size() * sizeof(float)), 0) << model.parameters()[i].first;
  }
  for (const auto& m : adamw.state())
    for (float v : m.second.values()) ASSERT_EQ(v, 0.0f) << m.first << ": a skipped step left its moments at zero";

  p.loss_scale = 1024.0f;
  const auto taken = run.step(1e-3f, p);
  EXPECT_FALSE(taken.skipped);
  EXPECT_TRUE(std::isfinite(taken.grad_norm));
  EXPECT_EQ(adamw.steps_taken(), 1);
  EXPECT_NE(model.parameters()[0].second.values(), before[0]);
}

// AdamW writes each weight's 16-bit copy as it updates the weight (kernels::adamw_update over E): after a step the
// copy a forward multiplies with is the new master rounded, bit for bit; Var::assign drops it.
TEST(MixedPrecision, AdamwKeepsTheCopyCurrent) {
  SmallRun run(7);
  const nn::Decoder& model = run.model;
  nn::Precision p;
  p.dtype = DType::bf16;
  for (int i = 0; i < 2; ++i) run.step(1e-2f, p);
  int copies = 0;
  ag::Var with_copy;
  for (const auto& np : model.parameters()) {
    ag::VarImpl& v = np.second.impl();
    if (v.cast_dtype == DType::f32) continue;  // not the weight of a linear layer
    ASSERT_EQ(v.cast_dtype, DType::bf16) << np.first;
    ++copies;
    with_copy = np.second;
    const auto copy = ag::on_device(v.device, [&](auto tag) {
      return v.cast.get<typename decltype(tag)::type>().as_bf16.to_vector();
    });
    const auto want = rounded<bf16>(np.second.values());
    ASSERT_EQ(copy.size(), want.size());
    EXPECT_EQ(std::memcmp(copy.data(), want.data(), want.size() * sizeof(bf16)), 0) << np.first << ": a stale copy";
  }
  ASSERT_GT(copies, 0);
  with_copy.assign(with_copy.values());
  EXPECT_EQ(with_copy.impl().cast_dtype, DType::f32);
}

}  // namespace
}  // namespace ptk::test
