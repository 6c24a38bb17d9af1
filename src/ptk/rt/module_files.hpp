#pragma once
// Where discovery.cpp and cpu_module.cpp look for module files (internal to ptk::runtime).
#include <string>
#include <vector>

namespace ptk::rt::detail {
bool is_regular_file(const std::string& path);
// dir/file for the first of `dirs` that holds file as a regular file, else "".
std::string find_file(const std::string& file, const std::vector<std::string>& dirs);
// "no FILE in DIR DIR ...": why find_file found nothing.
std::string not_found(const std::string& file, const std::vector<std::string>& dirs);
}  // namespace ptk::rt::detail
