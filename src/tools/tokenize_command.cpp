// ptk tokenize: text -> ids (one line, space-separated) or, with --decode, ids -> text, with any tokenizer ptk
// reads (ptk/text/tokenizer.hpp), so that it can be compared with another encoder from a shell.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "token_ids.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/text/tokenizer.hpp"

namespace ptk::tools {

namespace {

// The largest text read with --file.
constexpr std::uint64_t kMaxText = 1ull << 30;

}  // namespace

int tokenize_command(const Args& args) {
  std::string tokenizer_path, text, file;
  bool decode = false, no_bos = false, no_parse_special = false;
  CLI::App app{"Encode text to token ids (one line, space-separated), or decode ids to text.", "ptk tokenize"};
  app.add_option("--tokenizer", tokenizer_path,
                 "tokenizer.model, tokenizer.json, vocab.json (+ merges.txt beside it), a directory holding one, "
                 "or a GGUF model (its tokenizer.ggml.* metadata)")
      ->required()->check(file_name());
  auto* text_option = app.add_option("--text", text, "the text (with --decode: the ids)");
  app.add_option("--file", file, "read the text (or the ids) from FILE, a regular file")->excludes(text_option)->check(file_name());
  app.add_flag("--decode", decode, "read ids, print their text");
  app.add_flag("--no-bos", no_bos, "do not put BOS in front even where the tokenizer's convention does");
  app.add_flag("--no-parse-special", no_parse_special,
               "special tokens written in the text (<|endoftext|>) are ordinary text, not their ids");
  if (parse_command_line(app, args, "tokenize")) return 0;
  if (app.count("--text") == 0 && file.empty()) throw UsageError{"tokenize: give --text or --file"};
  if (!file.empty()) {
    try {
      text = io::read_regular_file(file, kMaxText);
    } catch (const io::FileError& e) {
      throw UsageError{"tokenize: --file " + std::string(e.what())};
    }
  }
  std::unique_ptr<text::Tokenizer> tokenizer;
  try {
    tokenizer = text::load_tokenizer(tokenizer_path);
  } catch (const IoError& e) {
    throw IoError{"tokenize: " + std::string(e.what())};
  } catch (const InputError& e) {
    throw InputError{"tokenize: " + std::string(e.what())};
  }
  if (decode) {
    std::cout << tokenizer->decode(parse_token_ids("tokenize --decode", text, tokenizer->vocab_size()));
    return 0;
  }
  const auto ids = tokenizer->encode_for_model(text, !no_bos, !no_parse_special);
  std::string line;
  line.reserve(ids.size() * 6 + 1);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  line += '\n';
  std::cout << line;
  return 0;
}

}  // namespace ptk::tools
