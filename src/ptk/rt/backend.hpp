#pragma once
// ptk for callers that choose the backend at run time (find_package(ptk), target ptk::runtime): no Kokkos in this
// header or in what it links. Backend::open finds the install's backend modules, picks one as `ptk` does
// (preference, else PTK_BACKEND, else auto: cuda, hip, cpu) and runs the op table's ops there on host tensors:
//
//   auto backend = ptk::rt::Backend::open();            // throws ptk::rt::Error when none can run here
//   auto y = backend.run("softmax", {x}, {{"scale", "0.5"}})[0];
//
// Each call copies its inputs to the backend's default space and its outputs back (docs/design.md, "Backends
// chosen at run time", has the cost per call). Tensors remember the backend that made them; giving one to another
// backend is an Error unless it is moved there first (to()). One backend per computation: a CPU forward and a GPU
// backward do not mix by accident.
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

// The directory of the installed modules, set by ptkConfig.cmake for targets that link ptk::runtime.
#ifndef PTK_RT_MODULE_DIR
#define PTK_RT_MODULE_DIR ""
#endif

namespace ptk::rt {

// A backend that cannot run, an op's refusal (its one line, as `ptk op` words it), or tensors of two backends.
class Error : public std::runtime_error {
 public:
  Error(const std::string& line, int status) : std::runtime_error(line), status_(status) {}
  int status() const noexcept { return status_; }  // the tool's exit status for it: 2 the caller's doing, 1 ptk's
 private:
  int status_;
};

// A host tensor: float32 values or int64 indices (token ids, targets) in C order.
struct Tensor {
  std::vector<std::int64_t> shape;
  std::vector<float> values;         // a float tensor's
  std::vector<std::int64_t> ids;     // an index tensor's
  bool index = false;
  std::string backend;               // the backend that made it ("" for the caller's own)

  static Tensor floats(std::vector<std::int64_t> shape, std::vector<float> values);
  static Tensor indices(std::vector<std::int64_t> shape, std::vector<std::int64_t> ids);
  // This tensor given to `backend_name` (the explicit move between backends).
  Tensor to(const std::string& backend_name) const;
};

class Backend {
 public:
  // preference: "auto", "cpu", "cuda", "hip", or "" for PTK_BACKEND (else auto). module_dir: where the modules
  // are (PTK_BACKEND_PATH, when set, wins).
  static Backend open(const std::string& preference = "", const std::string& module_dir = PTK_RT_MODULE_DIR);

  const std::string& name() const;    // "cpu", "cuda", "hip"
  // Why this one: "backend cpu (auto: cuda skipped, no device: ...; hip skipped, not built)".
  const std::string& choice() const;
  // Runs op `op` (ptk op --list) on `inputs` with settings (ptk op --help gives the keys); its outputs, in order.
  std::vector<Tensor> run(const std::string& op, const std::vector<Tensor>& inputs,
                          const std::map<std::string, std::string>& settings = {}) const;

  struct Module;

 private:
  std::shared_ptr<const Module> module_;
};

}  // namespace ptk::rt
