#pragma once
// Bad input to ptk (wrong shapes, wrong rank, empty tensors, unknown names) throws ptk::Error
// with a one-line message that names the op, what was wrong and the shapes involved.
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ptk {

using Shape = std::vector<std::int64_t>;

inline std::int64_t element_count(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

class Error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

inline std::string to_string(const Shape& shape) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << ']';
  return s.str();
}

// Streams all parts into the message of a ptk::Error when `ok` is false.
template <class... Parts>
void require(bool ok, const Parts&... parts) {
  if (ok) return;
  std::ostringstream s;
  (s << ... << parts);
  throw Error(s.str());
}

}  // namespace ptk
