#pragma once
// Pre-tokenization: a text cut into pieces by regular expressions, as Hugging Face's Split pre-tokenizer with the
// "Isolated" behaviour (each match a piece, and each gap between matches a piece), applied pattern after pattern.
// The patterns are compiled with PCRE2 (Debian's libpcre2) in UTF and Unicode-property mode. One rewrite makes
// PCRE2 read them as Python's `regex` and Rust's `regex` (the engines the tokenizers were made with) do: \s and \S
// become \p{White_Space} and \P{White_Space}; PCRE2's own \s also takes U+180E, which Unicode's White_Space does not.
#include <string>
#include <string_view>
#include <vector>

namespace ptk::text {

class RegexSplitter {
 public:
  // Throws InputError naming `origin` and the pattern when one does not compile.
  RegexSplitter(const std::vector<std::string>& patterns, const std::string& origin);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // The pieces of `text` (well-formed UTF-8, checked by the caller), in order; their concatenation is `text`.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  void split_one(std::size_t pattern, std::string_view text, std::vector<std::string_view>& out) const;
  std::vector<void*> code_;  // pcre2_code_8*, compiled (and JIT-compiled where PCRE2 can)
};

// \s -> \p{White_Space}, \S -> \P{White_Space}, everywhere but after an escaped backslash (for RegexSplitter).
std::string unicode_whitespace(std::string_view pattern);

}  // namespace ptk::text
