#pragma once
// The vendor GEMM for 16-bit operands: cuBLAS on the tensor cores, which no portable Kokkos code reaches. The GPU
// tuning (kernels/tuning.hpp, GpuMatmul::vendor_gemm16) routes bf16 × bf16 and f16 × f16 products here and runs ptk's
// own GEMM where this returns false. cuBLAS is loaded at run time (dlopen), not linked: the CUDA build then runs
// where no cuBLAS is installed (the portable kernel does the work), and takes whichever cuBLAS major the machine's
// driver pairs with (11, 12 or 13: the GEMM's C interface is the same), so that an install need not carry cuBLAS
// 11's 600 MB. No Kokkos here: the caller hands over the device pointers and the stream its kernels run on.
//
// Environment: PTK_VENDOR_GEMM=0 turns the route off (ptk's kernel for every dtype); PTK_CUBLAS=/path/libcublas.so.N
// names the library (else libcublas.so.13, .12, .11 are tried on the loader's path).
#include <string>

namespace ptk::vendor {

enum class Operand { bf16, f16 };

// c[i] = alpha · op(a[i]) · op(b[i]) + beta · c[i] for i < batches, all row-major and contiguous: op(a) is
// [M, K] (stored [K, M] when trans_a), op(b) [K, N], c [M, N] in f32; stride_a / stride_b are the elements
// between consecutive batches (0: one matrix shared by every batch); fp32 accumulation.
struct Gemm16 {
  Operand type;
  int batches, M, N, K;
  bool trans_a, trans_b;
  const void* a;
  long long stride_a;
  const void* b;
  long long stride_b;
  float* c;
  float alpha, beta;
};

// The column-major BLAS call (cuBLAS's convention) that computes g: row-major C = op(A) · op(B) is column-major
// Cᵀ = op(B)ᵀ · op(A)ᵀ over the same buffers, b first (a row-major [r, c] buffer read column-major is its
// transpose, leading dimension c); a b shared by every batch (a linear layer's weight) folds the batches into the
// rows of one product. Compiled in every build: the host suite checks it against the oracle.
struct ColumnMajorGemm {
  bool trans_first, trans_second;  // op() of the first operand (g.b) and of the second (g.a)
  int m, n, k, batches;
  const void* first;
  int ld_first;
  long long stride_first;
  const void* second;
  int ld_second;
  long long stride_second;
  int ldc;
  long long stride_c;
};
ColumnMajorGemm column_major(const Gemm16& g);

// Runs g on `stream` (the cudaStream_t the caller's kernels use) through cuBLAS and returns true; false where the
// route is off, the build is not CUDA's, no cuBLAS loads or initializes, or cuBLAS refuses the call before running
// it (said once on stderr; the route stays off): the caller then runs its own kernel. A failure after cuBLAS began
// (c may be half written) throws InternalError.
bool gemm16(const Gemm16& g, void* stream);

// One line on the route, for `ptk info` and the tests: "cuBLAS 130100 (libcublas.so.13)" or "portable: <why>".
// Loads cuBLAS if no call has yet.
std::string gemm16_route();

// Turns the route on or off for this process (the benchmarks time both in one run); returns the previous state.
bool enable_gemm16(bool on);

}  // namespace ptk::vendor
