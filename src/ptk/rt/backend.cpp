#include "ptk/rt/backend.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "ptk/rt/abi.h"
#include "ptk/rt/discovery.hpp"
#include "ptk/rt/report.hpp"

namespace ptk::rt {

struct Backend::Module {
  std::string name, choice;
  decltype(&ptk_backend_run_op) run_op = nullptr;
  decltype(&ptk_backend_free) free = nullptr;
};

Tensor Tensor::floats(std::vector<std::int64_t> shape, std::vector<float> values) {
  Tensor t;
  t.shape = std::move(shape);
  t.values = std::move(values);
  return t;
}

Tensor Tensor::indices(std::vector<std::int64_t> shape, std::vector<std::int64_t> ids) {
  Tensor t;
  t.shape = std::move(shape);
  t.ids = std::move(ids);
  t.index = true;
  return t;
}

Tensor Tensor::to(const std::string& backend_name) const {
  Tensor t = *this;
  t.backend = backend_name;
  return t;
}

namespace {

constexpr int kUsage = 2, kInternal = 1;

// One module per process for library calls, however many Backends are opened: each module holds a Kokkos of its
// own, and two would mean two GPU contexts and two thread pools side by side.
std::mutex opened_mutex;
std::shared_ptr<const Backend::Module> opened;

// Loads the chosen module into this process and starts its Kokkos.
std::shared_ptr<const Backend::Module> load(const Candidate& chosen, const std::string& choice) {
  void* handle = dlopen(chosen.module.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed: Kokkos ends at exit
  const auto symbol = [&](const char* name) { return handle ? dlsym(handle, name) : nullptr; };
  auto start = reinterpret_cast<decltype(&ptk_backend_start)>(symbol("ptk_backend_start"));
  auto module = std::make_shared<Backend::Module>();
  module->name = chosen.name;
  module->choice = choice;
  module->run_op = reinterpret_cast<decltype(&ptk_backend_run_op)>(symbol("ptk_backend_run_op"));
  module->free = reinterpret_cast<decltype(&ptk_backend_free)>(symbol("ptk_backend_free"));
  if (!start || !module->run_op || !module->free) {
    const char* e = dlerror();
    throw Error("backend " + chosen.name + ": " + chosen.module + ": " + (e ? e : "no library API"), kUsage);
  }
  char err[512] = "";
  if (start(err, sizeof err) != 0) throw Error("backend " + chosen.name + " did not start: " + err, kUsage);
  return module;
}

ptk_backend_tensor view_of(const Tensor& t, std::size_t i) {
  ptk_backend_tensor v{};
  if (t.shape.size() > PTK_BACKEND_MAX_RANK)
    throw Error("input " + std::to_string(i) + " has rank " + std::to_string(t.shape.size()) + ", above " +
                    std::to_string(PTK_BACKEND_MAX_RANK), kUsage);
  std::size_t n = 1;
  for (auto d : t.shape) n *= d > 0 ? static_cast<std::size_t>(d) : 0;
  if ((t.index ? t.ids.size() : t.values.size()) != n)
    throw Error("input " + std::to_string(i) + " holds " + std::to_string(t.index ? t.ids.size() : t.values.size()) +
                    " values for " + std::to_string(n) + " elements of its shape", kUsage);
  v.kind = t.index ? PTK_TENSOR_I64 : PTK_TENSOR_F32;
  v.rank = static_cast<int32_t>(t.shape.size());
  for (std::size_t d = 0; d < t.shape.size(); ++d) v.shape[d] = t.shape[d];
  v.data = t.index ? static_cast<void*>(const_cast<std::int64_t*>(t.ids.data()))
                   : static_cast<void*>(const_cast<float*>(t.values.data()));
  return v;
}

}  // namespace

Backend Backend::open(const std::string& preference, const std::string& module_dir) {
  std::string wanted = preference, from = "the preference";
  if (wanted.empty()) {
    const char* env = std::getenv("PTK_BACKEND");
    wanted = env && *env ? env : "auto";
    from = "PTK_BACKEND";
  }
  if (wanted != "auto" && wanted != "cpu" && wanted != "cuda" && wanted != "hip")
    throw Error(from + " is '" + wanted + "'; expected auto, cpu, cuda or hip", kUsage);
  Backend b;
  std::lock_guard<std::mutex> lock(opened_mutex);
  if (!opened) {
    const auto selection = select(wanted, module_dirs({module_dir}));
    if (!selection.chosen) throw Error(no_backend_line(selection.seen, wanted, from), kUsage);
    const std::string choice = wanted == "auto" ? auto_line(selection.seen, *selection.chosen)
                                                : "backend " + wanted + " (" + from + ")";
    opened = load(*selection.chosen, choice);
  } else if (wanted != "auto" && wanted != opened->name) {
    throw Error("this process runs the " + opened->name + " backend; " + from + " " + wanted +
                    " would be a second one (one backend per process)", kUsage);
  }
  b.module_ = opened;
  return b;
}

const std::string& Backend::name() const { return module_->name; }
const std::string& Backend::choice() const { return module_->choice; }

std::vector<Tensor> Backend::run(const std::string& op, const std::vector<Tensor>& inputs,
                                 const std::map<std::string, std::string>& settings) const {
  std::vector<ptk_backend_tensor> in;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].backend.empty() && inputs[i].backend != module_->name)
      throw Error("op " + op + ": input " + std::to_string(i) + " is a tensor of the " + inputs[i].backend +
                      " backend, given to " + module_->name + " (move it with to(\"" + module_->name + "\"))", kUsage);
    in.push_back(view_of(inputs[i], i));
  }
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : settings) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  ptk_backend_tensor out[8]{};
  int32_t n_out = 0;
  char err[1024] = "";
  const int status = module_->run_op(op.c_str(), static_cast<int32_t>(in.size()), in.data(),
                                     static_cast<int32_t>(keys.size()), keys.data(), values.data(), 8, out, &n_out,
                                     err, sizeof err);
  std::vector<Tensor> results;
  for (int32_t i = 0; i < n_out; ++i) {
    std::size_t n = 1;
    for (int d = 0; d < out[i].rank; ++d) n *= static_cast<std::size_t>(out[i].shape[d]);
    const auto* data = static_cast<const float*>(out[i].data);
    if (status == 0) {
      Tensor t = Tensor::floats({out[i].shape, out[i].shape + out[i].rank}, {data, data + n});
      t.backend = module_->name;
      results.push_back(std::move(t));
    }
    module_->free(out[i].data);
  }
  if (status != 0) throw Error(err, status == kUsage ? kUsage : kInternal);
  return results;
}

}  // namespace ptk::rt
