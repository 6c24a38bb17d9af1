// The BPE oracle: OpenAI's GPT-2 encoder's merge loop, as written in its encoder.py, over strings: find the
// adjacent pair of lowest rank; replace every occurrence of it, left to right, without overlaps; repeat until no
// pair has a rank. Quadratic and slow on purpose (the plainest form of the algorithm), shares nothing with
// ptk/text/byte_level_bpe.cpp (a heap over a linked list of ids), and is for tests only.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ptk {
namespace reference {

// `symbols`: the piece, one string per byte-alphabet character; `ranks`: merge pair -> rank. Returns the tokens.
inline std::vector<std::string> bpe(std::vector<std::string> symbols,
                                    const std::map<std::pair<std::string, std::string>, int>& ranks) {
  while (symbols.size() > 1) {
    int best = -1;
    std::pair<std::string, std::string> pair;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = ranks.find({symbols[i], symbols[i + 1]});
      if (it != ranks.end() && (best < 0 || it->second < best)) best = it->second, pair = it->first;
    }
    if (best < 0) break;
    std::vector<std::string> merged;
    for (std::size_t i = 0; i < symbols.size();) {
      if (i + 1 < symbols.size() && symbols[i] == pair.first && symbols[i + 1] == pair.second) {
        merged.push_back(pair.first + pair.second);
        i += 2;
      } else {
        merged.push_back(symbols[i++]);
      }
    }
    symbols.swap(merged);
  }
  return symbols;
}

}  // namespace reference
}  // namespace ptk
