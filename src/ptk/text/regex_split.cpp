#include "ptk/text/regex_split.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>

#include "ptk/core/error.hpp"
#include "ptk/text/utf8.hpp"

namespace ptk::text {

namespace {
pcre2_code* code(void* p) { return static_cast<pcre2_code*>(p); }
}  // namespace

std::string unicode_whitespace(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char next = pattern[++i];
    if (next == 's') out += "\\p{White_Space}";
    else if (next == 'S') out += "\\P{White_Space}";
    else out += '\\', out += next;
  }
  return out;
}

RegexSplitter::RegexSplitter(const std::vector<std::string>& patterns, const std::string& origin) {
  for (const auto& pattern : patterns) {
    const std::string rewritten = unicode_whitespace(pattern);
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (re == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      for (void* c : code_) pcre2_code_free(code(c));
      throw InputError(origin + ": the pre-tokenization pattern " + quote(pattern) + " does not compile (" +
                       reinterpret_cast<const char*>(message) + ")");
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);  // where PCRE2 has no JIT, matching interprets: same results
    code_.push_back(re);
  }
}

RegexSplitter::~RegexSplitter() {
  for (void* c : code_) pcre2_code_free(code(c));
}

std::vector<std::string_view> RegexSplitter::split(std::string_view text) const {
  std::vector<std::string_view> pieces{text};
  for (std::size_t p = 0; p < code_.size(); ++p) {
    std::vector<std::string_view> next;
    next.reserve(pieces.size() * 2);
    for (auto piece : pieces) split_one(p, piece, next);
    pieces.swap(next);
  }
  return pieces;
}

// Every match is a piece and so is every gap between matches; an empty match adds nothing and the search goes on
// one character later. The text was checked as UTF-8 once (the encoder's caller), not again at every match: a
// check per call would make a long text quadratic.
void RegexSplitter::split_one(std::size_t p, std::string_view text, std::vector<std::string_view>& out) const {
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> match(
      pcre2_match_data_create_from_pattern(code(code_[p]), nullptr), pcre2_match_data_free);
  if (!match) throw std::bad_alloc();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t start = 0, emitted = 0;
  while (start < text.size()) {
    const int rc = pcre2_match(code(code_[p]), subject, text.size(), start, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw InputError(std::string("pre-tokenization failed: ") + reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const std::size_t begin = ovector[0], end = ovector[1];
    if (end == begin) {  // an empty match adds no piece: step over one character (its UTF-8 length)
      start = begin + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
      continue;
    }
    if (begin > emitted) out.push_back(text.substr(emitted, begin - emitted));
    out.push_back(text.substr(begin, end - begin));
    emitted = start = end;
  }
  if (emitted < text.size()) out.push_back(text.substr(emitted));
}

}  // namespace ptk::text
