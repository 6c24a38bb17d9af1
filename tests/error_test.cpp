// The error family (ptk/core/error.hpp): every error ptk throws on purpose is a ptk::Error whose kind names what
// went wrong, and the tool's exit status comes from one table of kinds (src/tools/exit_status.hpp).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "ptk/core/error.hpp"
#include "ptk/dist/comm.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/io/npy.hpp"
#include "ptk/io/safetensors.hpp"
#include "tools/exit_status.hpp"

namespace {

using ptk::Error;
using ptk::ErrorKind;

// Thrown as `thrown`, caught as ptk::Error with `kind`, and as std::runtime_error (what generic code catches).
template <class Thrown>
void expect_kind(const Thrown& thrown, ErrorKind kind) {
  try {
    throw thrown;
  } catch (const Error& e) {
    EXPECT_EQ(e.error_kind(), kind) << e.what();
    EXPECT_EQ(e.line(), e.what());
  }
  EXPECT_THROW(throw thrown, std::runtime_error);
}

TEST(ErrorFamily, EachClassHasItsKind) {
  expect_kind(ptk::UsageError("u"), ErrorKind::usage);
  expect_kind(ptk::InputError("i"), ErrorKind::input);
  expect_kind(ptk::IoError("f"), ErrorKind::io);
  expect_kind(ptk::OutOfMemory("m"), ErrorKind::out_of_memory);
  expect_kind(ptk::InternalError("b"), ErrorKind::internal);
  expect_kind(ptk::dist::CollectiveError("c"), ErrorKind::collective);
}

TEST(ErrorFamily, FileFormatsAreTheIoKind) {
  EXPECT_THROW(throw ptk::io::NpyError("x.npy: bad"), ptk::IoError);
  EXPECT_THROW(throw ptk::io::FileError("x: bad"), ptk::IoError);
  expect_kind(ptk::io::NpyError("x.npy: bad"), ErrorKind::io);
  expect_kind(ptk::io::FileError("x: bad"), ErrorKind::io);
  // A safetensors problem keeps its own class (kind()) and names it in the tool's line, not in what().
  const ptk::io::SafetensorsError e(ptk::io::SafetensorsError::Kind::truncated, "ck.safetensors: ends early");
  EXPECT_EQ(e.error_kind(), ErrorKind::io);
  EXPECT_EQ(std::string(e.what()), "ck.safetensors: ends early");
  EXPECT_EQ(e.line(), "ck.safetensors: ends early [truncated]");
  EXPECT_THROW(throw e, ptk::IoError);
}

// require() throws the input kind, as the op checks' EXPECT_THROW(..., ptk::Error) tests rely on.
TEST(ErrorFamily, RequireThrowsInputError) {
  try {
    ptk::require(false, "op: shape ", ptk::Shape{2, 3});
    FAIL() << "require(false) returned";
  } catch (const ptk::InputError& e) {
    EXPECT_EQ(e.error_kind(), ErrorKind::input);
    EXPECT_EQ(std::string(e.what()), "op: shape [2, 3]");
  }
  EXPECT_NO_THROW(ptk::require(true, "never formatted"));
}

// The statuses the CLI tests and the README promise: 2 for everything the caller can act on, 1 for ptk's own fault.
TEST(ErrorFamily, ExitStatusTable) {
  using ptk::tools::exit_rule;
  for (const auto kind : {ErrorKind::usage, ErrorKind::input, ErrorKind::io, ErrorKind::out_of_memory,
                          ErrorKind::collective}) {
    EXPECT_EQ(exit_rule(kind).kind, kind);
    EXPECT_EQ(exit_rule(kind).status, 2);
    EXPECT_EQ(std::string(exit_rule(kind).prefix), "");
  }
  EXPECT_EQ(exit_rule(ErrorKind::internal).status, 1);
  EXPECT_EQ(std::string(exit_rule(ErrorKind::internal).prefix), "internal error: ");
}

}  // namespace
