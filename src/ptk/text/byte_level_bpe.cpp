#include "ptk/text/byte_level_bpe.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <queue>

#include "ptk/core/error.hpp"
#include "ptk/core/quote.hpp"

namespace ptk::text {

namespace {

std::string utf8_of(std::uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {  // the alphabet stays below U+0800: two bytes
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::uint64_t pair_key(int left, int right) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

}  // namespace

// Printable Latin-1 bytes stand for themselves; the others (controls, space, 0x7F-0xA0, 0xAD) take U+0100 on, in
// byte order.
const std::array<std::string, 256>& byte_alphabet() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    std::uint32_t next = 256;
    for (std::uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[b] = utf8_of(printable ? b : next++);
    }
    return t;
  }();
  return table;
}

ByteLevelBpe::ByteLevelBpe(BpeSpec spec) : spec_(std::move(spec)) {
  const auto& origin = spec_.origin;
  const int n = static_cast<int>(spec_.tokens.size());
  std::vector<bool> is_added(spec_.tokens.size(), false);
  for (const auto& a : spec_.added) is_added[static_cast<std::size_t>(a.id)] = true;
  // Each token's bytes: an added token is its own text; any other is read back through the byte alphabet.
  std::unordered_map<std::string, unsigned char> byte_of;
  for (int b = 0; b < 256; ++b) byte_of[byte_alphabet()[b]] = static_cast<unsigned char>(b);
  ids_.reserve(spec_.tokens.size());
  bytes_.resize(spec_.tokens.size());
  for (int id = 0; id < n; ++id) {
    const std::string& t = spec_.tokens[static_cast<std::size_t>(id)];
    if (!ids_.emplace(t, id).second)
      throw IoError(origin + ": the token " + quote(t) + " has two ids (" + std::to_string(ids_[t]) + " and " +
                    std::to_string(id) + ")");
    if (is_added[static_cast<std::size_t>(id)]) {
      bytes_[static_cast<std::size_t>(id)] = t;
      continue;
    }
    std::string& out = bytes_[static_cast<std::size_t>(id)];
    for (std::size_t i = 0; i < t.size();) {
      const std::size_t len = (static_cast<unsigned char>(t[i]) < 0x80) ? 1 : 2;
      const auto it = byte_of.find(t.substr(i, len));
      if (it == byte_of.end())
        throw IoError(origin + ": the token " + quote(t) + " (id " + std::to_string(id) +
                      ") has a character outside GPT-2's byte alphabet");
      out += static_cast<char>(it->second);
      i += len;
    }
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = ids_.find(byte_alphabet()[b]);
    if (it == ids_.end() || is_added[static_cast<std::size_t>(it->second)])
      throw IoError(origin + ": the vocabulary has no token for byte " + std::to_string(b) + " ('" +
                    byte_alphabet()[b] + "')");
    byte_ids_[b] = it->second;
  }
  merge_.reserve(spec_.merges.size());
  for (std::size_t rank = 0; rank < spec_.merges.size(); ++rank) {
    const auto& [a, b] = spec_.merges[rank];
    const auto left = ids_.find(a), right = ids_.find(b), result = ids_.find(a + b);
    if (left == ids_.end() || right == ids_.end() || result == ids_.end())
      throw IoError(origin + ": merge " + std::to_string(rank + 1) + " (" + quote(a + " " + b) + ") names " +
                    quote(left == ids_.end() ? a : right == ids_.end() ? b : a + b) +
                    ", which is not in the vocabulary");
    // A pair listed twice keeps its first (lowest) rank, as the reference encoders' dictionaries do.
    merge_.emplace(pair_key(left->second, right->second), std::make_pair(static_cast<int>(rank), result->second));
  }
  splitter_ = std::make_unique<RegexSplitter>(spec_.patterns, origin);
  // Longest first, so that of two added tokens where one starts the other, the longer one wins.
  std::stable_sort(spec_.added.begin(), spec_.added.end(), [&](const BpeSpec::Added& x, const BpeSpec::Added& y) {
    return spec_.tokens[static_cast<std::size_t>(x.id)].size() > spec_.tokens[static_cast<std::size_t>(y.id)].size();
  });
  for (const auto& a : spec_.added) {
    const std::string& t = spec_.tokens[static_cast<std::size_t>(a.id)];
    if (t.empty()) throw IoError(origin + ": added token " + std::to_string(a.id) + " is empty");
    starts_added_[static_cast<unsigned char>(t[0])] = true;
  }
  special_ = spec_.special;
}

ByteLevelBpe::~ByteLevelBpe() = default;

std::optional<int> ByteLevelBpe::token_id(std::string_view text) const {
  const auto it = ids_.find(std::string(text));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

VocabularyExport ByteLevelBpe::vocabulary() const {
  VocabularyExport v;
  v.model = "gpt2";
  v.tokens = spec_.tokens;
  v.types.assign(spec_.tokens.size(), 1);
  for (const auto& a : spec_.added) v.types[static_cast<std::size_t>(a.id)] = a.special ? 3 : 4;
  for (const auto& [left, right] : spec_.merges) v.merges.push_back(left + " " + right);
  if (spec_.patterns == std::vector<std::string>{kGpt2Pattern} && !spec_.add_prefix_space && !spec_.ignore_merges)
    v.pre = "gpt2";
  return v;
}

// vocab.json and merges.txt say GPT-2's regex and one special token, "<|endoftext|>" (bpe_files.cpp reads them so).
std::vector<std::pair<std::string, std::string>> ByteLevelBpe::hugging_face_files() const {
  if (vocabulary().pre != "gpt2")
    throw InputError(spec_.origin + ": its pre-tokenization is not GPT-2's, which vocab.json and merges.txt imply");
  for (const auto& a : spec_.added)
    if (spec_.tokens[static_cast<std::size_t>(a.id)] != "<|endoftext|>" || !a.special)
      throw InputError(spec_.origin + ": added token " + quote(spec_.tokens[static_cast<std::size_t>(a.id)]) +
                       " cannot be written as vocab.json and merges.txt (only GPT-2's <|endoftext|>)");
  nlohmann::json vocab = nlohmann::json::object();
  for (std::size_t id = 0; id < spec_.tokens.size(); ++id) vocab[spec_.tokens[id]] = id;
  std::string merges = "#version: 0.2\n";
  for (const auto& [left, right] : spec_.merges) merges += left + " " + right + "\n";
  try {
    return {{"vocab.json", vocab.dump()}, {"merges.txt", merges}};
  } catch (const nlohmann::json::exception&) {
    throw InputError(spec_.origin + ": a token is not UTF-8, which vocab.json (JSON) cannot hold");
  }
}

std::pair<int, int> ByteLevelBpe::merge_of(int left, int right) const {
  const auto it = merge_.find(pair_key(left, right));
  return it == merge_.end() ? std::make_pair(-1, -1) : it->second;
}

std::string ByteLevelBpe::token_bytes(int id, bool) const {
  check_id(id);
  return bytes_[static_cast<std::size_t>(id)];
}

// The symbols of a piece form a linked list; the heap holds every adjacent pair that has a merge, lowest rank
// first and leftmost among equals. A popped pair whose symbols have changed since it was pushed is stale (a
// symbol's id only ever grows into a longer token, so a changed id never matches again) and is dropped.
void ByteLevelBpe::merge_piece(std::string_view piece, std::vector<int>& out) const {
  if (spec_.ignore_merges) {
    std::string mapped;
    for (char c : piece) mapped += byte_alphabet()[static_cast<unsigned char>(c)];
    if (const auto id = token_id(mapped)) {
      out.push_back(*id);
      return;
    }
  }
  const int n = static_cast<int>(piece.size());
  struct Symbol {
    int id, prev, next;
  };
  std::vector<Symbol> s(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) s[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  struct Candidate {
    int rank, left, left_id, right_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  const auto offer = [&](int left) {
    if (left < 0 || s[left].next < 0) return;
    const int right = s[left].next;
    const int rank = merge_of(s[left].id, s[right].id).first;
    if (rank >= 0) heap.push({rank, left, s[left].id, s[right].id});
  };
  for (int i = 0; i + 1 < n; ++i) offer(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& left = s[c.left];
    if (left.id != c.left_id || left.next < 0 || s[left.next].id != c.right_id) continue;
    Symbol& right = s[left.next];
    left.id = merge_of(c.left_id, c.right_id).second;
    right.id = -1;
    left.next = right.next;
    if (left.next >= 0) s[left.next].prev = c.left;
    offer(left.prev);
    offer(c.left);
  }
  for (int i = 0; i >= 0 && n > 0; i = s[i].next) out.push_back(s[i].id);
}

void ByteLevelBpe::encode_ordinary(std::string_view text, std::vector<int>& out) const {
  if (text.empty()) return;
  std::string prefixed;
  if (spec_.add_prefix_space && text.front() != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  for (const auto piece : splitter_->split(text)) merge_piece(piece, out);
}

std::vector<int> ByteLevelBpe::encode(std::string_view text, bool parse_special) const {
  const std::size_t bad = first_invalid_utf8(text);
  require(bad == text.size(), "tokenize: the text is not UTF-8: byte ", bad, " (of ", text.size(),
          ") starts no well-formed character");
  std::vector<int> out;
  out.reserve(text.size() / 3 + 1);
  std::size_t plain = 0;  // the start of text not yet encoded
  for (std::size_t i = 0; i < text.size() && !spec_.added.empty();) {
    const BpeSpec::Added* hit = nullptr;
    if (!starts_added_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    for (const auto& a : spec_.added) {
      const std::string& t = spec_.tokens[static_cast<std::size_t>(a.id)];
      if ((parse_special || !a.special) && text.compare(i, t.size(), t) == 0) {
        hit = &a;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    encode_ordinary(text.substr(plain, i - plain), out);
    out.push_back(hit->id);
    i += spec_.tokens[static_cast<std::size_t>(hit->id)].size();
    plain = i;
  }
  encode_ordinary(text.substr(plain), out);
  return out;
}

}  // namespace ptk::text
