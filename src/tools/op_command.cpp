// ptk op NAME --in A.npy ... [--set key=value ...] --out Y.npy ... [--device host|default] (CLI11)
// Runs one op of the registry (op_registry.hpp; the table in docs/design.md) on .npy inputs. Every
// input is checked before any work, and outputs are written to temporary files that are renamed
// only once all of them are written, so a failed run leaves no output file behind.
#include <Kokkos_Core.hpp>

#include <CLI/CLI.hpp>

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
#include <sstream>
#include <type_traits>

#include "cli_checks.hpp"
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

// Output i stored as `dtype` (rounded to nearest even), or as float32 where the op says so (a loss, an lse).
void write_all(const OpEntry& op, const std::vector<std::string>& paths, const std::vector<io::NpyArray>& arrays,
               io::NpyDtype dtype) {
  std::vector<std::string> temps;
  try {
    for (std::size_t i = 0; i < paths.size(); ++i) {
      temps.push_back(paths[i] + ".ptk-partial");
      io::write_npy(temps.back(), arrays[i].shape, arrays[i].data.data(), op.outputs[i].fp32 ? io::NpyDtype::f32 : dtype);
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

// The footer of `ptk op --help`: every op with its inputs, outputs and keys, from the registry.
std::string op_listing() {
  std::ostringstream s;
  s << "ops (inputs -> outputs; --set keys with defaults). Inputs are float32 .npy, except those marked\n"
       "(int): int32 or int64 .npy. An output in [] is optional. Backward ops write fresh gradients\n"
       "(dX = 0 + ...).\n"
       "Every op also takes dtype=f32 (f32, bf16 or f16): its float inputs and outputs are stored so (f16:\n"
       "float16 .npy; bf16: uint16 .npy holding bfloat16 bits; f32 also reads float16), the arithmetic is\n"
       "float32, outputs are rounded to nearest even; losses and log-sum-exps stay float32. softmax,\n"
       "layernorm, rmsnorm, gelu, silu, cross_entropy, rope, attention, embedding and their backward\n"
       "ops run their kernels on the stored type (norm weights and statistics stay float32); matmul on\n"
       "float32 copies of it.\n";
  for (const auto& op : op_registry()) {
    std::vector<std::string> inputs, outputs, keys;
    for (const auto& i : op.inputs) inputs.push_back(i.index ? i.name + " (int)" : i.name);
    for (const auto& o : op.outputs) outputs.push_back(o.optional ? "[" + o.name + "]" : o.name);
    for (const auto& k : sorted_keys(op)) keys.push_back(k.name + "=" + k.fallback);
    s << "  " << op.name << ": " << join(inputs) << " -> " << join(outputs) << (keys.empty() ? "" : "; " + join(keys))
      << "\n      " << op.summary << '\n';
    for (const auto& k : sorted_keys(op)) s << "      " << k.name << ": " << k.help << '\n';
  }
  return s.str();
}

// The command line as CLI11 read it (the op's own checks come after: counts, keys, files).
struct OpLine {
  std::string name, device = "default";
  std::vector<std::string> inputs, outputs, sets;
  bool list = false;
};

// Each --in, --out and --set takes one value and may be repeated: their order is the op's argument order.
void add_options(CLI::App& app, OpLine& line) {
  app.add_option("name", line.name, "the op to run (ptk op --list)");
  app.add_option("--in", line.inputs, "an input .npy, in the op's order (repeat for each)")
      ->allow_extra_args(false)->type_name("FILE.npy");
  app.add_option("--out", line.outputs, "an output .npy, in the op's order (repeat for each)")
      ->allow_extra_args(false)->type_name("FILE.npy");
  app.add_option("--set", line.sets, "a setting of the op (repeat for each; the keys are listed below)")
      ->allow_extra_args(false)->type_name("KEY=VALUE");
  app.add_option("--device", line.device, "host or default (the GPU in a GPU build)")
      ->capture_default_str()->check(CLI::IsMember({"host", "default"}));
  app.add_flag("--list", line.list, "print the op names, one a line");
  app.footer(op_listing());
}

// --set key=value ..., each key one the op knows, each set once.
std::map<std::string, std::string> settings_of(const OpEntry& op, const std::vector<std::string>& sets,
                                               const std::string& where) {
  std::map<std::string, std::string> values;
  for (const auto& set : sets) {
    const auto eq = set.find('=');
    const auto key = set.substr(0, eq);
    if (eq == std::string::npos) throw UsageError{where + "--set needs key=value, got '" + set + "'"};
    if (!op.key(key)) {
      std::vector<std::string> known;
      for (const auto& k : sorted_keys(op)) known.push_back(k.name);
      throw UsageError{where + "unknown key '" + key + "' (" +
                       (known.empty() ? "this op takes none" : "known: " + join(known)) + ")"};
    }
    if (values.count(key)) throw UsageError{where + "key '" + key + "' is set twice"};
    values[key] = set.substr(eq + 1);
  }
  return values;
}

// --set dtype=..., which every op takes (the storage of its float inputs and outputs), taken out of `sets`.
io::NpyDtype take_dtype(std::vector<std::string>& sets, const std::string& where) {
  io::NpyDtype dtype = io::NpyDtype::f32;
  int seen = 0;
  for (auto it = sets.begin(); it != sets.end();) {
    if (it->rfind("dtype=", 0) != 0) {
      ++it;
      continue;
    }
    const std::string value = it->substr(6);
    if (++seen > 1) throw UsageError{where + "key 'dtype' is set twice"};
    if (value == "bf16") dtype = io::NpyDtype::bf16;
    else if (value == "f16") dtype = io::NpyDtype::f16;
    else if (value != "f32") throw UsageError{where + "dtype must be f32, bf16 or f16, got '" + value + "'"};
    it = sets.erase(it);
  }
  return dtype;
}

// As many --in as the op has inputs, and its outputs less any optional ones left out.
void check_counts(const OpEntry& op, const OpLine& line, const std::string& where) {
  const auto count_error = [&](const char* what, std::size_t got, const std::vector<std::string>& want) {
    return UsageError{where + "expects " + std::to_string(want.size()) + " " + what + " (" + join(want) + "), got " +
                      std::to_string(got)};
  };
  if (line.inputs.size() != op.inputs.size()) throw count_error("--in", line.inputs.size(), names(op.inputs));
  const std::size_t required = op.required_outputs(), given = line.outputs.size();
  if (given < required || given > op.outputs.size()) {
    if (required == op.outputs.size()) throw count_error("--out", given, names(op.outputs));
    throw UsageError{where + "expects " + std::to_string(required) + " to " + std::to_string(op.outputs.size()) +
                     " --out (" + join(names(op.outputs)) + "; the last optional), got " + std::to_string(given)};
  }
}

// Input i (from `label`: a file, or "input i") holds ids that fit an int and is not empty.
void check_input(const OpEntry& op, std::size_t i, const HostInputs& arrays, const std::string& label,
                 const std::string& where) {
  const OpInput& input = op.inputs[i];
  if (input.index)
    for (auto id : arrays.ids[i].data)
      if (id < INT_MIN || id > INT_MAX)
        throw UsageError{where + input.name + " (" + label + ") holds " + std::to_string(id) +
                         ", which does not fit a 32-bit int"};
  const auto& shape = input.index ? arrays.ids[i].shape : arrays.arrays[i].shape;
  for (auto d : shape)
    if (d == 0) throw UsageError{where + input.name + " (" + label + ") is empty, shape " + io::format_shape(shape)};
}

// Every input read and checked before the op runs.
HostInputs read_inputs(const OpEntry& op, const std::vector<std::string>& paths, io::NpyDtype dtype,
                       const std::string& where) {
  HostInputs arrays;
  arrays.dtype = dtype;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    arrays.arrays.emplace_back();
    arrays.ids.emplace_back();
    if (op.inputs[i].index) arrays.ids.back() = io::read_npy_ids(paths[i]);
    else arrays.arrays.back() = dtype == io::NpyDtype::f32 ? io::read_npy(paths[i]) : io::read_npy(paths[i], dtype);
    check_input(op, i, arrays, paths[i], where);
  }
  return arrays;
}

const OpEntry& known_op(const std::string& name) {
  if (name.empty()) throw UsageError{"op needs an op name (ptk op --help lists them)"};
  const OpEntry* spec = find_op(name);
  if (spec) return *spec;
  std::vector<std::string> known;
  for (const auto& o : op_registry()) known.push_back(o.name);
  throw UsageError{"unknown op '" + name + "' (known: " + join(known) + ")"};
}

}  // namespace

int op_command(const Args& args) {
  OpLine line;
  CLI::App app{"Run one op on .npy files: ptk op NAME --in A.npy ... [--set key=value ...] --out Y.npy ...", "ptk op"};
  add_options(app, line);
  if (parse_command_line(app, args, "op")) return 0;
  if (line.list) {  // the names alone, one a line
    for (const auto& o : op_registry()) std::cout << o.name << '\n';
    return 0;
  }
  const OpEntry& op = known_op(line.name);
  const std::string where = "op " + op.name + ": ";
  const io::NpyDtype dtype = take_dtype(line.sets, where);
  const auto values = settings_of(op, line.sets, where);
  check_counts(op, line, where);
  check_outputs(op, line.outputs, where);
  const Settings settings(op, values);
  const HostInputs arrays = read_inputs(op, line.inputs, dtype, where);

  using Default = Kokkos::DefaultExecutionSpace;
  using Host = Kokkos::DefaultHostExecutionSpace;
  const bool on_host = std::is_same_v<Default, Host> || line.device == "host";
  std::vector<io::NpyArray> results = on_host ? op.run_host(arrays, settings) : op.run_default(arrays, settings);
  results.resize(line.outputs.size());  // optional saved statistics nobody asked for
  write_all(op, line.outputs, results, dtype);
  return 0;
}

OpResults run_in_memory(const std::string& name, HostInputs inputs, std::vector<std::string> sets) {
  const OpEntry& op = known_op(name);
  const std::string where = "op " + op.name + ": ";
  if (inputs.arrays.size() != op.inputs.size() || inputs.ids.size() != op.inputs.size())
    throw UsageError{where + "expects " + std::to_string(op.inputs.size()) + " inputs (" + join(names(op.inputs)) +
                     "), got " + std::to_string(std::max(inputs.arrays.size(), inputs.ids.size()))};
  inputs.dtype = take_dtype(sets, where);
  if (inputs.dtype != io::NpyDtype::f32) throw UsageError{where + "the library API runs float32 (dtype=f32)"};
  const Settings settings(op, settings_of(op, sets, where));
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const bool ids = !inputs.ids[i].data.empty(), values = !inputs.arrays[i].data.empty();
    if ((ids || values) && ids != op.inputs[i].index)
      throw UsageError{where + op.inputs[i].name + " (input " + std::to_string(i) + ") must hold " +
                       (op.inputs[i].index ? "int64 ids" : "float32 values")};
    check_input(op, i, inputs, "input " + std::to_string(i), where);
  }
  return op.run_default(inputs, settings);
}

}  // namespace ptk::tools
