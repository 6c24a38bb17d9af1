// ptk convert: a ptk checkpoint of a Llama trained on a tokenizer's ids (ptk train --arch llama --tokenizer) to a
// GGUF file that llama.cpp loads (nn/gguf_export.hpp, text/gguf_vocab.hpp). Needs no Kokkos.
#include <CLI/CLI.hpp>

#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli_checks.hpp"
#include "checkpoint_tokenizer.hpp"
#include "commands.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/io/gguf.hpp"
#include "ptk/nn/checkpoint.hpp"
#include "ptk/nn/gguf_export.hpp"
#include "ptk/text/gguf_vocab.hpp"
#include "ptk/text/tokenizer.hpp"

namespace ptk::tools {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

int convert_command(const Args& args) {
  std::string src, dst, dtype_text = "f32", tokenizer_path;
  bool add_bos = false;
  CLI::App app{"Convert a ptk checkpoint (a Llama trained with --tokenizer) to GGUF, the file llama.cpp loads.",
               "ptk convert"};
  app.add_option("SRC", src, "a ptk checkpoint (its model file)")->required()->check(file_name());
  app.add_option("DST", dst, "the GGUF file to write (NAME.gguf)")->required()->check(file_name());
  app.add_option("--dtype", dtype_text, "the matrices' type (norm weights stay f32)")
      ->capture_default_str()->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0"}));
  app.add_option("--tokenizer", tokenizer_path, "the tokenizer the checkpoint was trained on (the same)")->check(file_name());
  app.add_flag("--add-bos", add_bos, "tell llama.cpp to put BOS in front of a prompt (ptk train uses none)");
  if (parse_command_line(app, args, "convert")) return 0;
  if (!ends_with(dst, ".gguf"))
    throw UsageError{"convert: " + dst + ": ptk converts a checkpoint to GGUF so far (DST must end in .gguf)"};
  DType dtype = DType::f32;
  parse_dtype(dtype_text, dtype);  // a name CLI11 checked
  io::check_can_write(dst);

  const nn::Checkpoint checkpoint = nn::load_checkpoint(src, /*with_training_state=*/false);
  if (checkpoint.vocab.tokenizer().empty() && tokenizer_path.empty())
    throw UsageError{"convert: " + src + " is a byte-vocabulary model, which GGUF cannot describe (llama.cpp needs a "
                     "tokenizer): train it with --tokenizer"};
  const auto tokenizer = checkpoint_tokenizer("convert", src, checkpoint.vocab, tokenizer_path);
  if (checkpoint.config.arch != nn::Arch::llama)
    throw UsageError{"convert: " + src + " is a " + nn::to_string(checkpoint.config.arch) +
                     " model; ptk writes llama models as GGUF so far"};
  io::GgufMetadata metadata = nn::gguf_llama_metadata(checkpoint.config, dtype, "ptk " + src);
  for (auto& kv : text::gguf_tokenizer_metadata(*tokenizer, add_bos)) metadata.push_back(std::move(kv));
  const std::vector<nn::GgufTensor> tensors = nn::gguf_llama_tensors(checkpoint, dtype);
  std::vector<io::GgufTensorData> views;
  for (const auto& t : tensors) views.push_back({t.name, t.shape, t.dtype, t.bytes});
  const std::string bytes = io::serialize_gguf(metadata, views);
  io::write_file_atomically(dst, bytes);
  std::cout << "wrote " << dst << ": GGUF v3, llama, " << tensors.size() << " tensors (" << dtype_name(dtype)
            << ", norms f32), " << std::fixed << std::setprecision(2) << static_cast<double>(bytes.size()) / 1e6
            << " MB; tokenizer " << tokenizer->fingerprint() << ", BOS " << (add_bos ? "added" : "not added") << "\n";
  return 0;
}

}  // namespace ptk::tools
