// ptk op NAME --in A.npy ... [--set key=value ...] --out Y.npy ... [--device host|default]
// Runs one op on .npy inputs (the table in docs/design.md). Every input is checked before any work,
// and outputs are written to temporary files that are renamed only once all of them are written,
// so a failed run leaves no output file behind.
#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <algorithm>
#include <climits>
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

// Saved statistics an op gained after its forward contract was set (attention's lse) may be left
// out: `--out O.npy` alone still works, and a second --out receives them.
bool optional_output(const std::string& name) { return name == "lse"; }

std::size_t required_outputs(const OpSpec& op) {
  std::size_t n = 0;
  for (const auto& o : op.outputs) n += optional_output(o) ? 0 : 1;
  return n;
}

const std::vector<OpSpec> kOps = {
    {"matmul", {"A", "B"}, {"C"}, {{"trans_a", "0"}, {"trans_b", "0"}, {"impl", "portable"}}},
    {"matmul_backward", {"A", "B", "dC"}, {"dA", "dB"}, {{"trans_a", "0"}, {"trans_b", "0"}}},
    {"softmax", {"X"}, {"Y"}, {{"scale", "1"}, {"causal", "0"}}},
    {"softmax_backward", {"Y", "dY"}, {"dX"}, {{"scale", "1"}}},
    {"layernorm", {"X", "gamma", "beta"}, {"Y"}, {{"eps", "1e-5"}}},
    {"layernorm_backward", {"X", "gamma", "dY"}, {"dX", "dgamma", "dbeta"}, {{"eps", "1e-5"}}},
    {"rmsnorm", {"X", "weight"}, {"Y"}, {{"eps", "1e-5"}}},
    {"rmsnorm_backward", {"X", "weight", "dY"}, {"dX", "dweight"}, {{"eps", "1e-5"}}},
    {"attention", {"Q", "K", "V"}, {"O", "lse"}, {{"causal", "0"}, {"scale", "1/sqrt(D)"}}},
    {"attention_backward", {"Q", "K", "V", "dO"}, {"dQ", "dK", "dV"}, {{"causal", "0"}, {"scale", "1/sqrt(D)"}}},
    {"gelu", {"X"}, {"Y"}, {}},
    {"silu", {"X"}, {"Y"}, {}},
    {"gelu_backward", {"X", "dY"}, {"dX"}, {}},
    {"silu_backward", {"X", "dY"}, {"dX"}, {}},
    {"embedding", {"ids", "table"}, {"out"}, {}},
    {"embedding_backward", {"ids", "dout"}, {"dtable"}, {{"vocab", "max id + 1"}}},
    {"cross_entropy", {"logits", "targets"}, {"loss", "losses", "lse"}, {{"ignore_index", "-100"}}},
    {"cross_entropy_backward", {"logits", "targets"}, {"dlogits"}, {{"ignore_index", "-100"}, {"dloss", "1"}}},
    {"rope", {"X"}, {"Y"}, {{"pos_offset", "0"}, {"base", "10000"}, {"layout", "bthd"}}},
    {"rope_backward", {"dY"}, {"dX"}, {{"pos_offset", "0"}, {"base", "10000"}, {"layout", "bthd"}}},
};

// Inputs read as integer .npy (int32 or int64): token ids and class targets.
bool is_index_input(const std::string& name) { return name == "ids" || name == "targets"; }

// What the op reads: float arrays, and for index inputs (same positions) their ids; the other slot is empty.
struct OpInputs {
  std::vector<io::NpyArray> arrays;
  std::vector<io::NpyIndexArray> ids;
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
  long long integer(const std::string& key, long long fallback, long long lo, long long hi) const {
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

 private:
  const OpSpec& op_;
  std::map<std::string, std::string> values_;
};

template <class Space>
std::vector<Tensor<Space>> run_tensors(const OpSpec& op, const std::vector<Tensor<Space>>& in, const Settings& set) {
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
  if (n == "matmul_backward") {
    const bool ta = set.flag("trans_a"), tb = set.flag("trans_b");
    Tensor<Space> da(in[0].shape(), "ptk::dA"), db(in[1].shape(), "ptk::dB");
    ops::matmul_backward(da, db, in[2], in[0], in[1], ta, tb);
    return {da, db};
  }
  if (n == "attention_backward") {
    // The forward first, for O and lse; gradients start from zero.
    const auto scale = set.has("scale") ? std::optional<float>(set.number("scale", 0)) : std::nullopt;
    const bool causal = set.flag("causal");
    const auto fwd = ops::attention(in[0], in[1], in[2], scale, causal);
    Tensor<Space> dq(in[0].shape(), "ptk::dQ"), dk(in[1].shape(), "ptk::dK"), dv(in[2].shape(), "ptk::dV");
    ops::attention_backward(dq, dk, dv, in[3], in[0], in[1], in[2], fwd.out, fwd.lse, scale, causal);
    return {dq, dk, dv};
  }
  using ops::check_feature_vector;
  using ops::check_tensor;
  if (n == "gelu") return {ops::gelu(in[0])};
  if (n == "silu") return {ops::silu(in[0])};
  // Backward ops: gradients start from zero (a fresh tensor is zero-filled) and accumulate.
  if (n == "softmax_backward") {
    Tensor<Space> dx(in[0].shape(), "ptk::dX");
    ops::softmax_backward(dx, in[0], in[1], set.number("scale", 1.0f));
    return {dx};
  }
  if (n == "layernorm_backward") {
    const auto& x = in[0];
    const auto& gamma = in[1];
    check_tensor("layernorm_backward", "X", x, 1, INT_MAX);  // before the forward's checks name "layernorm"
    check_feature_vector("layernorm_backward", "gamma", gamma, x);
    Tensor<Space> dx(x.shape(), "ptk::dX"), dgamma(gamma.shape(), "ptk::dgamma"), dbeta(gamma.shape(), "ptk::dbeta");
    const auto stats = ops::layernorm(x, gamma, Tensor<Space>(gamma.shape()), set.number("eps", 1e-5f));
    ops::layernorm_backward(dx, dgamma, dbeta, in[2], x, gamma, stats.mean, stats.rstd);
    return {dx, dgamma, dbeta};
  }
  if (n == "rmsnorm_backward") {
    const auto& x = in[0];
    const auto& weight = in[1];
    check_tensor("rmsnorm_backward", "X", x, 1, INT_MAX);
    check_feature_vector("rmsnorm_backward", "weight", weight, x);
    Tensor<Space> dx(x.shape(), "ptk::dX"), dweight(weight.shape(), "ptk::dweight");
    const auto stats = ops::rmsnorm(x, weight, set.number("eps", 1e-5f));
    ops::rmsnorm_backward(dx, dweight, in[2], x, weight, stats.rstd);
    return {dx, dweight};
  }
  if (n == "gelu_backward" || n == "silu_backward") {
    Tensor<Space> dx(in[0].shape(), "ptk::dX");
    if (n == "gelu_backward") ops::gelu_backward(dx, in[0], in[1]);
    else ops::silu_backward(dx, in[0], in[1]);
    return {dx};
  }
  throw std::logic_error("op table and dispatch disagree on '" + n + "'");
}

template <class Space>
IndexVector<Space> to_index_view(const io::NpyIndexArray& a) {
  std::vector<int> host(a.data.size());
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int>(a.data[i]);  // range checked on read
  IndexVector<Space> v("ptk::ids", host.size());
  Kokkos::deep_copy(v, Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host.data(),
                                                                                                             host.size()));
  return v;
}

ops::RopeLayout rope_layout(const Settings& set, const std::string& op) {
  const auto layout = set.word("layout", "bthd");
  if (layout != "bthd" && layout != "bhtd") throw UsageError{"op " + op + ": layout must be bthd or bhtd, got '" + layout + "'"};
  return layout == "bthd" ? ops::RopeLayout::bthd : ops::RopeLayout::bhtd;
}

// The results of ops whose outputs are not all tensors (a scalar loss) go straight to host arrays.
template <class Space>
std::vector<io::NpyArray> run(const OpSpec& op, const OpInputs& inputs, const Settings& set) {
  const auto host = [](const Tensor<Space>& t) { return io::NpyArray{t.shape(), t.to_vector()}; };
  std::vector<Tensor<Space>> in;
  for (std::size_t i = 0; i < inputs.arrays.size(); ++i)
    in.push_back(is_index_input(op.inputs[i]) ? Tensor<Space>() : Tensor<Space>::from_host(inputs.arrays[i].shape, inputs.arrays[i].data));
  const auto& n = op.name;
  const int ignore = static_cast<int>(set.integer("ignore_index", -100, INT_MIN, INT_MAX));
  if (n == "embedding") return {host(ops::embedding<Space>(to_index_view<Space>(inputs.ids[0]), in[1], inputs.ids[0].shape))};
  if (n == "embedding_backward") {
    const auto& ids = inputs.ids[0];
    long long max_id = -1;
    for (auto id : ids.data) max_id = std::max<long long>(max_id, id);
    const auto vocab = set.integer("vocab", max_id + 1, 1, INT_MAX);
    const auto& dout = in[1];
    Tensor<Space> dtable({vocab, dout.dim(-1)}, "ptk::dtable");
    ops::embedding_backward<Space>(dtable, dout, to_index_view<Space>(ids));
    return {host(dtable)};
  }
  if (n == "cross_entropy" || n == "cross_entropy_backward") {
    const auto targets = to_index_view<Space>(inputs.ids[1]);
    const auto r = ops::cross_entropy<Space>(in[0], targets, ignore);
    if (n == "cross_entropy") return {io::NpyArray{{}, {r.loss_value()}}, host(r.losses), host(r.lse)};
    Tensor<Space> dlogits(in[0].shape(), "ptk::dlogits");
    ops::cross_entropy_backward<Space>(dlogits, set.number("dloss", 1.0f), in[0], r.lse, targets, r.counted, ignore);
    return {host(dlogits)};
  }
  if (n == "rope" || n == "rope_backward") {
    const auto offset = set.integer("pos_offset", 0, 0, INT_MAX);
    const auto base = set.number("base", 10000.0f);
    const auto layout = rope_layout(set, n);
    if (n == "rope") return {host(ops::rope(in[0], offset, base, layout))};
    Tensor<Space> dx(in[0].shape(), "ptk::drope");
    ops::rope_backward(dx, in[0], offset, base, layout);
    return {host(dx)};
  }
  std::vector<io::NpyArray> out;
  for (const auto& t : run_tensors<Space>(op, in, set)) out.push_back(host(t));
  return out;
}


template <class Space>
std::vector<io::NpyArray> run_to_host(const OpSpec& op, const OpInputs& inputs, const Settings& set) {
  return run<Space>(op, inputs, set);
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
  std::cout << "ops (inputs -> outputs; --set keys with defaults). Inputs are float32 .npy, except ids and\n"
               "targets: int32 or int64 .npy (ids in [0, V); targets in [0, V) or ignore_index). cross_entropy's\n"
               "loss is the mean over counted rows, a 0-d array; rope's layout is bthd ([B,T,H,D]) or bhtd ([B,H,T,D]).\n"
               "Backward ops write fresh gradients (dX = 0 + ...): embedding_backward gives dtable [vocab, C],\n"
               "cross_entropy_backward recomputes the forward and gives dlogits for the loss scaled by dloss;\n"
               "matmul_backward gives dA, dB shaped as A, B (a rank-2 operand's gradient summed over the batch);\n"
               "attention_backward runs the forward for O and lse, then gives dQ, dK, dV for the upstream dO.\n"
               "softmax_backward takes the forward's output Y (causal needs no key: masked Y are 0);\n"
               "layernorm_backward and rmsnorm_backward recompute mean and rstd with the forward (eps as there).\n";
  for (const auto& op : kOps) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : op.keys) keys.push_back(k + "=" + v);
    std::vector<std::string> outputs;
    for (const auto& o : op.outputs) outputs.push_back(optional_output(o) ? "[" + o + "]" : o);
    std::cout << "  " << op.name << ": " << join(op.inputs) << " -> " << join(outputs)
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
  if (outputs.size() < required_outputs(op) || outputs.size() > op.outputs.size()) {
    if (required_outputs(op) == op.outputs.size()) throw count_error("--out", outputs.size(), op.outputs);
    throw UsageError{where + "expects " + std::to_string(required_outputs(op)) + " to " +
                     std::to_string(op.outputs.size()) + " --out (" + join(op.outputs) + "; the last optional), got " +
                     std::to_string(outputs.size())};
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto slash = outputs[i].find_last_of('/');
    const auto dir = slash == std::string::npos ? std::string(".") : outputs[i].substr(0, slash + 1);
    if (access(dir.c_str(), W_OK) != 0)
      throw UsageError{where + "cannot write " + op.outputs[i] + " to " + outputs[i] + ": " + std::strerror(errno)};
  }
  const Settings settings(op, values);

  OpInputs arrays;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    arrays.arrays.emplace_back();
    arrays.ids.emplace_back();
    if (is_index_input(op.inputs[i])) {
      arrays.ids.back() = io::read_npy_ids(inputs[i]);
      for (auto id : arrays.ids.back().data)
        if (id < INT_MIN || id > INT_MAX)
          throw UsageError{where + op.inputs[i] + " (" + inputs[i] + ") holds " + std::to_string(id) +
                           ", which does not fit a 32-bit int"};
    } else {
      arrays.arrays.back() = io::read_npy(inputs[i]);
    }
    const auto& shape = is_index_input(op.inputs[i]) ? arrays.ids.back().shape : arrays.arrays.back().shape;
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
  results.resize(outputs.size());  // optional saved statistics nobody asked for
  write_all(outputs, results);
  return 0;
}

}  // namespace ptk::tools
