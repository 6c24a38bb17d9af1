// decode sweep: one generation step with a KV cache (nn::forward_cached on one new token per sequence, then the
// device sampler) at a fixed context, for two model shapes, contexts 128 … 1024 and batch 1 and 8. Each
// iteration rewrites the same position, so the context stays what the shape says. GB/s counts the bytes a
// step must read (weights and the cache's keys and values up to the context); tokens/s is batch / step time.
// scripts/decode_torch.py runs the same steps in PyTorch for the comparison (scripts/decode_sweep.sh).
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench_common.hpp"
#include "ptk/core/dtype.hpp"
#include "ptk/nn/inference.hpp"

namespace ptk::bench {

namespace {

struct DecodeModel {
  const char* name;
  nn::DecoderConfig config;
};

// A model for a speed run: each parameter spread as the seeded constructor draws it (weights uniform with its standard
// deviation, Decoder::init_std; norms 1, biases 0), filled on the device by
// random_tensor. The seeded constructor's Box-Muller draws, one after another, took ~90 s of a 1.1 B-parameter
// model's setup; a step's time does not depend on the values.
std::shared_ptr<nn::Decoder> speed_model(const nn::DecoderConfig& c) {
  using Info = nn::Decoder::ParameterInfo;
  std::uint32_t seed = 0;
  return std::make_shared<nn::Decoder>(c, ag::Device::device, [&](const Info& p) {
    if (p.init == Info::Init::one || p.init == Info::Init::zero)
      return ag::Var::from_vector(p.shape, std::vector<float>(static_cast<std::size_t>(element_count(p.shape)),
                                                              p.init == Info::Init::one ? 1.0f : 0.0f),
                                  ag::Device::device, /*requires_grad=*/true);
    const auto half_width = static_cast<float>(nn::Decoder::init_std(c, p.init) * std::sqrt(3.0));
    return ag::Var::from_vector(p.shape, random_tensor(p.shape, ++seed, -half_width, half_width).to_vector(),
                                ag::Device::device, /*requires_grad=*/true);
  });
}

// The benchmark's setup: a model with its linear weights stored as `weights`, a cache of `kv` values, and the
// step, which runs position ctx - 1 against ctx keys (each iteration rewrites the same position), then samples.
std::function<std::function<void()>()> decode_step(const nn::DecoderConfig& c, int B, int ctx, DType weights, DType kv) {
  return [=] {
    auto model = speed_model(c);
    model->store_weights_as(weights);
    auto cache = std::make_shared<nn::KvCache>(nn::make_kv_cache(*model, B, ctx, kv));
    auto sampler = std::make_shared<ag::TokenSampler>();
    auto reuse = std::make_shared<ag::ReuseBuffers>();
    const std::vector<int> next(static_cast<std::size_t>(B), 1);
    const std::vector<float> u(static_cast<std::size_t>(B), 0.5f);
    return std::function<void()>([=] {
      ag::NoGrad no_grad;
      cache->length = ctx - 1;
      (*sampler)(nn::forward_cached(*model, *cache, next, 1), u, {});
    });
  };
}

// Bytes of a cache's keys and values up to ctx.
double cache_bytes(const nn::DecoderConfig& c, int B, int ctx, DType kv) {
  return 2.0 * c.n_layer * static_cast<double>(dtype_bytes(kv, static_cast<std::int64_t>(B) * ctx * (c.n_embd / c.n_head) * nn::kv_heads(c)));
}

}  // namespace

// One step of a TinyLlama-shaped model (22 layers, 2048 wide, 32 heads, 4 kv heads, MLP 5632; 1.0 B parameters in
// its layers; byte vocabulary) with its linear weights stored as each dtype (Decoder::store_weights_as, as `ptk
// generate --dtype`), batch 1: family decode, shape key dtype=. GB/s counts the bytes a step reads: the linear
// weights (the LM head among them) as stored, the embedding and norms in f32, the KV cache (f32) up to ctx.
// Not in the quick sweep: storing each 1 B-parameter model's weights as the dtype takes seconds.
void register_decode_stored() {
  if (sweep().quick) return;
  nn::DecoderConfig c{22, 32, 2048, 1024, 256};
  c.arch = nn::Arch::llama;
  c.n_kv_head = 4;
  c.ffn_hidden = 5632;
  for (const int ctx : {128, 1024})
    for (DType t : {DType::f32, DType::bf16, DType::f16, DType::q8_0, DType::q4_0}) {
      const auto shape = "model=TinyLlama_L22_C2048,ctx=" + std::to_string(ctx) + ",B=1,dtype=" + dtype_name(t);
      double bytes = cache_bytes(c, 1, ctx, DType::f32);
      for (const auto& p : nn::parameter_shapes(c)) {
        const bool linear = p.second.size() == 2 && p.first.find("embed_tokens") == std::string::npos;
        bytes += static_cast<double>(linear ? dtype_bytes(t, element_count(p.second)) : 4 * element_count(p.second));
      }
      add("decode", "ptk", shape, Rate::gbytes, bytes, decode_step(c, 1, ctx, t, DType::f32));
    }
}

// GPT-2 small's shape on bytes at batch 8 and context 1024, where the cache (604 MB in f32) outweighs the weights
// (340 MB), with the cache stored as each type (ptk generate --kv-dtype): shape key kv=. Not in the quick sweep.
void register_decode_kv() {
  if (sweep().quick) return;
  const nn::DecoderConfig c{12, 12, 768, 1024, 256};
  const int B = 8, ctx = 1024;
  double params = 0;
  for (const auto& p : nn::parameter_shapes(c)) params += static_cast<double>(element_count(p.second));
  for (DType kv : {DType::f32, DType::bf16, DType::f16}) {
    const auto shape = "model=L12_H12_C768,ctx=" + std::to_string(ctx) + ",B=" + std::to_string(B) + ",kv=" + dtype_name(kv);
    add("decode", "ptk", shape, Rate::gbytes, sizeof(float) * params + cache_bytes(c, B, ctx, kv),
        decode_step(c, B, ctx, DType::f32, kv));
  }
}

void register_decode() {
  // The default `ptk train` shape with a 1024 block, and GPT-2 small's (85 M parameters in the blocks) on bytes.
  const std::vector<DecodeModel> models{{"L4_H4_C128", {4, 4, 128, 1024, 256}}, {"L12_H12_C768", {12, 12, 768, 1024, 256}}};
  std::vector<int> contexts{128, 256, 512, 1024}, batches{1, 8};
  if (sweep().quick) contexts = {128, 1024}, batches = {1};
  for (const auto& m : models)
    for (const int ctx : contexts)
      for (const int B : batches) {
        const nn::DecoderConfig c = m.config;
        const auto shape = std::string("model=") + m.name + ",ctx=" + std::to_string(ctx) + ",B=" + std::to_string(B);
        double params = 0;
        for (const auto& p : nn::parameter_shapes(c)) params += static_cast<double>(element_count(p.second));
        const double bytes = sizeof(float) * (params + 2.0 * c.n_layer * B * ctx * c.n_embd);
        add("decode", "ptk", shape, Rate::gbytes, bytes, decode_step(c, B, ctx, DType::f32, DType::f32));
      }
  register_decode_stored();
  register_decode_kv();
}

}  // namespace ptk::bench
