#pragma once
// Training data for the byte-level language model (no Kokkos here: the model layer sees host vectors).
//
// - Vocabulary: the sorted distinct bytes of the text; a byte's token id is its rank.
// - Split: the first 90% of the tokens (rounded down) train, the rest validate.
// - Training batches: B windows of T + 1 tokens at start positions drawn uniformly from
//   [0, n - T - 1] by a seeded 64-bit Mersenne Twister (std::mt19937_64, whose output is fixed by the
//   standard) with rejection sampling, so a seed gives the same batches with every standard library.
//   inputs = window[0, T), targets = window[1, T + 1).
// - Validation: consecutive non-overlapping windows of T + 1 tokens from the start of the validation
//   tokens, [k(T+1), (k+1)(T+1)); a tail shorter than T + 1 is dropped.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ptk/core/error.hpp"

namespace ptk::nn {

class Vocab {
 public:
  Vocab() { clear_ids(); }

  static Vocab from_text(const std::string& text) {
    bool seen[256] = {};
    for (unsigned char c : text) seen[c] = true;
    std::string bytes;
    for (int b = 0; b < 256; ++b)
      if (seen[b]) bytes += static_cast<char>(b);
    return from_bytes(bytes);
  }

  // The inverse of bytes(): a vocabulary stored in a checkpoint. They must be strictly increasing.
  static Vocab from_bytes(const std::string& bytes) {
    Vocab v;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      const auto b = static_cast<unsigned char>(bytes[i]);
      require(i == 0 || static_cast<unsigned char>(bytes[i - 1]) < b,
              "vocab: bytes must be distinct and sorted, got byte ", static_cast<int>(b), " at position ", i);
      v.id_[b] = static_cast<int>(i);
    }
    v.bytes_ = bytes;
    return v;
  }

  // A tokenizer's vocabulary (ptk train --tokenizer): `size` ids, named by the tokenizer's fingerprint (a
  // description and the CRC-32 of its files: text::Tokenizer::fingerprint). Text goes through that tokenizer
  // (ptk/text, a library the model layer does not link), not through this class: its byte methods refuse.
  static Vocab of_tokenizer(int size, const std::string& fingerprint) {
    require(size > 0 && !fingerprint.empty(), "vocab: a tokenizer's vocabulary needs a size and a fingerprint");
    Vocab v;
    v.size_ = size;
    v.tokenizer_ = fingerprint;
    return v;
  }

  int size() const { return tokenizer_.empty() ? static_cast<int>(bytes_.size()) : size_; }
  // "" for a byte vocabulary; else the tokenizer's fingerprint.
  const std::string& tokenizer() const { return tokenizer_; }
  // The vocabulary's bytes in id order (none for a tokenizer's).
  const std::string& bytes() const { return bytes_; }
  bool contains(unsigned char b) const { return id_[b] >= 0; }
  int id(unsigned char b) const {
    require_bytes();
    require(id_[b] >= 0, "vocab: byte ", static_cast<int>(b), " is not in the vocabulary (", size(), " bytes)");
    return id_[b];
  }
  unsigned char byte(int id) const {
    require_bytes();
    require(id >= 0 && id < size(), "vocab: token id ", id, " is outside [0, ", size(), ")");
    return static_cast<unsigned char>(bytes_[static_cast<std::size_t>(id)]);
  }

  std::vector<int> encode(const std::string& text) const {
    std::vector<int> ids;
    ids.reserve(text.size());
    for (unsigned char c : text) ids.push_back(id(c));
    return ids;
  }
  std::string decode(const std::vector<int>& ids) const {
    std::string s;
    s.reserve(ids.size());
    for (int i : ids) s += static_cast<char>(byte(i));
    return s;
  }

 private:
  void clear_ids() {
    for (auto& i : id_) i = -1;
  }
  void require_bytes() const {
    require(tokenizer_.empty(), "vocab: the model's ids are a tokenizer's (", tokenizer_,
            "), not bytes: text goes through that tokenizer");
  }
  std::string bytes_;
  int id_[256];
  int size_ = 0;
  std::string tokenizer_;
};

struct Dataset {
  Vocab vocab;
  std::vector<int> train, val;

  static Dataset from_text(const std::string& text) { return from_text(text, Vocab::from_text(text)); }

  // With a given vocabulary (a loaded model's): a byte of text outside it is an error that names it.
  static Dataset from_text(const std::string& text, const Vocab& vocab) {
    Dataset d;
    d.vocab = vocab;
    const auto tokens = d.vocab.encode(text);
    const auto cut = static_cast<std::ptrdiff_t>(tokens.size() * 9 / 10);
    d.train.assign(tokens.begin(), tokens.begin() + cut);
    d.val.assign(tokens.begin() + cut, tokens.end());
    return d;
  }

  // Tokens already made (by a tokenizer, ptk train --tokenizer): split as from_text splits.
  static Dataset from_tokens(const std::vector<int>& tokens, const Vocab& vocab) {
    Dataset d;
    d.vocab = vocab;
    for (int t : tokens) require(t >= 0 && t < vocab.size(), "data: token id ", t, " is outside the vocabulary of ", vocab.size());
    const auto cut = static_cast<std::ptrdiff_t>(tokens.size() * 9 / 10);
    d.train.assign(tokens.begin(), tokens.begin() + cut);
    d.val.assign(tokens.begin() + cut, tokens.end());
    return d;
  }

  static Dataset from_file(const std::string& path) { return from_text(read_text(path)); }

  // ptk reads a text whole (and holds its tokens as ints, 4 bytes a byte): a text larger than this is
  // refused rather than read until memory runs out (`--data /dev/zero`).
  static constexpr std::int64_t kMaxTextBytes = std::int64_t{1} << 30;

  static std::string read_text(const std::string& path, std::int64_t max_bytes = kMaxTextBytes) {
    std::ifstream in(path, std::ios::binary);
    require(static_cast<bool>(in), "data: cannot open ", path);
    std::string text;
    std::vector<char> chunk(1 << 20);
    while (in) {
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
      require(static_cast<std::int64_t>(text.size()) <= max_bytes, "data: ", path, " is larger than the limit of ",
              max_bytes, " bytes on a training text (it is read whole into memory)");
    }
    require(!in.bad(), "data: cannot read ", path);
    require(!text.empty(), "data: ", path, " is empty");
    return text;
  }
};

// B windows, row-major [B, T]: inputs[b*T + t] predicts targets[b*T + t].
struct Batch {
  int B = 0, T = 0;
  std::vector<int> inputs, targets;
};

inline Batch make_batch(const std::vector<int>& tokens, const std::vector<std::int64_t>& starts, int T) {
  Batch batch;
  batch.B = static_cast<int>(starts.size());
  batch.T = T;
  for (auto s : starts) {
    require(s >= 0 && s + T + 1 <= static_cast<std::int64_t>(tokens.size()), "data: window [", s, ", ", s + T + 1,
            ") is outside the ", tokens.size(), " tokens");
    for (int t = 0; t < T; ++t) {
      batch.inputs.push_back(tokens[static_cast<std::size_t>(s + t)]);
      batch.targets.push_back(tokens[static_cast<std::size_t>(s + t + 1)]);
    }
  }
  return batch;
}

// Draws training batches from `tokens`, which must outlive the sampler (it keeps a reference). Its state is
// (seed, draws): `draws` counts the generator's outputs consumed so far (rejections included), so a sampler
// rebuilt with the same seed and draws continues exactly where the first one stopped (a resumed run).
class BatchSampler {
 public:
  BatchSampler(const std::vector<int>& tokens, int B, int T, std::uint64_t seed, std::uint64_t draws = 0)
      : tokens_(tokens), B_(B), T_(T), rng_(seed), draws_(draws) {
    require(B > 0 && T > 0, "data: batch size and context length must be positive, got B=", B, ", T=", T);
    require(static_cast<std::int64_t>(tokens.size()) >= static_cast<std::int64_t>(T) + 1, "data: ", tokens.size(),
            " training tokens cannot fill one window of T + 1 = ", static_cast<std::int64_t>(T) + 1);
    rng_.discard(draws);
  }

  // The start positions of the next batch (drawn, then returned): uniform in [0, n - T - 1].
  std::vector<std::int64_t> next_starts() {
    const auto span = static_cast<std::uint64_t>(tokens_.size()) - static_cast<std::uint64_t>(T_);  // choices
    const std::uint64_t limit = std::mt19937_64::max() - std::mt19937_64::max() % span;  // reject the biased top
    std::vector<std::int64_t> starts;
    for (int b = 0; b < B_; ++b) {
      std::uint64_t r;
      do r = rng_(), ++draws_; while (r >= limit);
      starts.push_back(static_cast<std::int64_t>(r % span));
    }
    return starts;
  }

  Batch next() { return make_batch(tokens_, next_starts(), T_); }
  std::uint64_t draws() const { return draws_; }

 private:
  const std::vector<int>& tokens_;
  int B_, T_;
  std::mt19937_64 rng_;
  std::uint64_t draws_;
};

// Start positions of the validation windows: 0, T+1, 2(T+1), … while a whole window fits.
inline std::vector<std::int64_t> validation_starts(const std::vector<int>& tokens, int T) {
  require(T > 0, "data: context length must be positive, got T=", T);
  std::vector<std::int64_t> starts;
  for (std::int64_t s = 0; s + T + 1 <= static_cast<std::int64_t>(tokens.size()); s += T + 1) starts.push_back(s);
  return starts;
}

// The validation windows in batches of at most B (the last batch may be smaller).
inline std::vector<Batch> validation_batches(const std::vector<int>& tokens, int B, int T) {
  require(B > 0, "data: batch size must be positive, got B=", B);
  const auto starts = validation_starts(tokens, T);
  std::vector<Batch> batches;
  for (std::size_t i = 0; i < starts.size(); i += static_cast<std::size_t>(B)) {
    const auto end = std::min(starts.size(), i + static_cast<std::size_t>(B));
    batches.push_back(make_batch(tokens, std::vector<std::int64_t>(starts.begin() + static_cast<std::ptrdiff_t>(i),
                                                                   starts.begin() + static_cast<std::ptrdiff_t>(end)), T));
  }
  return batches;
}

}  // namespace ptk::nn
