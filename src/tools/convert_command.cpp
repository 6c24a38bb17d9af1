// ptk convert: a model ptk reads (a ptk checkpoint, a Hugging Face directory or a GGUF file: model_source.hpp) to
//   NAME.gguf          a Llama as llama.cpp loads it (nn/gguf_export.hpp, text/gguf_vocab.hpp);
//   a new directory    a Llama as a Hugging Face directory (nn/hf_export.hpp), with its tokenizer's files;
//   NAME.safetensors   a ptk checkpoint (f32, the model alone: nn/checkpoint.hpp), which ptk train can start from.
// GGUF and the directory are written one tensor at a time (a 7B model never sits in memory whole), with progress on
// stderr; a checkpoint holds the model in f32 and is refused before anything is read where that would not fit.
// Needs no Kokkos.
#include <CLI/CLI.hpp>

#include <sys/stat.h>

#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "model_source.hpp"
#include "ptk/core/runtime.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/nn/checkpoint.hpp"
#include "ptk/nn/gguf_export.hpp"
#include "ptk/nn/hf_export.hpp"
#include "ptk/nn/weight_convert.hpp"
#include "ptk/text/gguf_vocab.hpp"
#include "ptk/text/tokenizer.hpp"

namespace ptk::tools {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string gigabytes(std::uint64_t bytes) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(bytes < 100'000'000 ? 2 : 1) << static_cast<double>(bytes) / 1e9 << " GB";
  return s.str();
}

// A line per tenth of the bytes written, for files that take a while.
std::function<void(std::uint64_t, std::uint64_t)> progress_lines() {
  return [reported = 0](std::uint64_t done, std::uint64_t total) mutable {
    const int tenth = static_cast<int>(10 * done / std::max<std::uint64_t>(total, 1));
    if (tenth > reported && total > 100'000'000) {
      reported = tenth;
      std::cerr << "convert: " << gigabytes(done) << " of " << gigabytes(total) << " written\n";
    }
  };
}

const text::Tokenizer& require_tokenizer(const ModelSource& source, const std::string& src, const std::string& form) {
  if (!source.tokenizer)
    throw UsageError{"convert: " + src + " is a byte-vocabulary model, which " + form + " cannot describe (it needs a "
                     "tokenizer): train it with --tokenizer"};
  return *source.tokenizer;
}

std::string tokenizer_line(const ModelSource& source, bool bos) {
  return "; tokenizer " + source.tokenizer->fingerprint() + ", BOS " + (bos ? "added" : "not added");
}

// The directory's tokenizer files and tokenizer_config.json's contents, from the source's tokenizer.
nn::HfTokenizer hf_tokenizer(const text::Tokenizer& t, bool add_bos) {
  nn::HfTokenizer h;
  try {
    h.files = t.hugging_face_files();
  } catch (const Error& e) {
    throw UsageError{std::string("convert: ") + e.what()};
  }
  h.class_name = t.description() == "SentencePiece" ? "LlamaTokenizer" : "GPT2Tokenizer";
  const auto tokens = t.vocabulary().tokens;
  const auto spelled = [&](std::optional<int> id) {
    return id && *id < static_cast<int>(tokens.size()) ? std::optional<std::string>(tokens[*id]) : std::nullopt;
  };
  h.bos = t.special_ids().bos, h.eos = t.special_ids().eos;
  h.bos_text = spelled(h.bos), h.eos_text = spelled(h.eos);
  h.add_bos = add_bos;
  return h;
}

// The model in f32 as a ptk checkpoint (its vocabulary: a checkpoint's own, or the tokenizer's fingerprint).
std::string write_checkpoint(const std::string& dst, const ModelSource& source) {
  const nn::ModelFiles& files = *source.files;
  const nn::DecoderConfig& c = files.config();
  std::uint64_t bytes = 0;
  for (const auto& [name, shape] : nn::parameter_shapes(c)) bytes += nn::stored_bytes(shape, DType::f32);
  const std::uint64_t available = runtime::host_available_bytes();
  if (available && 2 * bytes > available)  // the values, then the file's bytes
    throw UsageError{"convert: a ptk checkpoint holds the model in f32 (" + gigabytes(bytes) + "), written from memory: "
                     "this needs about " + gigabytes(2 * bytes) + ", and " + gigabytes(available) + " is available"};
  io::Safetensors st;
  for (const auto& [name, shape] : nn::parameter_shapes(c)) {
    const std::vector<char> raw = nn::convert_tensor(files.tensor(name), shape, DType::f32);
    std::vector<float> v(raw.size() / sizeof(float));
    std::memcpy(v.data(), raw.data(), raw.size());
    st.tensors[name] = io::SafetensorsTensor{shape, std::move(v)};
  }
  const nn::Vocab vocab = files.vocab() ? *files.vocab()
                                        : nn::Vocab::of_tokenizer(c.vocab_size, source.tokenizer->fingerprint());
  nn::save_model(dst, c, std::move(st), vocab, 0);
  return "a ptk checkpoint (" + nn::to_string(c.arch) + ", f32) from " + files.description() + ", " + gigabytes(bytes) +
         (source.tokenizer ? "; tokenizer " + source.tokenizer->fingerprint() : std::string("; byte vocabulary"));
}

}  // namespace

int convert_command(const Args& args) {
  std::string src, dst, dtype_text, tokenizer_path;
  bool add_bos = false;
  CLI::App app{"Convert a model ptk reads (a ptk checkpoint, a Hugging Face directory or a GGUF file) to GGUF (the "
               "file llama.cpp loads), a Hugging Face directory or a ptk checkpoint.",
               "ptk convert"};
  app.add_option("SRC", src, "a ptk checkpoint (its model file), a Hugging Face directory or a GGUF file")
      ->required()->check(file_name());
  app.add_option("DST", dst, "NAME.gguf (a Llama for llama.cpp), NAME.safetensors (a ptk checkpoint) or a directory "
                             "that does not exist yet (a Hugging Face Llama)")->required()->check(file_name());
  app.add_option("--dtype", dtype_text, "the matrices' type (norm weights stay f32): f32 by default; GGUF takes all, "
                                        "a directory f32, bf16 or f16, a checkpoint f32")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0"}));
  app.add_option("--tokenizer", tokenizer_path, "the model's tokenizer (a checkpoint's: the one it was trained on)")
      ->check(file_name());
  app.add_flag("--add-bos", add_bos, "say that a prompt starts with BOS (ptk train uses none; a directory's "
                                     "tokenizer_config.json and a GGUF file say so themselves)");
  if (parse_command_line(app, args, "convert")) return 0;
  DType dtype = DType::f32;
  if (!dtype_text.empty()) parse_dtype(dtype_text, dtype);  // a name CLI11 checked
  while (dst.size() > 1 && dst.back() == '/') dst.pop_back();
  const bool gguf = ends_with(dst, ".gguf"), checkpoint = ends_with(dst, ".safetensors"), hf = !gguf && !checkpoint;
  if (checkpoint && dtype != DType::f32)
    throw UsageError{"convert: a ptk checkpoint holds f32 (--dtype " + dtype_text + " is for GGUF or a directory)"};
  if (hf && dtype != DType::f32 && dtype != DType::bf16 && dtype != DType::f16)
    throw UsageError{"convert: a Hugging Face directory holds f32, bf16 or f16, not --dtype " + dtype_text};
  if (hf) {
    struct stat st {};
    if (::lstat(dst.c_str(), &st) == 0) throw UsageError{"convert: " + dst + ": exists (ptk writes a new directory)"};
  } else {
    io::check_can_write(dst);
  }

  const ModelSource source = open_model_source("convert", src, tokenizer_path);
  const nn::ModelFiles& files = *source.files;
  if (checkpoint) {
    const std::string written = write_checkpoint(dst, source);  // before anything is printed: it may refuse
    std::cout << "wrote " << dst << ": " << written << "\n";
    return 0;
  }
  const std::string form = gguf ? "GGUF" : "a Hugging Face directory";
  const text::Tokenizer& tokenizer = require_tokenizer(source, src, form);
  if (files.config().arch != nn::Arch::llama)
    throw UsageError{"convert: " + src + " is a " + nn::to_string(files.config().arch) + " model; ptk writes llama "
                     "models as " + form + " so far"};
  const bool bos = add_bos || source.add_bos;
  std::uint64_t size = 0;
  if (gguf) {
    const auto keys = text::gguf_tokenizer_metadata(tokenizer, bos, files.config().vocab_size);
    size = nn::write_gguf_llama(dst, files, dtype, "ptk " + src, keys, progress_lines());
  } else {
    size = nn::write_hf_llama(dst, files, dtype, hf_tokenizer(tokenizer, bos), progress_lines());
  }
  std::cout << "wrote " << dst << ": " << (gguf ? "GGUF v3, llama, " : "Hugging Face LlamaForCausalLM, ")
            << nn::parameter_shapes(files.config()).size() << " tensors (" << dtype_name(dtype) << ", norms f32) from "
            << files.description() << ", " << gigabytes(size) << tokenizer_line(source, bos) << "\n";
  return 0;
}

}  // namespace ptk::tools
