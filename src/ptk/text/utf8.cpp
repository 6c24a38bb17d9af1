#include "ptk/text/utf8.hpp"

namespace ptk::text {

namespace {
const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
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

std::string decode_utf8_lossy(std::string_view bytes) {
  Utf8Decoder d;
  std::string out = d.push(bytes);  // before finish(): the operands of + have no order
  return out + d.finish();
}

}  // namespace ptk::text
