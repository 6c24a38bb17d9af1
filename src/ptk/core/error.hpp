#pragma once
// One family of errors: everything ptk throws on purpose is a ptk::Error of one kind (ErrorKind), and the tool
// turns the kind into its exit status in one table (src/tools/exit_status.hpp). Bad input to ptk (wrong shapes,
// wrong rank, empty tensors, unknown names) throws InputError, through require(), with a one-line message that
// names the op, what was wrong and the shapes involved. Every message is one line.
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

// What went wrong, as far as the caller of ptk (the tool's exit status, a test) has to tell errors apart.
// internal stays last: the tool's exit-status table is indexed by kind and checks its size against it.
enum class ErrorKind {
  usage,          // a bad command line (the tool)
  input,          // bad shapes, values or configuration handed to the library
  io,             // a file that cannot be read or written, or is malformed (npy, safetensors)
  out_of_memory,  // an allocation failed
  collective,     // every rank of a data-parallel job found the same failure together
  internal,       // a broken invariant: a bug in ptk, not the caller's doing
};

// The root derives std::runtime_error, not std::invalid_argument (a std::logic_error) as it once did: only the
// input kind is a caller's mistake; running out of memory, a full disk or a failed collective are conditions
// found at run time. runtime_error (not bare std::exception) also holds the message in a copy that cannot throw,
// which an exception being copied while it propagates needs.
class Error : public std::runtime_error {
 public:
  ErrorKind error_kind() const noexcept { return kind_; }
  // The one line the tool prints after "ptk: ". A kind may add detail that what() leaves out (safetensors: the
  // problem's class in brackets) without changing what() for the code that compares it.
  virtual std::string line() const { return what(); }

 protected:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

 private:
  ErrorKind kind_;
};

// The children only fix the kind: a throw site names what happened by the class it throws.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ErrorKind::usage, message) {}
};
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(ErrorKind::input, message) {}
};
class IoError : public Error {
 public:
  explicit IoError(const std::string& message) : Error(ErrorKind::io, message) {}
};
class OutOfMemory : public Error {
 public:
  explicit OutOfMemory(const std::string& message) : Error(ErrorKind::out_of_memory, message) {}
};
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(ErrorKind::internal, message) {}
};
// The collective kind's class is dist::CollectiveError (ptk/dist/comm.hpp), beside the communicator.

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

// Streams all parts into the message of a ptk::InputError when `ok` is false. A Shape part prints as "[2, 3]":
// pass the shape itself, not to_string(shape), so that nothing is formatted when the check passes (an op's
// checks run on every call; decode steps make thousands of calls a second).
template <class... Parts>
void require(bool ok, const Parts&... parts) {
  if (ok) return;
  std::ostringstream s;
  (detail::put(s, parts), ...);
  throw InputError(s.str());
}

}  // namespace ptk
