#pragma once
// Bad input to ptk (wrong shapes, wrong rank, empty tensors, unknown names) throws ptk::Error
// with a one-line message that names the op, what was wrong and the shapes involved.
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
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

// A message part computed only when it is printed: require's arguments are evaluated on every call, so a
// description that costs string building (shapes) is passed as lazy([&] { return ...; }).
template <class F>
struct Lazy {
  F make;
  friend std::ostream& operator<<(std::ostream& os, const Lazy& l) { return os << l.make(); }
};
template <class F>
Lazy<F> lazy(F make) {
  return Lazy<F>{std::move(make)};
}

namespace detail {
template <class Part>
void put(std::ostream& s, const Part& part) {
  s << part;
}
inline void put(std::ostream& s, const Shape& shape) { s << to_string(shape); }
}  // namespace detail

// Streams all parts into the message of a ptk::Error when `ok` is false. A Shape part prints as "[2, 3]":
// pass the shape itself, not to_string(shape), so that nothing is formatted when the check passes (an op's
// checks run on every call; decode steps make thousands of calls a second).
template <class... Parts>
void require(bool ok, const Parts&... parts) {
  if (ok) return;
  std::ostringstream s;
  (detail::put(s, parts), ...);
  throw Error(s.str());
}

}  // namespace ptk
