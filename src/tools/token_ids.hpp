#pragma once
// Token ids written as text, whitespace-separated (ptk tokenize --decode, ptk generate --prompt-ids): each a whole
// number below the vocabulary's size, or a UsageError "<what>: '<word>' (word N) is not a token id in [0, V)".
#include <string>
#include <vector>

#include "commands.hpp"
#include "ptk/core/quote.hpp"

namespace ptk::tools {

inline std::vector<int> parse_token_ids(const std::string& what, const std::string& text, int vocab_size) {
  std::vector<int> ids;
  std::size_t at = 0;
  while (true) {
    at = text.find_first_not_of(" \t\r\n", at);
    if (at == std::string::npos) return ids;
    const std::size_t end = std::min(text.find_first_of(" \t\r\n", at), text.size());
    const std::string word = text.substr(at, end - at);
    if (word.size() > 10 || word.find_first_not_of("0123456789") != std::string::npos || std::stoll(word) >= vocab_size)
      throw UsageError{what + ": " + quote(word, 24) + " (word " + std::to_string(ids.size() + 1) +
                       ") is not a token id in [0, " + std::to_string(vocab_size) + ")"};
    ids.push_back(static_cast<int>(std::stoll(word)));
    at = end;
  }
}

}  // namespace ptk::tools
