// What every fuzz target shares: the input as a std::string, and the one rule a reader is held to. A reader may
// refuse its input only with a ptk::Error (one line); anything else escaping it (another exception, a crash, a
// sanitizer report, an allocation past libFuzzer's -malloc_limit_mb) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>

#include "ptk/core/error.hpp"

namespace ptk::fuzz {

// Runs body(input); a ptk::Error is a refusal and passes if its message is one line.
template <class Body>
int run(const std::uint8_t* data, std::size_t size, Body body) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    body(input);
  } catch (const ptk::Error& e) {
    const std::string what = e.what();
    if (what.empty() || what.find('\n') != std::string::npos) {
      std::fprintf(stderr, "a refusal that is not one line: '%s'\n", what.c_str());
      std::abort();
    }
  }
  return 0;
}

}  // namespace ptk::fuzz
