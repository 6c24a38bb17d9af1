#include "ptk/text/utf8.hpp"

namespace ptk::text {

namespace {
const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
}

std::size_t first_invalid_utf8(std::string_view text) {
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

// One step of the WHATWG decoder. pending_ holds the bytes of the sequence read so far (they are the output when
// it completes: a well-formed sequence decodes to itself).
void Utf8Decoder::take(unsigned char b, std::string& out) {
  if (needed_ == 0) {
    if (b < 0x80) { out += static_cast<char>(b); return; }
    if (b >= 0xC2 && b <= 0xDF) needed_ = 1;
    else if (b >= 0xE0 && b <= 0xEF) { needed_ = 2; if (b == 0xE0) lower_ = 0xA0; if (b == 0xED) upper_ = 0x9F; }
    else if (b >= 0xF0 && b <= 0xF4) { needed_ = 3; if (b == 0xF0) lower_ = 0x90; if (b == 0xF4) upper_ = 0x8F; }
    else { out += kReplacement; return; }
    pending_[0] = static_cast<char>(b);
    seen_ = 0;
    return;
  }
  if (b < lower_ || b > upper_) {  // the sequence so far is one error; this byte starts afresh
    needed_ = seen_ = 0;
    lower_ = 0x80, upper_ = 0xBF;
    out += kReplacement;
    take(b, out);
    return;
  }
  lower_ = 0x80, upper_ = 0xBF;
  pending_[++seen_] = static_cast<char>(b);
  if (seen_ == needed_) {
    out.append(pending_, seen_ + 1u);
    needed_ = seen_ = 0;
  }
}

std::string Utf8Decoder::push(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) take(static_cast<unsigned char>(c), out);
  return out;
}

std::string Utf8Decoder::finish() {
  if (needed_ == 0) return {};
  needed_ = seen_ = 0;
  lower_ = 0x80, upper_ = 0xBF;
  return kReplacement;
}

std::string quote(std::string_view text, std::size_t max_bytes) {
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

std::string decode_utf8_lossy(std::string_view bytes) {
  Utf8Decoder d;
  std::string out = d.push(bytes);  // before finish(): the operands of + have no order
  return out + d.finish();
}

}  // namespace ptk::text
