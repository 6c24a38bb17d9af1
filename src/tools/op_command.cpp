// ptk op NAME --in A.npy ... [--set key=value ...] --out Y.npy ... [--device host|default]
// Runs one op on .npy inputs (the table in docs/design.md). Every input is checked before any work,
// and outputs are written to temporary files that are renamed only once all of them are written,
// so a failed run leaves no output file behind.
#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <type_traits>

#include "commands.hpp"
#include "ptk/io/npy.hpp"
#include "ptk/ptk.hpp"

namespace ptk::tools {
namespace {

struct OpSpec {
  std::string name;
  std::vector<std::string> inputs, outputs;
  std::map<std::string, std::string> keys;  // key -> default, as documented
};

const std::vector<OpSpec> kOps = {
    {"matmul", {"A", "B"}, {"C"}, {{"trans_a", "0"}, {"trans_b", "0"}, {"impl", "portable"}}},
    {"softmax", {"X"}, {"Y"}, {{"scale", "1"}, {"causal", "0"}}},
    {"layernorm", {"X", "gamma", "beta"}, {"Y"}, {{"eps", "1e-5"}}},
    {"rmsnorm", {"X", "weight"}, {"Y"}, {{"eps", "1e-5"}}},
    {"attention", {"Q", "K", "V"}, {"O", "lse"}, {{"causal", "0"}, {"scale", "1/sqrt(D)"}}},
    {"gelu", {"X"}, {"Y"}, {}},
    {"silu", {"X"}, {"Y"}, {}},
};

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

class Settings {
 public:
  Settings(const OpSpec& op, std::map<std::string, std::string> values) : op_(op), values_(std::move(values)) {}
  bool has(const std::string& key) const { return values_.count(key) > 0; }
  float number(const std::string& key, float fallback) const {
    if (!has(key)) return fallback;
    const auto& text = values_.at(key);
    char* end = nullptr;
    errno = 0;
    const float v = std::strtof(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
      throw UsageError{"op " + op_.name + ": " + key + " must be a finite number, got '" + text + "'"};
    return v;
  }
  bool flag(const std::string& key) const {
    if (!has(key)) return false;
    const auto& text = values_.at(key);
    if (text != "0" && text != "1") throw UsageError{"op " + op_.name + ": " + key + " must be 0 or 1, got '" + text + "'"};
    return text == "1";
  }
  std::string word(const std::string& key, const std::string& fallback) const { return has(key) ? values_.at(key) : fallback; }

 private:
  const OpSpec& op_;
  std::map<std::string, std::string> values_;
};

template <class Space>
std::vector<Tensor<Space>> run(const OpSpec& op, const std::vector<io::NpyArray>& arrays, const Settings& set) {
  std::vector<Tensor<Space>> in;
  for (const auto& a : arrays) in.push_back(Tensor<Space>::from_host(a.shape, a.data));
  const auto& n = op.name;
  if (n == "matmul") {
    const auto impl = set.word("impl", "portable");
    if (impl != "portable" && impl != "kokkos_blas")
      throw UsageError{"op matmul: impl must be portable or kokkos_blas, got '" + impl + "'"};
    return {ops::matmul(in[0], in[1], set.flag("trans_a"), set.flag("trans_b"),
                        impl == "portable" ? ops::MatmulImpl::portable : ops::MatmulImpl::kokkos_blas)};
  }
  if (n == "softmax") return {ops::softmax(in[0], set.number("scale", 1.0f), set.flag("causal"))};
  if (n == "layernorm") return {ops::layernorm(in[0], in[1], in[2], set.number("eps", 1e-5f)).out};
  if (n == "rmsnorm") return {ops::rmsnorm(in[0], in[1], set.number("eps", 1e-5f)).out};
  if (n == "attention") {
    const auto scale = set.has("scale") ? std::optional<float>(set.number("scale", 0)) : std::nullopt;
    auto r = ops::attention(in[0], in[1], in[2], scale, set.flag("causal"));
    return {r.out, r.lse};
  }
  if (n == "gelu") return {ops::gelu(in[0])};
  if (n == "silu") return {ops::silu(in[0])};
  throw std::logic_error("op table and dispatch disagree on '" + n + "'");
}

template <class Space>
std::vector<io::NpyArray> run_to_host(const OpSpec& op, const std::vector<io::NpyArray>& arrays, const Settings& set) {
  std::vector<io::NpyArray> out;
  for (const auto& t : run<Space>(op, arrays, set)) out.push_back({t.shape(), t.to_vector()});
  return out;
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

void print_ops() {
  std::cout << "ops (inputs -> outputs; --set keys with defaults):\n";
  for (const auto& op : kOps) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : op.keys) keys.push_back(k + "=" + v);
    std::cout << "  " << op.name << ": " << join(op.inputs) << " -> " << join(op.outputs)
              << (keys.empty() ? "" : "; " + join(keys)) << '\n';
  }
}

}  // namespace

int op_command(const Args& args) {
  if (args.empty()) throw UsageError{"op needs an op name (ptk op --help lists them)"};
  if (args[0] == "--help" || args[0] == "-h") return print_ops(), 0;
  const auto spec = std::find_if(kOps.begin(), kOps.end(), [&](const OpSpec& o) { return o.name == args[0]; });
  if (spec == kOps.end()) {
    std::vector<std::string> names;
    for (const auto& o : kOps) names.push_back(o.name);
    throw UsageError{"unknown op '" + args[0] + "' (known: " + join(names) + ")"};
  }
  const OpSpec& op = *spec;
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
      if (!op.keys.count(key)) {
        std::vector<std::string> known;
        for (const auto& [k, v] : op.keys) known.push_back(k);
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
  if (inputs.size() != op.inputs.size()) throw count_error("--in", inputs.size(), op.inputs);
  if (outputs.size() != op.outputs.size()) throw count_error("--out", outputs.size(), op.outputs);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto slash = outputs[i].find_last_of('/');
    const auto dir = slash == std::string::npos ? std::string(".") : outputs[i].substr(0, slash + 1);
    if (access(dir.c_str(), W_OK) != 0)
      throw UsageError{where + "cannot write " + op.outputs[i] + " to " + outputs[i] + ": " + std::strerror(errno)};
  }
  const Settings settings(op, values);

  std::vector<io::NpyArray> arrays;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    arrays.push_back(io::read_npy(inputs[i]));
    const auto& shape = arrays.back().shape;
    for (auto d : shape)
      if (d == 0)
        throw UsageError{where + op.inputs[i] + " (" + inputs[i] + ") is empty, shape " + io::format_shape(shape)};
  }

  using Default = Kokkos::DefaultExecutionSpace;
  using Host = Kokkos::DefaultHostExecutionSpace;
  std::vector<io::NpyArray> results;
  if constexpr (std::is_same_v<Default, Host>)
    results = run_to_host<Default>(op, arrays, settings);
  else
    results = device == "host" ? run_to_host<Host>(op, arrays, settings) : run_to_host<Default>(op, arrays, settings);
  write_all(outputs, results);
  return 0;
}

}  // namespace ptk::tools
