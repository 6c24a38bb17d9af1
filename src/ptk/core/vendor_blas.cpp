#include "ptk/core/vendor_blas.hpp"

#include "ptk/core/error.hpp"

#include <Kokkos_Macros.hpp>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cublas_v2.h>  // types and enums only: the functions are looked up in the library loaded below
#include <dlfcn.h>
#endif

namespace ptk::vendor {
namespace {

std::atomic<bool> g_enabled{[] {
  const char* env = std::getenv("PTK_VENDOR_GEMM");
  return !(env && std::string(env) == "0");
}()};

#if defined(KOKKOS_ENABLE_CUDA)
// The cuBLAS functions used, typed by the header of the toolkit ptk was built with; their C signatures have not
// changed from cuBLAS 11 to 13.
struct Cublas {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasGetVersion_v2) version = nullptr;
  // The C function; C++ also sees an inline overload taking a cudaDataType compute type (cuBLAS 11's old form).
  using Gemm = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                  const void*, cudaDataType, int, long long, const void*, cudaDataType, int, long long,
                                  const void*, void*, cudaDataType, int, long long, int, cublasComputeType_t,
                                  cublasGemmAlgo_t);
  decltype(static_cast<Gemm>(&::cublasGemmStridedBatchedEx)) gemm = nullptr;  // checked against the header
  const char* (*status_string)(cublasStatus_t) = nullptr;  // cuBLAS >= 11.4.2; optional
  cublasHandle_t handle = nullptr;
  std::string route;  // "cuBLAS ..." once ready, else "portable: why"
  bool ready = false;
};

std::mutex g_mutex;  // one cuBLAS handle for the process: calls from several threads take turns

std::string status_text(const Cublas& lib, cublasStatus_t s) {
  if (lib.status_string) return lib.status_string(s);
  return "cuBLAS status " + std::to_string(static_cast<int>(s));
}

// Loads and initializes cuBLAS once (under g_mutex); lib.route says what happened.
Cublas& cublas() {
  static Cublas lib = [] {
    Cublas l;
    std::string tried;
    void* so = nullptr;
    const char* path = std::getenv("PTK_CUBLAS");
    for (const char* name : {path, "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}) {
      if (name == nullptr || *name == '\0') continue;
      if ((so = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) {
        tried = name;
        break;
      }
      tried += (tried.empty() ? "" : ", ") + std::string(name);
    }
    if (so == nullptr) {
      l.route = "portable: no cuBLAS found (tried " + tried + "; PTK_CUBLAS names one)";
      return l;
    }
    const auto find = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(so, symbol));
      return fn != nullptr;
    };
    find(l.status_string, "cublasGetStatusString");
    if (!find(l.create, "cublasCreate_v2") || !find(l.set_stream, "cublasSetStream_v2") ||
        !find(l.version, "cublasGetVersion_v2") || !find(l.gemm, "cublasGemmStridedBatchedEx")) {
      l.route = "portable: " + tried + " lacks the GEMM's functions";
      return l;
    }
    if (const cublasStatus_t s = l.create(&l.handle); s != CUBLAS_STATUS_SUCCESS) {
      l.route = "portable: cublasCreate (" + tried + "): " + status_text(l, s);
      return l;
    }
    int version = 0;
    l.version(l.handle, &version);
    l.route = "cuBLAS " + std::to_string(version) + " (" + tried + ")";
    l.ready = true;  // the handle is never destroyed: at exit the CUDA context may already be gone
    return l;
  }();
  return lib;
}
#endif

}  // namespace

bool enable_gemm16(bool on) { return g_enabled.exchange(on); }

ColumnMajorGemm column_major(const Gemm16& g) {
  const bool fold = g.batches > 1 && g.stride_b == 0 && g.stride_a != 0 && !g.trans_a;
  const int rows = fold ? g.M * g.batches : g.M, batches = fold ? 1 : g.batches;
  return {g.trans_b, g.trans_a, g.N, rows, g.K, batches,
          g.b, g.trans_b ? g.K : g.N, g.stride_b,
          g.a, g.trans_a ? g.M : g.K, g.stride_a,
          g.N, static_cast<long long>(g.M) * g.N};
}

#if defined(KOKKOS_ENABLE_CUDA)
bool gemm16(const Gemm16& g, void* stream) {
  if (!g_enabled.load()) return false;
  std::lock_guard<std::mutex> lock(g_mutex);
  Cublas& lib = cublas();
  if (!lib.ready) return false;
  const ColumnMajorGemm c = column_major(g);
  const cudaDataType type = g.type == Operand::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const auto op = [](bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; };
  cublasStatus_t s = lib.set_stream(lib.handle, static_cast<cudaStream_t>(stream));
  if (s == CUBLAS_STATUS_SUCCESS)
    s = lib.gemm(lib.handle, op(c.trans_first), op(c.trans_second), c.m, c.n, c.k, &g.alpha, c.first, type,
                 c.ld_first, c.stride_first, c.second, type, c.ld_second, c.stride_second, &g.beta, g.c, CUDA_R_32F,
                 c.ldc, c.stride_c, c.batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s == CUBLAS_STATUS_SUCCESS) return true;
  const std::string why = status_text(lib, s);
  // A call refused before anything ran (the arguments, the device, the library's state): ptk's kernel takes it and
  // every later one. Any other failure may have written part of c, which no retry can undo.
  if (s != CUBLAS_STATUS_NOT_SUPPORTED && s != CUBLAS_STATUS_INVALID_VALUE && s != CUBLAS_STATUS_ARCH_MISMATCH &&
      s != CUBLAS_STATUS_NOT_INITIALIZED)
    throw InternalError("the vendor GEMM (cublasGemmStridedBatchedEx) failed: " + why);
  lib.ready = false;
  lib.route = "portable: cublasGemmStridedBatchedEx refused a call: " + why;
  std::cerr << "ptk: the vendor GEMM refused a call (" << why << "); 16-bit GEMMs run ptk's own kernel\n";
  return false;
}

std::string gemm16_route() {
  if (!g_enabled.load()) return "portable: PTK_VENDOR_GEMM=0";
  std::lock_guard<std::mutex> lock(g_mutex);
  return cublas().route;
}
#else
bool gemm16(const Gemm16&, void*) { return false; }

std::string gemm16_route() {
#if defined(KOKKOS_ENABLE_HIP)
  return "portable: no vendor GEMM in the HIP build (Debian 12 has no rocBLAS)";
#else
  return "portable: the host's own GEMM";
#endif
}
#endif

}  // namespace ptk::vendor
