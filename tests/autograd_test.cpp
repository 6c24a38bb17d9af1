// Autograd: every gradient of small expressions (a shared sub-expression, a tensor used twice, a broadcast
// operand, embedding into cross-entropy, attention; the Llama ops rmsnorm, silu, swiglu, mul, rope and grouped-query
// attention) against central finite differences of the same forward,
// and the graph's life cycle: no-grad mode, accumulation, zero_grad, release after backward, errors.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "parity.hpp"
#include "ptk/autograd/functions.hpp"
#include "ptk/autograd/storage.hpp"

namespace ptk::test {
namespace {

using ag::Var;

const ag::Device kHost = ag::Device::host;

Var leaf(const Shape& shape, const std::string& seed, float lo = -1.0f, float hi = 1.0f) {
  return Var::from_vector(shape, uniform(element_count(shape), lo, hi, seed), kHost, /*requires_grad=*/true);
}
Var constant(const Shape& shape, const std::string& seed) {
  return Var::from_vector(shape, uniform(element_count(shape), -1.0f, 1.0f, seed), kHost);
}

// Central differences of the fp32 forward, f'(x) ≈ (f(x+h) - f(x-h)) / 2h, against autograd's gradient of every
// element of every leaf (docs/tolerances.md, "Autograd finite differences").
void expect_gradients_match(const std::vector<Var>& leaves, const std::function<Var()>& loss_fn) {
  for (const auto& l : leaves) l.zero_grad();
  loss_fn().backward();
  const double h = tolerance::finite_difference_step;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const auto grad = leaves[i].grad();
    auto values = leaves[i].values();
    std::vector<float> fd(values.size());
    for (std::size_t j = 0; j < values.size(); ++j) {
      const float x = values[j];
      double f[2];
      for (int side = 0; side < 2; ++side) {
        values[j] = x + static_cast<float>(side ? -h : h);
        leaves[i].assign(values);
        ag::NoGrad no_grad;
        f[side] = loss_fn().item();
      }
      values[j] = x;
      leaves[i].assign(values);
      fd[j] = static_cast<float>((f[0] - f[1]) / (2 * h));
    }
    EXPECT_TRUE(all_close(grad, fd, leaves[i].shape(), tolerance::finite_difference)) << "leaf " << i;
  }
}

TEST(Autograd, SharedSubexpressionAndBias) {
  const Var x = leaf({3, 5}, "ag-x"), w = leaf({4, 5}, "ag-w"), b = leaf({4}, "ag-b");
  const Var r = constant({3, 4}, "ag-r");
  expect_gradients_match({x, w, b}, [&] {
    const Var y = ag::gelu(ag::linear(x, w, b));
    return ag::sum_product(ag::add(y, y), r);  // y feeds add twice
  });
}

TEST(Autograd, TensorUsedTwice) {
  const Var x = leaf({2, 3, 8}, "ag2-x", -2.0f, 2.0f), g = leaf({8}, "ag2-g", 0.5f, 1.5f), b = leaf({8}, "ag2-b");
  const Var r = constant({2, 3, 8}, "ag2-r");
  expect_gradients_match({x, g, b}, [&] { return ag::sum_product(ag::add(x, ag::layernorm(x, g, b)), r); });
}

TEST(Autograd, BroadcastOperand) {
  const Var x = leaf({2, 3, 4}, "ag3-x"), w = leaf({4, 5}, "ag3-w");
  const Var r = constant({2, 3, 5}, "ag3-r");
  expect_gradients_match({x, w}, [&] { return ag::sum_product(ag::matmul(x, w), r); });  // w shared by the batch
  const Var wt = leaf({5, 4}, "ag3-wt");
  expect_gradients_match({x, wt}, [&] { return ag::sum_product(ag::matmul(x, wt, false, true), r); });
}

TEST(Autograd, EmbeddingIntoCrossEntropy) {
  const Var table = leaf({7, 6}, "ag4-t"), w = leaf({7, 6}, "ag4-w");
  const auto ids = ag::Ids::from_vector({2, 4}, {1, 3, 3, 0, 6, 1, 1, 2}, kHost);        // repeated ids
  const auto targets = ag::Ids::from_vector({2, 4}, {2, -100, 5, 0, 6, 3, -100, 1}, kHost);  // two ignored
  expect_gradients_match({table, w}, [&] { return ag::cross_entropy(ag::linear(ag::embedding(ids, table), w), targets); });
}

TEST(Autograd, CausalSelfAttention) {
  const Var qkv = leaf({2, 5, 12}, "ag5-qkv", -2.0f, 2.0f);
  const Var r = constant({2, 5, 4}, "ag5-r");
  // GPT-2's fused qkv: q, k and v are columns of one tensor, whose gradient gets all three.
  expect_gradients_match({qkv}, [&] { return ag::sum_product(ag::causal_attention({qkv, 0}, {qkv, 4}, {qkv, 8}, {2, 2, 2}), r); });
}

// The attention's gradient into an intermediate tensor (a projection): written where q, k and v tile its columns
// (GPT-2's fused qkv), added into zeros where they leave columns out (the first and last here), whose gradient must
// stay zero (a debug build fills an unwritten gradient with NaN).
TEST(Autograd, AttentionIntoAProjection) {
  const Var x = leaf({2, 5, 3}, "ag16-x"), w = leaf({12, 3}, "ag16-w"), wide = leaf({14, 3}, "ag16-wide");
  const Var r = constant({2, 5, 4}, "ag16-r");
  expect_gradients_match({x, w}, [&] {
    const Var qkv = ag::linear(x, w);
    return ag::sum_product(ag::causal_attention({qkv, 0}, {qkv, 4}, {qkv, 8}, {2, 2, 2}), r);
  });
  expect_gradients_match({x, wide}, [&] {
    const Var qkv = ag::linear(x, wide);
    return ag::sum_product(ag::causal_attention({qkv, 1}, {qkv, 5}, {qkv, 9}, {2, 2, 2}), r);
  });
}

TEST(Autograd, GraphIsReleasedAfterBackward) {
  const Var x = leaf({4, 3}, "ag6-x"), w = leaf({2, 3}, "ag6-w");
  std::weak_ptr<ag::VarImpl> hidden;
  Var loss;
  {
    const Var y = ag::gelu(ag::linear(x, w));
    hidden = y.shared();
    loss = ag::sum_product(y, constant({4, 2}, "ag6-r"));
  }
  ASSERT_FALSE(hidden.expired()) << "the graph keeps the intermediate alive until backward";
  EXPECT_TRUE(loss.has_graph());
  loss.backward();
  EXPECT_TRUE(hidden.expired()) << "backward must release the graph and the tensors it saved";
  EXPECT_FALSE(loss.has_graph());
  EXPECT_TRUE(x.has_grad());
  EXPECT_TRUE(w.has_grad());
}

TEST(Autograd, GradientsAccumulateUntilZeroed) {
  const Var x = leaf({5}, "ag7-x");
  const Var r = constant({5}, "ag7-r");
  ag::sum_product(x, r).backward();
  const auto once = x.grad();
  ag::sum_product(x, r).backward();
  const auto twice = x.grad();
  const auto want = r.values();
  for (std::size_t i = 0; i < once.size(); ++i) {
    EXPECT_EQ(once[i], want[i]);
    EXPECT_EQ(twice[i], 2 * want[i]);
  }
  x.zero_grad();
  for (float g : x.grad()) EXPECT_EQ(g, 0.0f);
}

TEST(Autograd, NoGradRecordsNothing) {
  const Var x = leaf({3}, "ag8-x");
  ag::NoGrad no_grad;
  const Var y = ag::sum_product(x, x);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_FALSE(y.has_graph());
  EXPECT_THROW(y.backward(), ptk::Error);
}

TEST(Autograd, ClearErrors) {
  const Var x = leaf({2, 3}, "ag9-x"), w = leaf({4, 5}, "ag9-w");
  try {
    ag::linear(x, w);
    FAIL() << "linear accepted mismatched shapes";
  } catch (const ptk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4, 5]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ag::add(x, w), ptk::Error);
  const Var qkv = leaf({1, 2, 9}, "ag9-q");
  EXPECT_THROW(ag::causal_attention({qkv, 0}, {qkv, 3}, {qkv, 6}, {2, 2, 2}), ptk::Error);  // v's heads pass column 9
  EXPECT_THROW(ag::gelu(x).backward(), ptk::Error);  // not a scalar
  EXPECT_THROW(ag::add(x, Var()), ptk::Error);
}

// The ids' range is checked on their host copy, with the messages of the ops' device checks.
TEST(Autograd, BadIdsNameThePosition) {
  const Var table = leaf({5, 8}, "ag10-t"), logits = leaf({3, 8}, "ag10-l");
  try {
    ag::embedding(ag::Ids::from_vector({3}, {0, 4, 7}, kHost), table);
    FAIL() << "embedding accepted id 7 for 5 rows";
  } catch (const ptk::Error& e) {
    EXPECT_STREQ(e.what(), "embedding: token id 7 at position 2 is outside [0, 5) (table shape [5, 8])");
  }
  try {
    ag::cross_entropy(logits, ag::Ids::from_vector({3}, {0, 8, 2}, kHost));
    FAIL() << "cross_entropy accepted target 8 for 8 classes";
  } catch (const ptk::Error& e) {
    EXPECT_STREQ(e.what(),
                 "cross_entropy: target 8 at row 1 is outside [0, 8) and is not ignore_index -100 (logits shape [3, 8])");
  }
}

TEST(Autograd, TwoDevicesInOneOpIsAnError) {
  if (ag::kOneSpace) GTEST_SKIP() << "host-only build: host and default are one space";
  const Var a = Var::zeros({2}, ag::Device::host), b = Var::zeros({2}, ag::Device::device);
  try {
    ag::add(a, b);
    FAIL() << "add mixed devices";
  } catch (const ptk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("host"), std::string::npos) << e.what();
  }
}

TEST(Autograd, RmsnormSiluMul) {
  const Var x = leaf({2, 3, 8}, "ag11-x", -2.0f, 2.0f), w = leaf({8}, "ag11-w", 0.5f, 1.5f), u = leaf({2, 3, 8}, "ag11-u");
  const Var r = constant({2, 3, 8}, "ag11-r");
  expect_gradients_match({x, w, u}, [&] { return ag::sum_product(ag::mul(ag::silu(ag::rmsnorm(x, w, 1e-5f)), u), r); });
  // mul of a tensor with itself: both gradients land in one buffer.
  expect_gradients_match({u}, [&] { return ag::sum_product(ag::mul(u, u), r); });
  // swiglu, as the MLP uses it; and with one input twice (both gradients into one buffer).
  expect_gradients_match({x, w, u}, [&] { return ag::sum_product(ag::swiglu(ag::rmsnorm(x, w, 1e-5f), u), r); });
  expect_gradients_match({u}, [&] { return ag::sum_product(ag::swiglu(u, u), r); });
}

TEST(Autograd, Rope) {
  for (int offset : {0, 5}) {
    const Var x = leaf({2, 3, 12}, "ag12-x", -2.0f, 2.0f);  // 3 heads of 4, or 2 of 6
    const Var r = constant({2, 3, 12}, "ag12-r");
    for (int heads : {3, 2}) {
      SCOPED_TRACE(::testing::Message() << "pos_offset " << offset << " heads " << heads);
      expect_gradients_match({x}, [&] { return ag::sum_product(ag::rope(x, heads, offset, 100.0f), r); });
    }
  }
}

// Grouped-query attention at kv ratios 1, 2, 4, over odd sequence lengths; T = 17 crosses the kernels' tiles.
TEST(Autograd, CausalAttentionGroupedQuery) {
  const int H = 4, D = 2;
  for (int Hkv : {4, 2, 1})
    for (int T : {1, 3, 17}) {
      const int B = T == 17 ? 1 : 2;
      const Var q = leaf({B, T, H * D}, "ag13-q", -2.0f, 2.0f), k = leaf({B, T, Hkv * D}, "ag13-k", -2.0f, 2.0f),
                v = leaf({B, T, Hkv * D}, "ag13-v");
      const Var r = constant({B, T, H * D}, "ag13-r");
      SCOPED_TRACE(::testing::Message() << "kv_heads " << Hkv << " T " << T << " B " << B);
      expect_gradients_match({q, k, v}, [&] { return ag::sum_product(ag::causal_attention({q}, {k}, {v}, {H, Hkv, D}), r); });
    }
}

// q, k and v as columns of one tensor or as three tensors: the same attention.
TEST(Autograd, CausalAttentionFusedAndSeparateColumnsAgree) {
  const Var qkv = leaf({2, 5, 12}, "ag14-qkv", -2.0f, 2.0f);
  const auto all = qkv.values();
  std::vector<float> parts[3];
  for (std::size_t i = 0; i < all.size(); ++i) parts[i % 12 / 4].push_back(all[i]);
  const Var q = Var::from_vector({2, 5, 4}, parts[0], kHost), k = Var::from_vector({2, 5, 4}, parts[1], kHost),
            v = Var::from_vector({2, 5, 4}, parts[2], kHost);
  EXPECT_EQ(ag::causal_attention({q}, {k}, {v}, {2, 2, 2}).values(),
            ag::causal_attention({qkv, 0}, {qkv, 4}, {qkv, 8}, {2, 2, 2}).values());
}

TEST(Autograd, LlamaOpsClearErrors) {
  const auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const ptk::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const Var q = leaf({1, 3, 8}, "ag15-q"), k = leaf({1, 3, 4}, "ag15-k");
  EXPECT_EQ(message([&] { ag::causal_attention({q}, {k}, {k}, {4, 3, 2}); }),
            "causal_attention: 4 query heads must be a positive multiple of 3 kv heads, of a positive dim (got 2)");
  EXPECT_EQ(message([&] { ag::causal_attention({q}, {k}, {k}, {4, 1, 8}); }),
            "causal_attention: 4 q heads of 8 from column 0 do not fit q rows [1, 3, 8]");
  EXPECT_EQ(message([&] { ag::causal_attention({q}, {k}, {k}, {4, 1, 2}); }), "accepted");  // k [1, 3, 4]: 1 head of 2
  EXPECT_EQ(message([&] { ag::causal_attention({q}, {k, 3}, {k}, {4, 1, 2}); }),
            "causal_attention: 1 k heads of 2 from column 3 do not fit k rows [1, 3, 4]");
  EXPECT_EQ(message([&] { ag::causal_attention({q}, {leaf({1, 2, 4}, "ag15-k2")}, {k}, {4, 1, 2}); }),
            "causal_attention: k rows [1, 2, 4] and q rows [1, 3, 8] must agree in B and T");
  EXPECT_EQ(message([&] { ag::rope(leaf({1, 3, 6}, "ag15-r"), 2); }),
            "rope: x [1, 3, 6] with 2 heads has head dim 3; rope rotates pairs, so it must be even");
  EXPECT_EQ(message([&] { ag::rope(leaf({3, 6}, "ag15-r2"), 2); }),
            "rope: x must be a non-empty [B, T, heads * D], got shape [3, 6]");
  EXPECT_EQ(message([&] { ag::mul(q, k); }), "mul: a has shape [1, 3, 8] but b has shape [1, 3, 4]");
  EXPECT_NE(message([&] { ag::rmsnorm(q, leaf({4}, "ag15-w")); }).find("rmsnorm"), std::string::npos);
}

}  // namespace
}  // namespace ptk::test
