// What every tokenizer shares (decoding, streaming, BOS), and load_tokenizer: which reader a path goes to.
#include "ptk/text/tokenizer.hpp"

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>

#include "ptk/core/quote.hpp"
#include "ptk/core/error.hpp"
#include "ptk/io/gguf.hpp"
#include "ptk/io/mapped_file.hpp"
#include "ptk/io/safetensors.hpp"
#include "ptk/text/gguf_vocab.hpp"
#include "ptk/text/tokenizer_files.hpp"

namespace ptk::text {

void Tokenizer::check_id(int id) const {
  require(id >= 0 && id < vocab_size(), "tokenize: token id ", id, " is outside the vocabulary of ", vocab_size());
}

std::vector<int> Tokenizer::encode_for_model(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int> ids;
  if (add_bos && special_.add_bos && special_.bos) ids.push_back(*special_.bos);
  const auto body = encode(text, parse_special);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  TokenStream stream(*this);
  std::string text;
  for (int id : ids) text += stream.push(id);
  return text + stream.finish();
}

std::string TokenStream::push(int id) {
  const std::string bytes = tokenizer_.token_bytes(id, first_);
  if (!bytes.empty()) first_ = false;
  return utf8_.push(bytes);
}

namespace {

enum class Kind { none, file, directory };

Kind kind_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Kind::none;
  return S_ISDIR(st.st_mode) ? Kind::directory : Kind::file;
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dir_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// vocab.json pairs with merges.txt, encoder.json with vocab.bpe (OpenAI's names for the same two files).
std::unique_ptr<Tokenizer> gpt2_pair(const std::string& dir, const std::string& vocab, const std::string& merges,
                                     std::vector<std::string>& used) {
  const std::string m = dir + "/" + merges;
  if (kind_of(m) == Kind::none)
    throw IoError(dir + "/" + vocab + ": GPT-2's vocabulary needs its merges beside it (" + m + ": not found)");
  used = {dir + "/" + vocab, m};
  return std::make_unique<ByteLevelBpe>(read_gpt2_files(used[0], used[1]));
}

// The tokenizer in the file at `path`; `used` receives the files it was read from (for its fingerprint).
std::unique_ptr<Tokenizer> load_file(const std::string& path, std::vector<std::string>& used) {
  const std::string name = base_name(path), dir = dir_name(path);
  if (name == "vocab.json" || name == "merges.txt") return gpt2_pair(dir, "vocab.json", "merges.txt", used);
  if (name == "encoder.json" || name == "vocab.bpe") return gpt2_pair(dir, "encoder.json", "vocab.bpe", used);
  used = {path};
  if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".json") == 0)
    return std::make_unique<ByteLevelBpe>(read_tokenizer_json(path));
  return read_sentencepiece(path);  // tokenizer.model, or spm_train's <prefix>.model
}

// "<description> crc32:<8 hex digits>" of the files' bytes in order: what a checkpoint records of its tokenizer.
std::string fingerprint_of(const Tokenizer& t, const std::vector<std::string>& files) {
  std::string bytes;
  for (const auto& f : files) bytes += read_tokenizer_file(f);
  return t.description() + " crc32:" + io::crc32_hex(bytes.data(), bytes.size());
}

// tokenizer_config.json: "add_bos_token", and "bos_token" / "eos_token" as a string or {"content": ...}.
void apply_config(const std::string& path, Tokenizer& tokenizer) {
  using Json = nlohmann::json;
  Json config;
  try {
    config = Json::parse(read_tokenizer_file(path));
  } catch (const Json::exception& e) {
    const std::string what = one_line(e.what());
    throw IoError(path + ": not valid JSON (" + what + ")");
  }
  if (!config.is_object()) throw IoError(path + ": not a JSON object");
  SpecialIds ids = tokenizer.special_ids();
  const auto token = [&](const char* key) -> std::optional<int> {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) return std::nullopt;
    const Json& v = it->is_object() && it->contains("content") ? (*it)["content"] : *it;
    if (!v.is_string()) throw IoError(path + ": " + key + " is " + v.dump().substr(0, 60) + ", not a token");
    const auto id = tokenizer.token_id(v.get<std::string>());
    if (!id) throw IoError(path + ": " + key + " " + quote(v.get<std::string>()) + " is not in the vocabulary");
    return id;
  };
  if (const auto bos = token("bos_token")) ids.bos = bos;
  if (const auto eos = token("eos_token")) ids.eos = eos;
  const auto add = config.find("add_bos_token");
  if (add != config.end() && !add->is_null()) {
    if (!add->is_boolean()) throw IoError(path + ": add_bos_token is not true or false");
    ids.add_bos = add->get<bool>();
  }
  tokenizer.set_special_ids(ids);
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  switch (kind_of(path)) {
    case Kind::none:
      throw IoError(path + ": no such file or directory");
    case Kind::file: {
      const std::string name = base_name(path);
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) {  // a model's: mapped, its header read
        const io::MappedFile file(path);
        return tokenizer_from_gguf(io::parse_gguf(file.bytes(), path), path);
      }
      std::vector<std::string> used;
      auto t = load_file(path, used);
      t->fingerprint_ = fingerprint_of(*t, used);
      return t;
    }
    case Kind::directory:
      break;
  }
  std::unique_ptr<Tokenizer> t;
  for (const char* name : {"tokenizer.model", "tokenizer.json", "vocab.json", "encoder.json"}) {
    const std::string file = path + "/" + name;
    if (kind_of(file) != Kind::none) {
      std::vector<std::string> used;
      t = load_file(file, used);
      t->fingerprint_ = fingerprint_of(*t, used);
      break;
    }
  }
  if (!t) throw IoError(path + ": no tokenizer in it (tokenizer.model, tokenizer.json or vocab.json + merges.txt)");
  const std::string config = path + "/tokenizer_config.json";
  if (kind_of(config) != Kind::none) apply_config(config, *t);
  return t;
}

}  // namespace ptk::text
