// The parts of the registry's types that are not ops (op_registry.hpp): the parsing of one run's --set values, and an
// entry's lookups. The op entries themselves are in op_registry.cpp.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "op_registry.hpp"

namespace ptk::tools {

Settings::Settings(const OpEntry& op, std::map<std::string, std::string> values) : op_(op), values_(std::move(values)) {}

float Settings::number(const std::string& key, float fallback) const {
  if (!has(key)) return fallback;
  const auto& text = values_.at(key);
  char* end = nullptr;
  errno = 0;
  const float v = std::strtof(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw UsageError{"op " + op_.name + ": " + key + " must be a finite number, got '" + text + "'"};
  return v;
}

bool Settings::flag(const std::string& key) const {
  if (!has(key)) return false;
  const auto& text = values_.at(key);
  if (text != "0" && text != "1") throw UsageError{"op " + op_.name + ": " + key + " must be 0 or 1, got '" + text + "'"};
  return text == "1";
}

std::string Settings::word(const std::string& key, const std::string& fallback) const {
  return has(key) ? values_.at(key) : fallback;
}

long long Settings::integer(const std::string& key, long long fallback, long long lo, long long hi) const {
  if (!has(key)) return fallback;
  const auto& text = values_.at(key);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
    throw UsageError{"op " + op_.name + ": " + key + " must be an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got '" + text + "'"};
  return v;
}

std::size_t OpEntry::required_outputs() const {
  return static_cast<std::size_t>(std::count_if(outputs.begin(), outputs.end(), [](const OpOutput& o) { return !o.optional; }));
}

const OpKey* OpEntry::key(const std::string& k) const {
  const auto it = std::find_if(keys.begin(), keys.end(), [&](const OpKey& o) { return o.name == k; });
  return it == keys.end() ? nullptr : &*it;
}

}  // namespace ptk::tools
