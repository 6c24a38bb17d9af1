// ptk op NAME --in A.npy ... [--set key=value ...] --out Y.npy ... [--device host|default]
// Runs one op of the registry (op_registry.hpp; the table in docs/design.md) on .npy inputs. Every
// input is checked before any work, and outputs are written to temporary files that are renamed
// only once all of them are written, so a failed run leaves no output file behind.
#include <Kokkos_Core.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <type_traits>

#include "commands.hpp"
#include "op_registry.hpp"
#include "ptk/io/atomic_file.hpp"
#include "ptk/io/npy.hpp"

namespace ptk::tools {
namespace {

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::vector<std::string> names(const std::vector<OpInput>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.name);
  return out;
}

std::vector<std::string> names(const std::vector<OpOutput>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.name);
  return out;
}

// The op's keys by name (the order of its listing and of "known: ..." messages).
std::vector<OpKey> sorted_keys(const OpEntry& op) {
  auto keys = op.keys;
  std::sort(keys.begin(), keys.end(), [](const OpKey& a, const OpKey& b) { return a.name < b.name; });
  return keys;
}

void write_all(const std::vector<std::string>& paths, const std::vector<io::NpyArray>& arrays) {
  std::vector<std::string> temps;
  try {
    for (std::size_t i = 0; i < paths.size(); ++i) {
      temps.push_back(paths[i] + ".ptk-partial");
      io::write_npy(temps.back(), arrays[i].shape, arrays[i].data.data());
    }
    for (std::size_t i = 0; i < paths.size(); ++i)
      if (std::rename(temps[i].c_str(), paths[i].c_str()) != 0)
        throw io::NpyError(paths[i] + ": cannot write: " + std::strerror(errno));
  } catch (...) {
    for (const auto& t : temps) std::remove(t.c_str());
    throw;
  }
}

// The file an output names: its device and inode when it exists (any spelling, hard links too), else the real
// path of its directory and its name.
std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  char resolved[PATH_MAX];
  const std::string dir = io::directory_of(path);
  return (::realpath(dir.c_str(), resolved) != nullptr ? std::string(resolved) : dir) + "/" + io::file_name_of(path);
}

// Every --out may be written (io::check_can_write: a regular file or a new name in a writable directory; not a
// device, a directory or a symbolic link), and no two name one file: the later would replace the earlier
// (attention's O by its lse).
void check_outputs(const OpEntry& op, const std::vector<std::string>& outputs, const std::string& where) {
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    try {
      io::check_can_write(outputs[i]);
    } catch (const io::FileError& e) {
      throw UsageError{where + "cannot write " + op.outputs[i].name + ": " + e.what()};
    }
    const auto [first, fresh] = seen.emplace(file_identity(outputs[i]), i);
    if (!fresh)
      throw UsageError{where + "--out " + outputs[i] + " (" + op.outputs[i].name + ") is the same file as --out " +
                       outputs[first->second] + " (" + op.outputs[first->second].name + ")"};
  }
}

// `ptk op --help`: every op with its inputs, outputs and keys, from the registry.
void print_ops() {
  std::cout << "ops (inputs -> outputs; --set keys with defaults). Inputs are float32 .npy, except those marked\n"
               "(int): int32 or int64 .npy. An output in [] is optional. Backward ops write fresh gradients\n"
               "(dX = 0 + ...).\n";
  for (const auto& op : op_registry()) {
    std::vector<std::string> inputs, outputs, keys;
    for (const auto& i : op.inputs) inputs.push_back(i.index ? i.name + " (int)" : i.name);
    for (const auto& o : op.outputs) outputs.push_back(o.optional ? "[" + o.name + "]" : o.name);
    for (const auto& k : sorted_keys(op)) keys.push_back(k.name + "=" + k.fallback);
    std::cout << "  " << op.name << ": " << join(inputs) << " -> " << join(outputs)
              << (keys.empty() ? "" : "; " + join(keys)) << "\n      " << op.summary << '\n';
    for (const auto& k : sorted_keys(op)) std::cout << "      " << k.name << ": " << k.help << '\n';
  }
}

}  // namespace

int op_command(const Args& args) {
  if (args.empty()) throw UsageError{"op needs an op name (ptk op --help lists them)"};
  if (args[0] == "--help" || args[0] == "-h") return print_ops(), 0;
  if (args[0] == "--list") {  // the names alone, one a line (tests/op_cli_test.sh checks docs/design.md against it)
    for (const auto& o : op_registry()) std::cout << o.name << '\n';
    return 0;
  }
  const OpEntry* spec = find_op(args[0]);
  if (!spec) {
    std::vector<std::string> known;
    for (const auto& o : op_registry()) known.push_back(o.name);
    throw UsageError{"unknown op '" + args[0] + "' (known: " + join(known) + ")"};
  }
  const OpEntry& op = *spec;
  const std::string where = "op " + op.name + ": ";

  std::vector<std::string> inputs, outputs;
  std::map<std::string, std::string> values;
  std::string device = "default";
  for (std::size_t i = 1; i < args.size(); ++i) {
    const auto& flag = args[i];
    if (flag != "--in" && flag != "--out" && flag != "--set" && flag != "--device")
      throw UsageError{where + "unexpected argument '" + flag + "' (expected --in, --out, --set or --device)"};
    if (i + 1 == args.size()) throw UsageError{where + flag + " needs a value"};
    const auto& value = args[++i];
    if (flag == "--in") inputs.push_back(value);
    else if (flag == "--out") outputs.push_back(value);
    else if (flag == "--device") device = value;
    else {
      const auto eq = value.find('=');
      const auto key = value.substr(0, eq);
      if (eq == std::string::npos) throw UsageError{where + "--set needs key=value, got '" + value + "'"};
      if (!op.key(key)) {
        std::vector<std::string> known;
        for (const auto& k : sorted_keys(op)) known.push_back(k.name);
        throw UsageError{where + "unknown key '" + key + "' (" + (known.empty() ? "this op takes none" : "known: " + join(known)) + ")"};
      }
      if (values.count(key)) throw UsageError{where + "key '" + key + "' is set twice"};
      values[key] = value.substr(eq + 1);
    }
  }
  if (device != "default" && device != "host")
    throw UsageError{where + "--device must be host or default, got '" + device + "'"};
  const auto count_error = [&](const char* what, std::size_t got, const std::vector<std::string>& want) {
    return UsageError{where + "expects " + std::to_string(want.size()) + " " + what + " (" + join(want) + "), got " +
                      std::to_string(got)};
  };
  if (inputs.size() != op.inputs.size()) throw count_error("--in", inputs.size(), names(op.inputs));
  const std::size_t required = op.required_outputs();
  if (outputs.size() < required || outputs.size() > op.outputs.size()) {
    if (required == op.outputs.size()) throw count_error("--out", outputs.size(), names(op.outputs));
    throw UsageError{where + "expects " + std::to_string(required) + " to " + std::to_string(op.outputs.size()) +
                     " --out (" + join(names(op.outputs)) + "; the last optional), got " + std::to_string(outputs.size())};
  }
  check_outputs(op, outputs, where);
  const Settings settings(op, values);

  HostInputs arrays;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    arrays.arrays.emplace_back();
    arrays.ids.emplace_back();
    const OpInput& input = op.inputs[i];
    if (input.index) {
      arrays.ids.back() = io::read_npy_ids(inputs[i]);
      for (auto id : arrays.ids.back().data)
        if (id < INT_MIN || id > INT_MAX)
          throw UsageError{where + input.name + " (" + inputs[i] + ") holds " + std::to_string(id) +
                           ", which does not fit a 32-bit int"};
    } else {
      arrays.arrays.back() = io::read_npy(inputs[i]);
    }
    const auto& shape = input.index ? arrays.ids.back().shape : arrays.arrays.back().shape;
    for (auto d : shape)
      if (d == 0)
        throw UsageError{where + input.name + " (" + inputs[i] + ") is empty, shape " + io::format_shape(shape)};
  }

  using Default = Kokkos::DefaultExecutionSpace;
  using Host = Kokkos::DefaultHostExecutionSpace;
  std::vector<io::NpyArray> results;
  const bool on_host = std::is_same_v<Default, Host> || device == "host";
  results = on_host ? op.run_host(arrays, settings) : op.run_default(arrays, settings);
  results.resize(outputs.size());  // optional saved statistics nobody asked for
  write_all(outputs, results);
  return 0;
}

}  // namespace ptk::tools
