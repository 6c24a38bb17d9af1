// Models ptk did not write (nn/model_files.hpp, nn/hf_config.hpp, nn/weight_convert.hpp): config.json's fields and
// refusals, each layout conversion by hand (GPT-2's transposed Conv1D, GGUF's interleaved rope rows), stored weights
// equal to the ones store_as makes, and round trips through GGUF and a Hugging Face directory written here. PyTorch's
// own directories against its forward pass: tests/hf_torch_test.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ptk/autograd/functions.hpp"
#include "ptk/core/half.hpp"
#include "ptk/nn/checkpoint.hpp"
#include "ptk/nn/gguf_export.hpp"
#include "ptk/nn/hf_config.hpp"
#include "ptk/nn/model_files.hpp"
#include "ptk/nn/weight_convert.hpp"

namespace {

using namespace ptk;
constexpr ag::Device kHost = ag::Device::host;

std::string_view bytes_of(const std::vector<float>& v) { return {reinterpret_cast<const char*>(v.data()), v.size() * 4}; }

nn::StoredTensor f32_tensor(const std::vector<float>& v, std::vector<std::int64_t> shape) {
  return {"t", DType::f32, std::move(shape), bytes_of(v), false, 0};
}

std::vector<float> floats_of(const std::vector<char>& bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

TEST(WeightConvert, TransposedMatrixIsReadByColumns) {
  std::vector<float> stored(15);  // [in 3, out 5], GPT-2's Conv1D
  for (int i = 0; i < 15; ++i) stored[i] = static_cast<float>(i);
  auto t = f32_tensor(stored, {3, 5});
  t.transposed = true;
  const auto out = floats_of(nn::convert_tensor(t, {5, 3}, DType::f32));
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(out[r * 3 + c], stored[c * 5 + r]) << r << ", " << c;
}

// Two heads of D = 4: rotate-half rows (a0, a1, b0, b1) rotate the pairs (a0, b0), (a1, b1); llama.cpp's order keeps
// each pair side by side, (a0, b0, a1, b1). Written so, and read back to where they were.
TEST(WeightConvert, RopeRowsInterleaveByHandAndBack) {
  std::vector<float> rows(16);  // [8, 2]: row r holds (r, r)
  for (int i = 0; i < 16; ++i) rows[i] = static_cast<float>(i / 2);
  const auto gguf = floats_of(nn::convert_tensor(f32_tensor(rows, {8, 2}), {8, 2}, DType::f32, /*interleave_heads=*/2));
  const std::vector<float> order = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int g = 0; g < 8; ++g) EXPECT_EQ(gguf[2 * g], order[g]) << "row " << g;
  auto back = f32_tensor(gguf, {8, 2});
  back.rope_heads = 2;
  EXPECT_EQ(floats_of(nn::convert_tensor(back, {8, 2}, DType::f32)), rows);
}

TEST(WeightConvert, SixteenBitSourcesWidenExactly) {
  const std::vector<std::uint16_t> bits = {0x3f80, 0xc000, 0x0001, 0x7f7f, 0x8000, 0x4049};
  const nn::StoredTensor b{"b", DType::bf16, {2, 3}, {reinterpret_cast<const char*>(bits.data()), 12}, false, 0};
  const auto wide = floats_of(nn::convert_tensor(b, {2, 3}, DType::f32));
  for (int i = 0; i < 6; ++i) {
    std::uint32_t u = static_cast<std::uint32_t>(bits[i]) << 16;
    float expect;
    std::memcpy(&expect, &u, 4);
    EXPECT_EQ(wide[i], expect) << i;
  }
  const std::vector<std::uint16_t> f16_bits = {0x3c00, 0xc000, 0x0001, 0x7e01, 0x8000, 0x7c00};
  const nn::StoredTensor h{"h", DType::f16, {2, 3}, {reinterpret_cast<const char*>(f16_bits.data()), 12}, false, 0};
  const auto half = floats_of(nn::convert_tensor(h, {2, 3}, DType::f32));  // 1, -2, 2^-24 (subnormal), NaN, -0, inf
  EXPECT_EQ(half[0], 1.0f);
  EXPECT_EQ(half[1], -2.0f);
  EXPECT_EQ(half[2], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isnan(half[3]));
  EXPECT_TRUE(half[4] == 0.0f && std::signbit(half[4]));
  EXPECT_EQ(half[5], INFINITY);
}

void expect_refused(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "not refused: " << needle;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(WeightConvert, RefusesWhatTheTypeCannotHold) {
  std::vector<float> v(64, 0.5f);
  v[37] = 1e6f;
  expect_refused([&] { nn::convert_tensor(f32_tensor(v, {2, 32}), {2, 32}, DType::f16); },
                 "t holds 1e+06 at [1, 5], which f16 cannot store");
  v[37] = NAN;
  expect_refused([&] { nn::convert_tensor(f32_tensor(v, {2, 32}), {2, 32}, DType::q8_0); }, "which q8_0 cannot store");
  expect_refused([&] { nn::convert_tensor(f32_tensor(v, {4, 16}), {4, 16}, DType::q4_0); },
                 "q4_0 stores the last dimension in blocks of 32, and its rows have 16 values");
  expect_refused([&] { nn::convert_tensor(f32_tensor(v, {4, 16}), {16, 4}, DType::f32); },
                 "t has shape [4, 16], but the model's config needs [16, 4]");
}

// A weight made from a file in q8_0, q4_0, bf16 or f16 multiplies exactly as the one Var::store_as converts on the
// device (the same rounding, the same blocks).
TEST(WeightConvert, StoredWeightEqualsStoreAs) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> w(6 * 64), x(64);
  for (auto& v : w) v = normal(rng);
  for (auto& v : x) v = normal(rng);
  ag::NoGrad no_grad;
  const ag::Var input = ag::Var::from_vector({1, 64}, x, kHost);
  for (DType t : {DType::bf16, DType::f16, DType::q8_0, DType::q4_0}) {
    const ag::Var made = nn::make_parameter(f32_tensor(w, {6, 64}), {6, 64}, t, kHost);
    const ag::Var converted = ag::Var::from_vector({6, 64}, w, kHost);
    converted.store_as(t);
    EXPECT_EQ(made.dtype(), t);
    EXPECT_EQ(ag::linear(input, made).values(), ag::linear(input, converted).values()) << dtype_name(t);
  }
}

nn::HfConfig hf(const std::string& json) { return nn::parse_hf_config(json, "config.json"); }

TEST(HfConfig, LlamaFieldsAndDefaults) {
  const auto c = hf(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 160,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "eos_token_id": [7, 8],
      "tie_word_embeddings": true, "rope_scaling": null})");
  EXPECT_EQ(c.config.arch, nn::Arch::llama);
  EXPECT_EQ(nn::kv_heads(c.config), 4);  // num_key_value_heads absent: every head
  EXPECT_EQ(c.config.block_size, 2048);   // LlamaConfig's default max_position_embeddings
  EXPECT_FLOAT_EQ(c.config.norm_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.config.rope_base, 10000.0f);
  EXPECT_EQ(nn::mlp_hidden(c.config), 160);
  EXPECT_TRUE(c.tied_head);
  EXPECT_EQ(c.eos, 7);  // the first of a list
  EXPECT_EQ(nn::hf_tensor_name(c, "lm_head.weight").candidates.front(), "model.embed_tokens.weight");
}

TEST(HfConfig, MistralWindowCapsTheContext) {
  const auto c = hf(R"({"architectures": ["MistralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
      "max_position_embeddings": 32768, "sliding_window": 4096})");
  EXPECT_EQ(c.config.block_size, 4096);
  EXPECT_NE(c.note.find("context capped at sliding_window 4096"), std::string::npos);
  const auto none = hf(R"({"architectures": ["MistralForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 10, "sliding_window": null})");
  EXPECT_EQ(none.config.block_size, 32768);
  EXPECT_EQ(none.note, "");
}

TEST(HfConfig, Gpt2ConvOneDAndPrefix) {
  const auto c = hf(R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 48, "n_layer": 2, "n_head": 3,
      "n_positions": 64, "vocab_size": 300, "n_inner": null})");
  EXPECT_EQ(c.config.arch, nn::Arch::gpt2);
  EXPECT_EQ(c.config.block_size, 64);
  const auto fc = nn::hf_tensor_name(c, "h.1.mlp.c_fc.weight");
  EXPECT_TRUE(fc.transposed);
  EXPECT_EQ(fc.candidates, (std::vector<std::string>{"transformer.h.1.mlp.c_fc.weight", "h.1.mlp.c_fc.weight"}));
  EXPECT_FALSE(nn::hf_tensor_name(c, "h.1.mlp.c_fc.bias").transposed);
}

TEST(HfConfig, RefusalsNameTheFieldAndValue) {
  const std::string llama = R"("architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 160,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{" + llama + R"(, "rope_scaling": {"type": "yarn"}})", R"(rope_scaling = {"type":"yarn"} is not supported)"},
      {"{" + llama + R"(, "hidden_act": "relu"})", R"(hidden_act = "relu" is not supported)"},
      {"{" + llama + R"(, "attention_bias": true})", "attention_bias = true is not supported"},
      {"{" + llama + R"(, "num_key_value_heads": 3})", "not a multiple of kv_heads = 3"},
      {"{" + llama + R"(, "head_dim": 8})", "head_dim = 8 is not supported"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 1e20})", "hidden_size = 1e+20 is not a positive integer"},
      {R"({"architectures": ["LlamaForCausalLM"], "hidden_size": -4})", "hidden_size = -4 is not a positive integer"},
      {R"({"architectures": ["LlamaForCausalLM"]})", "hidden_size is missing"},
      {R"({"architectures": ["A", "B"]})", "is not one architecture's name"},
      {R"({"architectures": ["BertModel"]})", R"(architectures = ["BertModel"] is not supported)"},
      {R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 48, "n_layer": 2, "n_head": 3, "vocab_size": 9,
          "activation_function": "relu"})", R"(activation_function = "relu" is not supported)"},
      {R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 48, "n_layer": 2, "n_head": 3, "vocab_size": 9,
          "tie_word_embeddings": false})", "tie_word_embeddings = false is not supported"},
      {"[1, 2]", "not a JSON object"},
      {"{\"a\": ", "not valid JSON"}};
  for (const auto& c : cases) expect_refused([&] { hf(c.first); }, c.second);  // nvcc: no captured bindings
}

class ModelFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = testing::TempDir() + "ptk_model_files.XXXXXX";
    ASSERT_NE(mkdtemp(name.data()), nullptr);
    dir_ = name;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  // A small llama saved as a ptk checkpoint.
  std::string checkpoint(const nn::Decoder& model) {
    const std::string path = dir_ + "/m.safetensors";
    nn::save_model(path, model, nn::Vocab::of_tokenizer(model.config().vocab_size, "test crc32:00000000"), 0);
    return path;
  }
  static nn::DecoderConfig llama() {
    nn::DecoderConfig c{2, 4, 32, 16, 40};
    c.arch = nn::Arch::llama;
    c.n_kv_head = 2;
    return c;
  }
  std::string dir_;
};

// ptk checkpoint -> GGUF (f32, bf16) -> ptk: every parameter back where it was, exactly (f32) or rounded to bf16
// (the matrices; the norms stay f32), through the q/k rows' interleaving and back.
TEST_F(ModelFilesTest, GgufRoundTrip) {
  const nn::Decoder model(llama(), kHost, 9);
  const nn::ModelFiles ckpt(checkpoint(model));
  for (DType t : {DType::f32, DType::bf16}) {
    const std::string gguf = dir_ + "/m." + dtype_name(t) + ".gguf";
    nn::write_gguf_llama(gguf, ckpt, t, "test", {}, {});
    const nn::ModelFiles files(gguf);
    EXPECT_EQ(files.format(), nn::ModelFormat::gguf);
    EXPECT_EQ(files.stored_dtype(), t);
    EXPECT_EQ(files.config().n_kv_head, 2);
    const nn::Decoder back = files.load(kHost, DType::f32);
    for (std::size_t i = 0; i < model.parameters().size(); ++i) {
      const auto& [name, var] = model.parameters()[i];
      std::vector<float> expect = var.values();
      if (t == DType::bf16 && var.shape().size() == 2)
        for (auto& v : expect) v = to_float(to_bf16(v));
      EXPECT_EQ(back.parameters()[i].second.values(), expect) << name << " via " << dtype_name(t);
    }
  }
}

// A Hugging Face directory written here: BF16 safetensors, a tied head (no lm_head.weight), an extra buffer.
TEST_F(ModelFilesTest, HuggingFaceDirectoryWithTiedHead) {
  const nn::Decoder model(llama(), kHost, 4);
  nlohmann::json header;
  std::string data;
  for (const auto& [name, var] : model.parameters()) {
    if (name == "lm_head.weight") continue;
    const std::size_t begin = data.size();
    for (float v : var.values()) {
      const std::uint16_t b = to_bf16(v).bits;
      data.append(reinterpret_cast<const char*>(&b), 2);
    }
    header[name] = {{"dtype", "BF16"}, {"shape", var.shape()}, {"data_offsets", {begin, data.size()}}};
  }
  header["model.rotary_emb.inv_freq"] = {{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {data.size(), data.size() + 16}}};
  data.append(16, '\0');
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t n = text.size();
  std::ofstream(dir_ + "/model.safetensors", std::ios::binary)
      << std::string(reinterpret_cast<const char*>(&n), 8) << text << data;
  std::ofstream(dir_ + "/config.json") << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 32,
      "intermediate_size": )" << nn::mlp_hidden(model.config()) << R"(, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "vocab_size": 40, "max_position_embeddings": 16, "rms_norm_eps": 1e-5,
      "tie_word_embeddings": true})";
  const nn::ModelFiles files(dir_);
  EXPECT_EQ(files.format(), nn::ModelFormat::hugging_face);
  EXPECT_EQ(files.stored_dtype(), DType::bf16);
  const nn::Decoder back = files.load(kHost, DType::f32);
  std::vector<float> embed = model.parameter("model.embed_tokens.weight").values();
  for (auto& v : embed) v = to_float(to_bf16(v));
  EXPECT_EQ(back.parameter("lm_head.weight").values(), embed);
  EXPECT_EQ(back.parameter("model.embed_tokens.weight").values(), embed);
  const nn::Decoder stored = files.load(kHost, DType::bf16);
  EXPECT_EQ(stored.parameter("model.layers.1.mlp.down_proj.weight").dtype(), DType::bf16);
  EXPECT_EQ(stored.parameter("model.norm.weight").dtype(), DType::f32);
}

}  // namespace
