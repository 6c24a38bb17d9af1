// The header of a .npy file (format reference: numpy/lib/format.py): read (magic, version, length field, the dict
// literal) and written byte for byte as np.save writes it. The data after it is npy.cpp's.
#include "ptk/io/npy_header.hpp"

#include <cstdio>
#include <limits>

#include "ptk/io/npy.hpp"

namespace ptk::io {
namespace npy_detail {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = sizeof(kMagic) - 1;
constexpr std::size_t kAlign = 64;        // numpy's ARRAY_ALIGN
constexpr std::size_t kGrowthDigits = 21;  // numpy's GROWTH_AXIS_MAX_DIGITS
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// a * b for a, b >= 0; false on int64 overflow.
bool checked_mul(std::int64_t a, std::int64_t b, std::int64_t& out) {
  if (a != 0 && b > kInt64Max / a) return false;
  out = a * b;
  return true;
}

bool is_space(char c) { return std::string_view(" \t\r\n\f\v").find(c) != std::string_view::npos; }
bool is_delimiter(char c) { return is_space(c) || std::string_view(",:(){}[]").find(c) != std::string_view::npos; }

struct Dict {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

// Parses the Python dict literal of a .npy header, e.g.
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".
// Only the forms NumPy writes are understood: quoted strings, True/False and
// tuples of integers, with any whitespace and key order.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& name, const std::string& accepted)
      : text_(text), name_(name), accepted_(accepted) {}

  Dict parse() {
    Dict h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_ws();
    expect('{');
    for (;;) {
      skip_ws();
      if (consume('}')) break;
      const std::string key(string_literal());
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        mark_seen(seen_descr, key);
        h.descr = descr();
      } else if (key == "fortran_order") {
        mark_seen(seen_fortran, key);
        h.fortran_order = boolean(key);
      } else if (key == "shape") {
        mark_seen(seen_shape, key);
        h.shape = shape();
      } else {
        malformed("unexpected key " + quote(key));
      }
      skip_ws();
      if (consume('}')) break;
      expect(',');
    }
    skip_ws();
    if (pos_ != text_.size()) malformed("unexpected text after the closing '}'");
    if (!seen_descr) malformed("missing key 'descr'");
    if (!seen_fortran) malformed("missing key 'fortran_order'");
    if (!seen_shape) malformed("missing key 'shape'");
    return h;
  }

 private:
  [[noreturn]] void malformed(const std::string& problem) const { fail(name_, "malformed header: " + problem); }

  void mark_seen(bool& seen, const std::string& key) const {
    if (seen) malformed("duplicate key " + quote(key));
    seen = true;
  }

  std::string at() const {
    if (pos_ >= text_.size()) return "at end of header";
    return "at offset " + std::to_string(pos_) + " (found " + quote(text_.substr(pos_, 1)) + ")";
  }

  void skip_ws() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }

  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!consume(c)) malformed(std::string("expected '") + c + "' " + at());
  }

  std::string_view string_literal() {
    const char q = pos_ < text_.size() ? text_[pos_] : '\0';
    if (q != '\'' && q != '"') malformed("expected a quoted string " + at());
    const std::size_t end = text_.find(q, pos_ + 1);
    if (end == std::string_view::npos) malformed("unterminated string " + at());
    const std::string_view s = text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return s;
  }

  // A bare word or number: everything up to a delimiter or whitespace.
  std::string_view token() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && !is_delimiter(text_[pos_])) ++pos_;
    if (pos_ == start) malformed("expected a value " + at());
    return text_.substr(start, pos_ - start);
  }

  std::string descr() {
    if (pos_ < text_.size() && text_[pos_] == '[') {
      fail(name_, "structured dtypes are not supported: " + accepted_);
    }
    return std::string(string_literal());
  }

  bool boolean(const std::string& key) {
    const std::string_view t = token();
    if (t == "True") return true;
    if (t == "False") return false;
    malformed("'" + key + "' must be True or False, found " + quote(t));
  }

  std::vector<std::int64_t> shape() {
    if (!consume('(')) malformed("'shape' must be a tuple " + at());
    std::vector<std::int64_t> dims;
    for (;;) {
      skip_ws();
      if (consume(')')) break;
      dims.push_back(dimension(token()));
      skip_ws();
      if (consume(')')) break;
      expect(',');
    }
    return dims;
  }

  std::int64_t dimension(std::string_view t) const {
    std::string_view digits = t;
    if (!digits.empty() && (digits.back() == 'L' || digits.back() == 'l')) digits.remove_suffix(1);  // Python 2
    const bool negative = !digits.empty() && digits.front() == '-';
    if (negative) digits.remove_prefix(1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      fail(name_, "shape has a non-integer dimension " + quote(t));
    }
    if (negative && digits.find_first_not_of('0') != std::string_view::npos) {
      fail(name_, "shape has a negative dimension " + quote(t));
    }
    std::int64_t value = 0;
    for (const char c : digits) {
      const int d = c - '0';
      if (value > (kInt64Max - d) / 10) fail(name_, "shape dimension " + quote(t) + " overflows int64");
      value = value * 10 + d;
    }
    return value;
  }

  std::string_view text_;
  const std::string& name_;
  const std::string& accepted_;
  std::size_t pos_ = 0;
};

}  // namespace

[[noreturn]] void fail(const std::string& name, const std::string& problem) {
  throw NpyError(name + ": " + problem);
}

std::string quote(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + (text.size() > kMax ? "'..." : "'");
}

std::int64_t element_count(const std::vector<std::int64_t>& shape, const std::string& name, std::int64_t item_size) {
  std::int64_t count = 1;
  bool empty = false;
  for (const std::int64_t d : shape) {
    if (d == 0) {
      empty = true;
    } else if (!checked_mul(count, d, count)) {
      fail(name, "shape " + format_shape(shape) + " is too large: its element count overflows int64");
    }
  }
  std::int64_t bytes = 0;
  if (!checked_mul(count, item_size, bytes)) {
    fail(name, "shape " + format_shape(shape) + " is too large: its size in bytes overflows int64");
  }
  return empty ? 0 : count;
}

Header read_header(const std::string& bytes, const std::string& name, const std::string& accepted) {
  if (bytes.compare(0, kMagicLen, kMagic) != 0) fail(name, "not a .npy file (bad magic)");
  if (bytes.size() < kMagicLen + 2) fail(name, "truncated header: file ends after the magic string");

  const unsigned major = static_cast<unsigned char>(bytes[kMagicLen]);
  const unsigned minor = static_cast<unsigned char>(bytes[kMagicLen + 1]);
  if (major < 1 || major > 3 || minor != 0) {
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (ptk reads 1.0, 2.0 and 3.0)");
  }

  const std::size_t len_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = kMagicLen + 2 + len_bytes;
  if (bytes.size() < prefix) fail(name, "truncated header: file ends inside the header length field");
  std::uint64_t header_len = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) {
    header_len |= std::uint64_t{static_cast<unsigned char>(bytes[kMagicLen + 2 + i])} << (8 * i);
  }
  if (header_len > bytes.size() - prefix) {
    fail(name, "truncated header: header length is " + std::to_string(header_len) + " bytes but only " +
                   std::to_string(bytes.size() - prefix) + " bytes follow");
  }

  Dict d = DictParser(std::string_view(bytes).substr(prefix, header_len), name, accepted).parse();
  return Header{std::move(d.descr), d.fortran_order, std::move(d.shape), prefix + header_len};
}

std::string make_header(const std::string& descr, const std::vector<std::int64_t>& shape, const std::string& name) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) dict += ", ";
    dict += std::to_string(shape[i]);
  }
  if (shape.size() == 1) dict += ',';
  dict += "), }";
  // NumPy leaves room for the first dim to grow to 21 digits in place.
  if (!shape.empty()) dict.append(kGrowthDigits - std::to_string(shape[0]).size(), ' ');

  for (const unsigned major : {1u, 2u}) {
    const std::size_t len_bytes = major == 1 ? 2 : 4;
    const std::size_t prefix = kMagicLen + 2 + len_bytes;
    const std::size_t pad = kAlign - (prefix + dict.size() + 1) % kAlign;
    const std::uint64_t header_len = dict.size() + pad + 1;
    if (header_len >> (8 * len_bytes) != 0) continue;
    std::string out(kMagic, kMagicLen);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  fail(name, "cannot write shape with " + std::to_string(shape.size()) + " dimensions: header too large");
}

}  // namespace npy_detail

std::string format_shape(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace ptk::io
