// ptk convert: a Llama to a GGUF file that llama.cpp loads (nn/gguf_export.hpp, text/gguf_vocab.hpp), from a ptk
// checkpoint trained on a tokenizer's ids (ptk train --arch llama --tokenizer), a Hugging Face directory or a GGUF
// file (model_source.hpp). Written one tensor at a time (a 7B model never sits in memory whole), with progress on
// stderr. Needs no Kokkos.
#include <CLI/CLI.hpp>

#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "model_source.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/nn/gguf_export.hpp"
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

}  // namespace

int convert_command(const Args& args) {
  std::string src, dst, dtype_text = "f32", tokenizer_path;
  bool add_bos = false;
  CLI::App app{"Convert a Llama (a ptk checkpoint trained with --tokenizer, a Hugging Face directory or a GGUF file) "
               "to GGUF, the file llama.cpp loads.",
               "ptk convert"};
  app.add_option("SRC", src, "a ptk checkpoint (its model file), a Hugging Face directory or a GGUF file")
      ->required()->check(file_name());
  app.add_option("DST", dst, "the GGUF file to write (NAME.gguf)")->required()->check(file_name());
  app.add_option("--dtype", dtype_text, "the matrices' type (norm weights stay f32)")
      ->capture_default_str()->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0"}));
  app.add_option("--tokenizer", tokenizer_path, "the model's tokenizer (a checkpoint's: the one it was trained on)")
      ->check(file_name());
  app.add_flag("--add-bos", add_bos, "tell llama.cpp to put BOS in front of a prompt (ptk train uses none; a "
                                     "directory's tokenizer_config.json says so itself)");
  if (parse_command_line(app, args, "convert")) return 0;
  if (!ends_with(dst, ".gguf"))
    throw UsageError{"convert: " + dst + ": ptk converts a model to GGUF so far (DST must end in .gguf)"};
  DType dtype = DType::f32;
  parse_dtype(dtype_text, dtype);  // a name CLI11 checked
  io::check_can_write(dst);

  const ModelSource source = open_model_source("convert", src, tokenizer_path);
  const nn::ModelFiles& files = *source.files;
  if (!source.tokenizer)
    throw UsageError{"convert: " + src + " is a byte-vocabulary model, which GGUF cannot describe (llama.cpp needs a "
                     "tokenizer): train it with --tokenizer"};
  if (files.config().arch != nn::Arch::llama)
    throw UsageError{"convert: " + src + " is a " + nn::to_string(files.config().arch) +
                     " model; ptk writes llama models as GGUF so far"};
  const bool bos = add_bos || source.add_bos;
  const auto tokenizer_keys = text::gguf_tokenizer_metadata(*source.tokenizer, bos, files.config().vocab_size);
  int reported = 0;
  const std::uint64_t size = nn::write_gguf_llama(
      dst, files, dtype, "ptk " + src, tokenizer_keys, [&](std::uint64_t done, std::uint64_t total) {
        const int tenth = static_cast<int>(10 * done / std::max<std::uint64_t>(total, 1));
        if (tenth > reported && total > 100'000'000) {  // a line per tenth, for files that take a while
          reported = tenth;
          std::cerr << "convert: " << gigabytes(done) << " of " << gigabytes(total) << " written\n";
        }
      });
  std::cout << "wrote " << dst << ": GGUF v3, llama, " << nn::parameter_shapes(files.config()).size() << " tensors ("
            << dtype_name(dtype) << ", norms f32) from " << files.description() << ", " << gigabytes(size)
            << "; tokenizer " << source.tokenizer->fingerprint() << ", BOS " << (bos ? "added" : "not added") << "\n";
  return 0;
}

}  // namespace ptk::tools
