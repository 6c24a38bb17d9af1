#pragma once
// UTF-8 as tokenizers need it: validation of the text handed to an encoder, and a decoder that turns the bytes of
// tokens into text as they arrive (a token may end in the middle of a character). The decoder follows the WHATWG
// Encoding Standard's UTF-8 decoder (what TextDecoder, Python's errors="replace" and Hugging Face's decode do): a
// byte that cannot continue a sequence gives one U+FFFD for the maximal subpart read so far, and is read again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ptk/core/quote.hpp"

namespace ptk::text {

using ptk::first_invalid_utf8;
using ptk::quote;

// Bytes in, well-formed UTF-8 out. push() returns the characters completed by `bytes` (an incomplete sequence at
// the end waits for the next push); finish() returns U+FFFD if one was left incomplete.
class Utf8Decoder {
 public:
  std::string push(std::string_view bytes);
  std::string finish();

 private:
  void take(unsigned char byte, std::string& out);
  std::uint8_t needed_ = 0, seen_ = 0;
  unsigned char lower_ = 0x80, upper_ = 0xBF;
  char pending_[4] = {};
};

// The whole of `bytes` decoded at once (push then finish).
std::string decode_utf8_lossy(std::string_view bytes);

}  // namespace ptk::text
