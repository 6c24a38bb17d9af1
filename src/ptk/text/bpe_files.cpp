// The byte-level BPE readers of tokenizer_files.hpp: GPT-2's vocab.json + merges.txt, and tokenizer.json.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "ptk/core/quote.hpp"
#include "ptk/core/error.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/text/tokenizer_files.hpp"

namespace ptk::text {

using Json = nlohmann::json;

namespace {

Json parse_json(const std::string& bytes, const std::string& path) {
  try {
    return Json::parse(bytes);
  } catch (const Json::exception& e) {
    const std::string what = one_line(e.what());
    throw IoError(path + ": not valid JSON (" + what + ")");
  }
}

// Places token `text` at `id` in a dense table; an id beyond `limit` (the number of entries: ids are 0..n-1) or
// taken twice is refused before anything is allocated for it.
void place(std::vector<std::string>& tokens, std::vector<bool>& taken, const Json& id, const std::string& text,
           std::size_t limit, const std::string& where) {
  if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || static_cast<std::uint64_t>(id.get<std::int64_t>()) >= limit)
    throw IoError(where + ": the id of " + quote(text) + " is " + id.dump().substr(0, 40) + ", not an integer in [0, " +
                  std::to_string(limit) + ") (ids are 0 to the number of tokens - 1)");
  const auto i = static_cast<std::size_t>(id.get<std::int64_t>());
  if (i >= tokens.size()) tokens.resize(i + 1), taken.resize(i + 1, false);
  if (taken[i]) {
    if (tokens[i] == text) return;  // tokenizer.json lists a vocabulary token again as an added token
    throw IoError(where + ": id " + std::to_string(i) + " is given to both " + quote(tokens[i]) + " and " + quote(text));
  }
  tokens[i] = text, taken[i] = true;
}

void require_dense(const std::vector<bool>& taken, const std::string& where) {
  const auto hole = std::find(taken.begin(), taken.end(), false);
  if (hole != taken.end())
    throw IoError(where + ": no token has id " + std::to_string(hole - taken.begin()) + " (of " +
                  std::to_string(taken.size()) + ")");
}

void read_vocab(const Json& vocab, std::size_t extra, BpeSpec& spec, std::vector<bool>& taken, const std::string& where) {
  if (!vocab.is_object()) throw IoError(where + ": the vocabulary is not a JSON object of token -> id");
  for (const auto& [text, id] : vocab.items()) place(spec.tokens, taken, id, text, vocab.size() + extra, where);
}

std::pair<std::string, std::string> split_merge(const std::string& line, std::size_t number, const std::string& where) {
  const auto space = line.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
      line.find(' ', space + 1) != std::string::npos)
    throw IoError(where + ": merge " + std::to_string(number) + " is " + quote(line) + ", not two tokens with one space");
  return {line.substr(0, space), line.substr(space + 1)};
}

const Json* field(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string type_of(const Json& object, const std::string& where) {
  const Json* type = object.is_object() ? field(object, "type") : nullptr;
  if (type == nullptr || !type->is_string()) throw IoError(where + " has no \"type\" string");
  return type->get<std::string>();
}

[[noreturn]] void unsupported(const std::string& path, const std::string& field_name, const std::string& value) {
  throw InputError(path + ": " + field_name + " " + value + " is not supported (ptk reads byte-level BPE)");
}

// ByteLevel, or a Sequence of Split(Regex | String, "Isolated") ending in ByteLevel.
void read_pre_tokenizer(const Json& pre, BpeSpec& spec, const std::string& path) {
  spec.patterns.clear();
  const std::string type = type_of(pre, path + ": pre_tokenizer");
  if (type == "ByteLevel") {
    spec.add_prefix_space = pre.value("add_prefix_space", false);
    if (pre.value("use_regex", true)) spec.patterns.push_back(kGpt2Pattern);
    return;
  }
  if (type != "Sequence") unsupported(path, "pre_tokenizer type", quote(type));
  const Json* list = field(pre, "pretokenizers");
  if (list == nullptr || !list->is_array() || list->empty() ||
      type_of(list->back(), path + ": the last pre-tokenizer") != "ByteLevel")
    unsupported(path, "pre_tokenizer", "Sequence without ByteLevel last");
  for (std::size_t i = 0; i + 1 < list->size(); ++i) {
    const Json& split = (*list)[i];
    const std::string t = type_of(split, path + ": pre-tokenizer " + std::to_string(i));
    if (t != "Split") unsupported(path, "pre-tokenizer " + std::to_string(i) + " type", quote(t));
    const std::string behavior = split.value("behavior", "");
    if (behavior != "Isolated" || split.value("invert", false))
      unsupported(path, "Split behavior", quote(behavior) + (split.value("invert", false) ? " inverted" : ""));
    const Json* pattern = field(split, "pattern");
    if (pattern != nullptr && pattern->contains("Regex") && (*pattern)["Regex"].is_string()) {
      spec.patterns.push_back((*pattern)["Regex"].get<std::string>());
    } else if (pattern != nullptr && pattern->contains("String") && (*pattern)["String"].is_string()) {
      spec.patterns.push_back("\\Q" + (*pattern)["String"].get<std::string>() + "\\E");
    } else {
      throw IoError(path + ": Split " + std::to_string(i) + " has no Regex or String pattern");
    }
  }
  const Json& last = list->back();
  spec.add_prefix_space = last.value("add_prefix_space", false);
  if (last.value("use_regex", true)) spec.patterns.push_back(kGpt2Pattern);
}

// TemplateProcessing (alone or in a Sequence): a special token before $A is BOS, added; one after it is refused.
void read_post_processor(const Json& post, BpeSpec& spec, const std::string& path) {
  const std::string type = type_of(post, path + ": post_processor");
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const Json* list = field(post, "processors");
    if (list == nullptr || !list->is_array()) throw IoError(path + ": post_processor Sequence has no processors");
    for (const auto& p : *list) read_post_processor(p, spec, path);
    return;
  }
  if (type != "TemplateProcessing") unsupported(path, "post_processor type", quote(type));
  const Json* single = field(post, "single");
  if (single == nullptr || !single->is_array()) throw IoError(path + ": TemplateProcessing has no \"single\" list");
  bool seen_text = false;
  for (const auto& piece : *single) {
    if (piece.contains("Sequence")) { seen_text = true; continue; }
    const Json* special = piece.contains("SpecialToken") ? &piece["SpecialToken"] : nullptr;
    if (special == nullptr || !special->contains("id") || !(*special)["id"].is_string())
      throw IoError(path + ": TemplateProcessing: a piece that is neither Sequence nor SpecialToken");
    if (seen_text) unsupported(path, "post_processor", "that appends a special token after the text");
    const std::string name = (*special)["id"].get<std::string>();
    const auto it = std::find(spec.tokens.begin(), spec.tokens.end(), name);
    if (it == spec.tokens.end()) throw IoError(path + ": TemplateProcessing names " + quote(name) + ", not a token");
    spec.special.bos = static_cast<int>(it - spec.tokens.begin());
    spec.special.add_bos = true;
  }
}

void read_model(const Json& model, std::size_t added, BpeSpec& spec, std::vector<bool>& taken, const std::string& path) {
  if (!model.is_object()) throw IoError(path + ": no \"model\" object");
  const Json* type = field(model, "type");
  if (type != nullptr && (!type->is_string() || *type != "BPE")) unsupported(path, "model type", type->dump().substr(0, 60));
  if (model.value("byte_fallback", false)) unsupported(path, "model", "with byte_fallback (give tokenizer.model)");
  if (const Json* d = field(model, "dropout"); d != nullptr && !(d->is_number() && d->get<double>() == 0))
    unsupported(path, "model dropout", d->dump().substr(0, 60));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const Json* v = field(model, key); v != nullptr && !(v->is_string() && v->get<std::string>().empty()))
      unsupported(path, std::string("model ") + key, v->dump().substr(0, 60));
  spec.ignore_merges = model.value("ignore_merges", false);
  const Json* vocab = field(model, "vocab");
  if (vocab == nullptr) throw IoError(path + ": the model has no \"vocab\"");
  read_vocab(*vocab, added, spec, taken, path);
  const Json* merges = field(model, "merges");
  if (merges == nullptr || !merges->is_array()) throw IoError(path + ": the model has no \"merges\" list");
  spec.merges.reserve(merges->size());
  for (std::size_t i = 0; i < merges->size(); ++i) {
    const Json& m = (*merges)[i];
    if (m.is_string()) spec.merges.push_back(split_merge(m.get<std::string>(), i + 1, path));
    else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
      spec.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    else throw IoError(path + ": merge " + std::to_string(i + 1) + " is " + m.dump().substr(0, 80) + ", not a pair");
  }
}

}  // namespace

std::string read_tokenizer_file(const std::string& path) {
  try {
    return io::read_regular_file(path, kMaxTokenizerFile);
  } catch (const io::FileError& e) {
    throw IoError(e.what());
  }
}

BpeSpec read_gpt2_files(const std::string& vocab_path, const std::string& merges_path) {
  const std::string vocab = read_tokenizer_file(vocab_path);
  return parse_gpt2_files(vocab, read_tokenizer_file(merges_path), vocab_path, merges_path);
}

BpeSpec parse_gpt2_files(const std::string& vocab, const std::string& text, const std::string& vocab_path,
                         const std::string& merges_path) {
  BpeSpec spec;
  spec.origin = vocab_path;
  std::vector<bool> taken;
  read_vocab(parse_json(vocab, vocab_path), 0, spec, taken, vocab_path);
  require_dense(taken, vocab_path);
  std::size_t line_no = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    spec.merges.push_back(split_merge(line, spec.merges.size() + 1, merges_path + " line " + std::to_string(line_no)));
  }
  const auto eot = std::find(spec.tokens.begin(), spec.tokens.end(), "<|endoftext|>");
  if (eot != spec.tokens.end()) {
    const int id = static_cast<int>(eot - spec.tokens.begin());
    spec.added.push_back({id, true});
    spec.special.bos = spec.special.eos = id;
  }
  return spec;
}

namespace {
BpeSpec tokenizer_json_fields(const std::string& bytes, const std::string& path) {
  const Json j = parse_json(bytes, path);
  if (!j.is_object()) throw IoError(path + ": not a tokenizer.json (not a JSON object)");
  BpeSpec spec;
  spec.origin = path;
  if (const Json* n = field(j, "normalizer")) unsupported(path, "normalizer type", quote(type_of(*n, path + ": normalizer")));
  const Json* added = field(j, "added_tokens");
  if (added != nullptr && !added->is_array()) throw IoError(path + ": added_tokens is not a list");
  const std::size_t n_added = added == nullptr ? 0 : added->size();
  std::vector<bool> taken;
  const Json* model = field(j, "model");
  if (model == nullptr) throw IoError(path + ": no \"model\" object");
  read_model(*model, n_added, spec, taken, path);
  const std::size_t limit = (model->contains("vocab") ? (*model)["vocab"].size() : 0) + n_added;
  for (std::size_t i = 0; i < n_added; ++i) {
    const Json& a = (*added)[i];
    if (!a.is_object() || !a.contains("content") || !a["content"].is_string() || !a.contains("id"))
      throw IoError(path + ": added token " + std::to_string(i) + " has no id and content");
    const std::string content = a["content"].get<std::string>();
    for (const char* flag : {"lstrip", "rstrip", "single_word"})
      if (a.value(flag, false)) unsupported(path, "added token " + quote(content) + " with", flag);
    place(spec.tokens, taken, a["id"], content, limit, path);
    spec.added.push_back({a["id"].get<int>(), a.value("special", false)});
  }
  require_dense(taken, path);
  if (const Json* pre = field(j, "pre_tokenizer")) read_pre_tokenizer(*pre, spec, path);
  else unsupported(path, "pre_tokenizer", "null (no byte-level pre-tokenization)");
  if (const Json* dec = field(j, "decoder"); dec != nullptr && type_of(*dec, path + ": decoder") != "ByteLevel")
    unsupported(path, "decoder type", quote(type_of(*dec, path + ": decoder")));
  if (const Json* post = field(j, "post_processor")) read_post_processor(*post, spec, path);
  return spec;
}
}  // namespace

// A field of the wrong JSON type (a string where a flag belongs) surfaces as nlohmann's type_error.
BpeSpec read_tokenizer_json(const std::string& path) { return parse_tokenizer_json(read_tokenizer_file(path), path); }

BpeSpec parse_tokenizer_json(const std::string& bytes, const std::string& path) {
  try {
    return tokenizer_json_fields(bytes, path);
  } catch (const Json::exception& e) {
    const std::string what = one_line(e.what());
    throw IoError(path + ": malformed tokenizer.json (" + what + ")");
  }
}

}  // namespace ptk::text
