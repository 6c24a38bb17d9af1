#pragma once
// Text from files in one-line messages. A name, key or token read from a hostile file may hold a newline or bytes
// that are not UTF-8; every refusal that quotes one goes through quote(), so that the message stays one line (the
// fuzz targets hold every reader to that).
#include <cstddef>
#include <string>
#include <string_view>

namespace ptk {

// The offset of the first byte that is not part of well-formed UTF-8 (overlongs, surrogates, > U+10FFFF and
// truncated sequences are not), or text.size() when all of it is.
inline std::size_t first_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) { ++i; continue; }
    int n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) n = 1;
    else if (b >= 0xE0 && b <= 0xEF) { n = 2; if (b == 0xE0) lo = 0xA0; if (b == 0xED) hi = 0x9F; }
    else if (b >= 0xF0 && b <= 0xF4) { n = 3; if (b == 0xF0) lo = 0x90; if (b == 0xF4) hi = 0x8F; }
    else return i;
    if (text.size() - i <= static_cast<std::size_t>(n)) return i;
    for (int k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      if (c < lo || c > hi) return i;
      lo = 0x80, hi = 0xBF;
    }
    i += n + 1;
  }
  return text.size();
}

// A library's message (nlohmann's JSON errors span lines) as part of a one-line refusal: newlines become spaces.
inline std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n') c = ' ';
  return text;
}

// `text` in single quotes: control characters, DEL and bytes that are not well-formed UTF-8 written as \n, \t,
// \xNN, a quote or backslash escaped, cut after max_bytes with "...".
inline std::string quote(std::string_view text, std::size_t max_bytes = 64) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "'";
  const std::string_view shown = text.substr(0, max_bytes);
  for (std::size_t i = 0; i < shown.size();) {
    const auto b = static_cast<unsigned char>(shown[i]);
    const std::size_t valid = first_invalid_utf8(shown.substr(i, b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4));
    if (b >= 0x80 && valid > 0) {  // a whole well-formed character
      out.append(shown.substr(i, valid));
      i += valid;
      continue;
    }
    if (b == '\n') out += "\\n";
    else if (b == '\t') out += "\\t";
    else if (b == '\\' || b == '\'') out += '\\', out += static_cast<char>(b);
    else if (b < 0x20 || b >= 0x7F) out += "\\x", out += hex[b >> 4], out += hex[b & 15];
    else out += static_cast<char>(b);
    ++i;
  }
  return out + (text.size() > max_bytes ? "...'" : "'");
}

}  // namespace ptk
