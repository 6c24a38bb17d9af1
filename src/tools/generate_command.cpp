// ptk generate: text from a model with a KV cache (nn/inference.hpp): a ptk checkpoint, a Hugging Face directory or
// a GGUF file (model_source.hpp). The prompt is echoed, the new text streamed as it is drawn up to -n tokens or the
// model's end-of-sequence token, and prefill and decode speeds and the peak resident memory printed at the end (on
// stderr, so that stdout is the text alone).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

#include "checkpoint_tokenizer.hpp"
#include "cli_checks.hpp"
#include "commands.hpp"
#include "device_memory.hpp"
#include "model_source.hpp"
#include "token_ids.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/io/npy.hpp"
#include "ptk/core/allocate.hpp"
#include "ptk/core/dtype.hpp"
#include "ptk/nn/inference.hpp"
#include "ptk/nn/memory_estimate.hpp"
#include "ptk/text/tokenizer.hpp"
#include "train_watch.hpp"

namespace ptk::tools {

namespace {

struct Options {
  std::string model, load, tokenizer, prompt, prompt_file, prompt_ids, logits, device = "default", dtype = "f32", kv_dtype = "f32";
  int n = 256;
  float temperature = 1.0f, top_p = 1.0f;
  int top_k = 0;
  std::uint64_t seed = 1337;
  bool ids = false, ignore_eos = false;
};

// The prompt's bytes, at most the model's block_size of them (a longer prompt cannot run); a file that is not a
// regular one (/dev/zero, a fifo, a directory) is refused before it is read.
std::string read_prompt_file(const std::string& path, int block_size) {
  try {
    return io::read_regular_file(path, static_cast<std::uint64_t>(block_size));
  } catch (const io::FileError& e) {
    throw UsageError{"generate: --prompt-file " + std::string(e.what())};
  }
}

// The prompt's ids; a byte the model never saw is refused with its value and offset.
std::vector<int> encode_prompt(const std::string& prompt, const nn::Vocab& vocab) {
  std::vector<int> ids;
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    const auto b = static_cast<unsigned char>(prompt[i]);
    if (!vocab.contains(b)) {
      std::ostringstream m;
      m << "generate: the prompt's byte 0x" << std::hex << std::setw(2) << std::setfill('0') << static_cast<int>(b)
        << std::dec;
      if (b >= 0x20 && b < 0x7f) m << " ('" << static_cast<char>(b) << "')";
      m << " at offset " << i << " is not in the model's vocabulary of " << vocab.size() << " bytes";
      throw UsageError{m.str()};
    }
    ids.push_back(vocab.id(b));
  }
  return ids;
}

std::string rate(int tokens, double seconds) {
  std::ostringstream s;
  s << tokens << " tokens in " << std::fixed << std::setprecision(1) << seconds * 1e3 << " ms ("
    << std::setprecision(1) << (seconds > 0 ? tokens / seconds : 0.0) << " tokens/s)";
  return s.str();
}

// The model's end-of-sequence id: its files' (config.json, GGUF), else its tokenizer's; none for a byte vocabulary.
std::optional<int> end_of_sequence(const ModelSource& source) {
  if (const auto eos = source.files->eos()) return eos;
  if (source.tokenizer) return source.tokenizer->special_ids().eos;
  return std::nullopt;
}

// A line before the speeds when the model ended its text before -n tokens.
std::string stopped(const nn::GenerateStats& stats, const nn::GenerateOptions& options) {
  if (!options.stop_id || stats.new_tokens >= options.new_tokens) return "";
  return "generate: the model ended its text (end-of-sequence id " + std::to_string(*options.stop_id) + ") after " +
         std::to_string(stats.new_tokens) + " of " + std::to_string(options.new_tokens) + " tokens (--ignore-eos goes on)\n";
}

// The line on stderr: "prefill: N tokens in X ms (Y tokens/s); decode: ...; <device>; peak resident memory Z".
std::string speeds(const nn::GenerateStats& stats, ag::Device device) {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // ru_maxrss: KiB on Linux (the mapped files' pages that were read count too)
  return "prefill: " + rate(stats.prompt_tokens, stats.prefill_seconds) + "; decode: " +
         rate(std::max(0, stats.new_tokens - 1), stats.decode_seconds) + "; " + ag::describe(device) +
         "; peak resident memory " + human_bytes(static_cast<double>(usage.ru_maxrss) * 1024.0);
}

void add_options(CLI::App& app, Options& o, CLI::Option*& n) {
  auto* model = app.add_option("--model", o.model, "a ptk checkpoint, a Hugging Face directory (config.json, safetensors) "
                                                   "or a GGUF file")->check(file_name());
  app.add_option("--load", o.load, "a ptk checkpoint (its model file), as --model takes it")->excludes(model)->check(file_name());
  app.add_flag("--ids", o.ids, "print the new tokens' ids on one line (space-separated) instead of the text");
  app.add_option("--tokenizer", o.tokenizer, "the model's tokenizer: the one a ptk checkpoint was trained on, another "
                                             "for a directory's or a GGUF file's own (checked against its tokens)")->check(file_name());
  auto* prompt = app.add_option("--prompt", o.prompt, "the text to continue (default: a newline)");
  auto* file = app.add_option("--prompt-file", o.prompt_file, "read the prompt from FILE (a regular file)")
                   ->excludes(prompt)->check(file_name());
  app.add_option("--prompt-ids", o.prompt_ids, "the prompt as token ids, space-separated (the same ids to ptk and "
                                               "another engine: no tokenizer, no BOS added)")
      ->excludes(prompt)->excludes(file);
  app.add_option("--logits", o.logits, "also write the prompt's logits, [prompt tokens, vocab] float32, to FILE.npy")
      ->check(file_name());
  n = app.add_option("-n", o.n, "tokens to generate: bytes, or the tokenizer's (at most block_size + 1 - the prompt's length)")
          ->capture_default_str()->check(whole_number(0, 1 << 30));
  app.add_option("--temperature", o.temperature, "0: greedy; below 1 sharper, above 1 flatter")
      ->capture_default_str()->check(temperature());
  app.add_option("--top-k", o.top_k, "draw from the K most likely (0: no limit; ties with the K-th kept)")
      ->capture_default_str()->check(whole_number(0, 1 << 30));
  app.add_option("--top-p", o.top_p, "draw from the smallest most-likely set of probability >= P (1: no limit)")
      ->capture_default_str()->check(finite_in(1e-6, 1, "[1e-6, 1]"));
  app.add_option("--seed", o.seed, "seeds the draws")->capture_default_str()->check(seed_number());
  app.add_option("--device", o.device, "host or default (the GPU in a GPU build)")
      ->capture_default_str()->check(CLI::IsMember({"host", "default"}));
  app.add_option("--dtype", o.dtype, "the linear layers' weights stored as f32, bf16, f16, q8_0 or q4_0 (converted at load)")
      ->capture_default_str()->check(CLI::IsMember({"f32", "bf16", "f16", "q8_0", "q4_0"}));
  app.add_flag("--ignore-eos", o.ignore_eos, "go on past the model's end-of-sequence token (config.json's or GGUF's "
               "eos_token_id, else the tokenizer's) to -n tokens, as a benchmark against a fixed count does");
  app.add_option("--kv-dtype", o.kv_dtype, "the KV cache's keys and values stored as f32, bf16 or f16")
      ->capture_default_str()->check(CLI::IsMember({"f32", "bf16", "f16"}));
}

// The prompt's text and ids (a tokenizer's, BOS first where the model's convention asks, or the checkpoint's bytes).
std::pair<std::string, std::vector<int>> prompt_ids(const Options& o, const ModelSource& source) {
  const nn::DecoderConfig& config = source.files->config();
  if (!o.prompt_ids.empty()) {
    std::vector<int> ids = parse_token_ids("generate: --prompt-ids", o.prompt_ids, config.vocab_size);
    if (ids.empty()) throw UsageError{"generate: --prompt-ids has no ids"};
    return {"", ids};
  }
  const auto& tokenizer = source.tokenizer;
  // A token is at most a few dozen bytes: a prompt file past 64 bytes a position cannot fit the block.
  const int max_prompt_bytes = tokenizer ? 64 * std::min(config.block_size, 1 << 24) : config.block_size;
  std::string text = !o.prompt_file.empty() ? read_prompt_file(o.prompt_file, max_prompt_bytes) : o.prompt;
  if (text.empty()) {
    if (!tokenizer && !source.files->vocab()->contains('\n'))
      throw UsageError{"generate: the model's vocabulary has no newline to start from; give --prompt"};
    text = "\n";
  }
  std::vector<int> ids;
  try {
    ids = tokenizer ? tokenizer->encode_for_model(text, source.add_bos, /*parse_special=*/false)
                    : encode_prompt(text, *source.files->vocab());
  } catch (const InputError& e) {
    throw UsageError{"generate: the prompt: " + std::string(e.what())};
  }
  if (ids.empty()) throw UsageError{"generate: the prompt has no tokens (the tokenizer drops it); give another --prompt"};
  return {text, ids};
}

// Refuses a run whose prompt and -n pass the context, or whose memory (the weights in their run's type, the cache,
// the workspace) does not fit the device, before anything is loaded.
void check_room(Options& o, bool n_given, const ModelSource& source, int P, DType dtype, DType kv_dtype, ag::Device device) {
  const nn::DecoderConfig& config = source.files->config();
  const char* unit = source.tokenizer ? "tokens" : "bytes";
  if (P > config.block_size)
    throw UsageError{"generate: the prompt's " + std::to_string(P) + " " + unit + " exceed the model's context " +
                     std::to_string(config.block_size)};
  const int room = config.block_size + 1 - P;  // the last new token is drawn, never run
  if (!n_given) o.n = std::min(o.n, room);
  if (o.n > room)
    throw UsageError{"generate: the prompt's " + std::to_string(P) + " " + unit + " + -n " + std::to_string(o.n) +
                     " need a context of " + std::to_string(P + o.n - 1) + " positions, beyond the model's context " +
                     std::to_string(config.block_size) + " (at most -n " + std::to_string(room) + ")"};
  // A ptk checkpoint is read whole as f32 before its weights are converted (nn/memory_estimate.hpp).
  const DType counted = source.files->format() == nn::ModelFormat::ptk ? DType::f32 : dtype;
  const auto need = nn::estimate_inference_memory({config.n_layer, config.n_head, config.n_embd, std::max(P, P + o.n - 1),
                                                   config.vocab_size, 1, config.arch, nn::kv_heads(config),
                                                   nn::mlp_hidden(config)},
                                                  kv_dtype, counted);
  refuse_unless_fits("generate", static_cast<double>(need.total_bytes()),
                     "weights " + human_bytes(static_cast<double>(need.parameter_bytes)) + " as " + dtype_name(counted) +
                         ", KV cache " + human_bytes(static_cast<double>(need.kv_cache_bytes)) + ", workspace " +
                         human_bytes(static_cast<double>(need.workspace_bytes + need.staging_bytes)) +
                         "; ptk info --model gives the parts",
                     device);
}

// --logits: the prompt run once more over a cache of its own, every position's logits written as float32.
void write_prompt_logits(const std::string& path, const nn::Decoder& model, const std::vector<int>& ids, DType kv_dtype) {
  nn::KvCache cache = nn::make_kv_cache(model, 1, static_cast<int>(ids.size()), kv_dtype);
  const std::vector<float> logits =
      nn::forward_cached(model, cache, ids, static_cast<int>(ids.size()), /*all_positions=*/true).values();
  io::write_npy(path, {static_cast<std::int64_t>(ids.size()), model.config().vocab_size}, logits.data());
}

}  // namespace

int generate_command(const Args& args) {
  Options o;
  CLI::App app{"Generate text from a model (a ptk checkpoint, a Hugging Face directory, a GGUF file), with a KV cache.",
               "ptk generate"};
  CLI::Option* n = nullptr;
  add_options(app, o, n);
  if (parse_command_line(app, args, "generate")) return 0;
  if (o.model.empty() && o.load.empty()) throw UsageError{"generate: give the model with --model (or --load)"};
  DType dtype = DType::f32, kv_dtype = DType::f32;
  parse_dtype(o.dtype, dtype);  // names CLI11 checked
  parse_dtype(o.kv_dtype, kv_dtype);
  if (!o.logits.empty()) io::check_can_write(o.logits);

  const ag::Device device = ag::parse_device(o.device);
  const std::string path = o.model.empty() ? o.load : o.model;
  if (!o.load.empty()) io::require_regular_file(o.load);  // --load names a checkpoint file, never a directory
  const ModelSource source = open_model_source("generate", path, o.tokenizer);
  const auto [text, ids] = prompt_ids(o, source);
  check_room(o, n->count() > 0, source, static_cast<int>(ids.size()), dtype, kv_dtype, device);
  if (!source.files->note().empty()) std::cerr << "generate: " << path << ": " << source.files->note() << '\n';

  const nn::Decoder model = source.files->load(device, dtype);
  if (!o.logits.empty()) write_prompt_logits(o.logits, model, ids, kv_dtype);
  nn::GenerateOptions options;
  options.new_tokens = o.n;
  options.sampling = {o.temperature, o.top_k, o.top_p};
  options.seed = o.seed;
  options.kv_dtype = kv_dtype;
  if (!o.ignore_eos) options.stop_id = end_of_sequence(source);
  const SampleStream stream(isatty(STDOUT_FILENO) != 0);
  if (o.ids) {  // the ids alone, to compare with another engine's (llama.cpp's) token for token
    std::string line;
    const auto stats = nn::generate(model, ids, 1, options, [&](int, int token) {
      line += (line.empty() ? "" : " ") + std::to_string(token);
    });
    std::cout << line << std::endl;
    check_stdout("generate");
    std::cerr << stopped(stats, options) << speeds(stats, device) << '\n';
    return 0;
  }
  for (unsigned char c : text) stream(c);
  check_stdout("generate");
  // A tokenizer's new tokens are decoded after the prompt's (SentencePiece drops a space only at a text's start).
  std::optional<text::TokenStream> decoder;
  if (source.tokenizer) {
    decoder.emplace(*source.tokenizer);
    for (int id : ids) decoder->push(id);
  }
  const nn::Vocab* bytes = source.files->vocab();
  const auto stats = nn::generate(model, ids, 1, options, [&](int, int token) {
    if (token == options.stop_id) return;  // the end of the text, not a part of it
    if (!decoder) return stream(bytes->byte(token));
    // A model's vocabulary may be wider than its tokenizer's (rows padded to a multiple of 64 or 128): such a row
    // has no text, and shows as U+FFFD.
    const std::string piece = token < source.tokenizer->vocab_size() ? decoder->push(token) : "\xEF\xBF\xBD";
    for (char c : piece) stream(static_cast<unsigned char>(c));
  });
  if (decoder)
    for (char c : decoder->finish()) stream(static_cast<unsigned char>(c));
  std::cout << std::endl;
  check_stdout("generate");
  std::cerr << stopped(stats, options) << speeds(stats, device) << '\n';
  return 0;
}

}  // namespace ptk::tools
