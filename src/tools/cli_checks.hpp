#pragma once
// Validators for ptk's CLI11 options, with short messages. CLI11's own range checks print their bounds
// in full ("not in range 2.22507e-308 to 1.79769e+308"), accept "nan" for a float, and let "-1" wrap
// into an unsigned option; these check the text before it is converted.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"

namespace ptk::tools {

// A whole number in [min, max] (decimal digits only: no sign, no exponent, no spaces).
inline CLI::Validator whole_number(std::int64_t min, std::int64_t max) {
  const std::string what = "a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
          return "'" + text + "' is not " + what;
        const long long v = std::stoll(text);
        if (v < min || v > max) return text + " is not " + what;
        return "";
      },
      what);
}

// A seed: any whole number in [0, 2^64 - 1]; a negative one is refused rather than wrapped.
inline CLI::Validator seed_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
          std::strtoull(text.c_str(), &end, 10);
          if (errno == 0 && *end == '\0') return "";
        }
        return "'" + text + "' is not a whole number in [0, 2^64 - 1]";
      },
      "a whole number >= 0");
}

// A finite number > 0 (no nan, no inf).
inline CLI::Validator positive_finite() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0 || !std::isfinite(static_cast<float>(v)))
          return "'" + text + "' is not a finite number > 0";
        return "";
      },
      "a finite number > 0");
}

// A finite number in [lo, hi] (no nan, no inf), named by its bounds as given: "a number in [0, 1]".
inline CLI::Validator finite_in(double lo, double hi, const std::string& bounds) {
  const std::string what = "a number in " + bounds;
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi) return "'" + text + "' is not " + what;
        return "";
      },
      what);
}

// A sampling temperature: 0 (greedy) or a finite number in (0, 1e6] whose reciprocal is finite in float, as the
// sampler computes it. Below about 2.94e-39 the reciprocal overflows (every logit but the largest's becomes NaN
// or -inf, and the draw picks the last byte forever); such a temperature is refused, not quietly made greedy.
inline CLI::Validator temperature() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0 || v > 1e6)
          return "'" + text + "' is not a number in [0, 1e6]";
        const float t = static_cast<float>(v);
        if (v > 0 && !(t > 0 && std::isfinite(1.0f / t)))
          return "'" + text + "' is too small: 1/T overflows a float (the smallest is about 2.94e-39; 0 is greedy)";
        return "";
      },
      "0 (greedy) or a number in [2.94e-39, 1e6]");
}

// A file name, when the option is given: "--save ''" would silently mean "no file".
inline CLI::Validator file_name() {
  return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "an empty file name" : ""; },
                        "FILE");
}

// Parses `args` (as main received them) into `app`. Returns true when --help was asked for and printed (the
// command then exits 0); a bad command line is a UsageError "<command>: <what> (ptk <command> --help ...)".
inline bool parse_command_line(CLI::App& app, const std::vector<std::string>& args, const std::string& command) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a reversed vector
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return true;
  } catch (const CLI::ParseError& e) {
    throw UsageError{command + ": " + std::string(e.what()) + " (ptk " + command + " --help lists the options)"};
  }
  return false;
}

}  // namespace ptk::tools
