#pragma once
// matmul_forward: c[B,M,N] = alpha · op(a) · op(b) + beta · c per batch; op(a) = a[·,M,K] or, with
// trans_a, a[·,K,M]ᵀ (likewise b). An operand whose batch extent is 1 is broadcast over c's batch.
// beta = 0 overwrites c without reading it; beta = 1 accumulates (c += op(a) · op(b)).
// a and b may be stored as bf16 or f16 (EA, EB: f32 × bf16/f16, a weight stored for inference, or both 16-bit),
// read as float; c and the accumulation are f32. On the host's GEMM (HostMatmul) b may also be q8_0 or q4_0, a
// weight [N, K] read transposed (its blocks widened as it is packed); the GPU's GEMM takes f32, bf16 and f16.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstddef>
#include <KokkosBlas3_gemm.hpp>

#include "ptk/core/tensor.hpp"
#include "ptk/core/vendor_blas.hpp"
#include "ptk/kernels/add.hpp"
#include "ptk/kernels/instances.hpp"
#include "ptk/kernels/matmul_blocked.hpp"
#include "ptk/kernels/matmul_decode.hpp"
#include "ptk/kernels/matmul_register_tiled.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

enum class MatmulImpl {
  portable,     // the Kokkos kernel below: one source for every backend
  kokkos_blas,  // KokkosBlas::gemm: OpenBLAS / cuBLAS through Kokkos Kernels' TPLs where enabled
};

// The vendor GEMM (core/vendor_blas.hpp) for two 16-bit operands, on the stream Space's kernels run on; false: not
// taken (no cuBLAS, or the route is off), the caller runs its own kernel.
template <class Space, class E>
bool matmul_vendor16(const Tensor3<Space>& c, const ConstTensor3Of<Space, E>& a, const ConstTensor3Of<Space, E>& b,
                     bool trans_a, bool trans_b, float alpha, float beta) {
  const auto matrix = [](const auto& v) { return v.extent(0) == 1 ? 0LL : static_cast<long long>(v.extent(1) * v.extent(2)); };
  const vendor::Gemm16 g{std::is_same_v<E, ::ptk::bf16> ? vendor::Operand::bf16 : vendor::Operand::f16,
                         static_cast<int>(c.extent(0)), static_cast<int>(c.extent(1)), static_cast<int>(c.extent(2)),
                         static_cast<int>(trans_a ? a.extent(1) : a.extent(2)), trans_a, trans_b, a.data(), matrix(a),
                         b.data(), matrix(b), c.data(), alpha, beta};
  return vendor::gemm16(g, compat::native_stream(Space()));
}

// c = alpha · op(a) · op(b) (+ bias) + beta · c (beta = 0: c is only written; bias [N], a linear layer's, added to
// every row as the kernel stores, or empty). The portable kernel is the decode kernel (matmul_decode.hpp) for a few
// f32 rows against a shared [N,K] weight (decode_applies), else the GEMM Tune::matmul names (tuning.hpp): the host's
// cache-blocked one or the GPU's register-tiled one, and on a GPU for two 16-bit operands the vendor GEMM where there
// is one (the bias then a pass of its own, as after KokkosBlas::gemm, the `impl` that takes f32 only).
template <class Space, class Tune = Tuning<Space>, class EA = float, class EB = float>
void matmul_forward(const Tensor3<Space>& c, const Same<ConstTensor3Of<Space, EA>>& a,
                    const Same<ConstTensor3Of<Space, EB>>& b, bool trans_a, bool trans_b, float alpha, float beta,
                    MatmulImpl impl = MatmulImpl::portable, const ConstVector<Space>& bias = {}) {
  static_assert(Element<EA>::block == 1 && (Element<EB>::block == 1 || !Tune::matmul::register_tiled),
                "the GEMM takes a in f32, bf16 and f16; b also in q8_0 and q4_0 on the host");
  const int batches = static_cast<int>(c.extent(0));
  const int M = static_cast<int>(c.extent(1)), N = static_cast<int>(c.extent(2));
  if (batches == 0 || M == 0 || N == 0) return;
  const auto add_bias = [&] {  // a pass of its own, after a product whose store cannot take it
    const Matrix<Space> rows(c.data(), batches * M, N);
    if (bias.data()) bias_forward<Space>(rows, rows, bias);
  };
  if constexpr (std::is_same_v<EA, float> && std::is_same_v<EB, float>) {
    if (impl == MatmulImpl::kokkos_blas) {
      for (int batch = 0; batch < batches; ++batch) {
        const auto a2 = Kokkos::subview(a, a.extent(0) == 1 ? 0 : batch, Kokkos::ALL, Kokkos::ALL);
        const auto b2 = Kokkos::subview(b, b.extent(0) == 1 ? 0 : batch, Kokkos::ALL, Kokkos::ALL);
        const auto c2 = Kokkos::subview(c, batch, Kokkos::ALL, Kokkos::ALL);
        KokkosBlas::gemm(trans_a ? "T" : "N", trans_b ? "T" : "N", alpha, a2, b2, beta, c2);
      }
      add_bias();
      return;
    }
  } else {
    require(impl == MatmulImpl::portable, "matmul: KokkosBlas::gemm takes f32 operands only");
  }
  if constexpr (Tune::matmul::vendor_gemm16 && !is_host_space_v<Space> && std::is_same_v<EA, EB> &&
                !std::is_same_v<EA, float>) {
    if (matmul_vendor16<Space, EA>(c, a, b, trans_a, trans_b, alpha, beta)) {
      add_bias();
      return;
    }
  }
  if constexpr (std::is_same_v<EA, float>) {
    // decode_applies reads b's extents only: an f32 view of them, over no data, stands in for a stored b.
    if (decode_applies<Space>(c, a, ConstTensor3<Space>(nullptr, b.extent(0), b.extent(1), b.extent(2)), trans_a, trans_b)) {
      const int rows = batches * M, K = static_cast<int>(a.extent(2));
      matmul_decode<Space, Tune, EB>(Matrix<Space>(c.data(), rows, N), ConstMatrix<Space>(a.data(), rows, K),
                                     ConstMatrixOf<Space, EB>(b.data(), N, b.extent(2)), alpha, beta, bias);
      return;
    }
  }
  if constexpr (Tune::matmul::register_tiled) {
    matmul_register_tiled<Space, Tune, EA, EB>(c, a, b, trans_a, trans_b, alpha, beta, bias);
  } else {
    matmul_blocked<Space, Tune, EA, EB>(c, a, b, trans_a, trans_b, alpha, beta, bias);
  }
}

// c = op(a) · op(b).
template <class Space, class Tune = Tuning<Space>>
void matmul_forward(const Tensor3<Space>& c, const ConstTensor3<Space>& a, const ConstTensor3<Space>& b,
                    bool trans_a, bool trans_b, MatmulImpl impl = MatmulImpl::portable) {
  matmul_forward<Space, Tune>(c, a, b, trans_a, trans_b, 1.0f, 0.0f, impl);
}

// matmul_backward: dC[batch,M,N]; a, b, da, db as stored (a[·,M,K] or [·,K,M] with trans_a; likewise b), batch
// extent 1 = broadcast. da += (dC·op(b)ᵀ in a's layout), db += (op(a)ᵀ·dC in b's layout); broadcast grads sum over batch.
//
// Every product is the GEMM above with beta = 1, so accumulation, determinism and accuracy are the
// forward's. A gradient summed over the batch is one GEMM over a flattened batch where the batch index
// and the reduction index are adjacent in memory (b[K,N] shared with a[B,M,K]: Σ_b a[b]ᵀ dC[b] =
// a[B·M,K]ᵀ · dC[B·M,N]); otherwise (a transposed, or the left operand shared) a loop of accumulating
// GEMMs over the batch, in batch order. An empty View (data() == nullptr) means "not wanted".
template <class Space, class Tune = Tuning<Space>>
void matmul_backward(const Tensor3<Space>& da, const Tensor3<Space>& db, const ConstTensor3<Space>& dc,
                     const ConstTensor3<Space>& a, const ConstTensor3<Space>& b, bool trans_a, bool trans_b,
                     MatmulImpl impl = MatmulImpl::portable) {
  const int batches = static_cast<int>(dc.extent(0));
  const int M = static_cast<int>(dc.extent(1)), N = static_cast<int>(dc.extent(2));
  const int K = static_cast<int>(trans_a ? a.extent(1) : a.extent(2));
  // Unmanaged [n, rows, cols] view into a buffer: one matrix of a batch, or a flattened batch.
  const auto cmat = [](const float* p, int n, int rows, int cols) { return ConstTensor3<Space>(p, n, rows, cols); };
  const std::size_t MN = static_cast<std::size_t>(M) * N, MK = static_cast<std::size_t>(M) * K,
                    KN = static_cast<std::size_t>(K) * N;
  if (da.data() != nullptr) {
    // op(a) gets dC · op(b)ᵀ; stored transposed, a gets op(b) · dCᵀ.
    const auto gemm = [&](const Tensor3<Space>& dst, const ConstTensor3<Space>& dc_, const ConstTensor3<Space>& b_) {
      if (!trans_a) matmul_forward<Space, Tune>(dst, dc_, b_, false, !trans_b, 1.0f, 1.0f, impl);
      else matmul_forward<Space, Tune>(dst, b_, dc_, trans_b, true, 1.0f, 1.0f, impl);
    };
    if (static_cast<int>(da.extent(0)) == batches) {
      gemm(da, dc, b);  // one gradient per batch (b broadcast by the kernel where shared)
    } else {
      // a shared over the batch: the reduction runs over (batch, n), which no row-major view makes
      // contiguous, so accumulate one batch at a time.
      const bool b_shared = b.extent(0) == 1;
      for (int i = 0; i < batches; ++i)
        gemm(da, cmat(dc.data() + i * MN, 1, M, N),
             cmat(b.data() + (b_shared ? 0 : i * KN), 1, static_cast<int>(b.extent(1)), static_cast<int>(b.extent(2))));
    }
  }
  if (db.data() != nullptr) {
    // op(b) gets op(a)ᵀ · dC; stored transposed, b gets dCᵀ · op(a).
    const auto gemm = [&](const Tensor3<Space>& dst, const ConstTensor3<Space>& a_, const ConstTensor3<Space>& dc_) {
      if (!trans_b) matmul_forward<Space, Tune>(dst, a_, dc_, !trans_a, false, 1.0f, 1.0f, impl);
      else matmul_forward<Space, Tune>(dst, dc_, a_, true, trans_a, 1.0f, 1.0f, impl);
    };
    if (static_cast<int>(db.extent(0)) == batches) {
      gemm(db, a, dc);
    } else if (!trans_a && a.extent(0) == static_cast<std::size_t>(batches)) {
      // Σ_batch a[i]ᵀ dC[i] with a[B,M,K]: rows (batch, m) are contiguous in a and in dC.
      gemm(db, cmat(a.data(), 1, batches * M, K), cmat(dc.data(), 1, batches * M, N));
    } else {
      const bool a_shared = a.extent(0) == 1;
      for (int i = 0; i < batches; ++i)
        gemm(db, cmat(a.data() + (a_shared ? 0 : i * MK), 1, static_cast<int>(a.extent(1)), static_cast<int>(a.extent(2))),
             cmat(dc.data() + i * MN, 1, M, N));
    }
  }
}

}  // namespace ptk::kernels

// Explicit instantiations (instances.hpp): compiled once, in src/ptk/kernels/inst/, for every space and tuning the
// build has; declared extern here so that no other translation unit compiles these kernels again.
#define PTK_MATMUL_TUNED_INSTANCES(EXT, Space, Tune) \
  EXT template void matmul_forward<Space, Tune>(const Tensor3<Space>& c, const ConstTensor3<Space>& a, const ConstTensor3<Space>& b, bool trans_a, bool trans_b, float alpha, float beta, MatmulImpl impl, const ConstVector<Space>& bias); \
  EXT template void matmul_forward<Space, Tune>(const Tensor3<Space>& c, const ConstTensor3<Space>& a, const ConstTensor3<Space>& b, bool trans_a, bool trans_b, MatmulImpl impl); \
  EXT template void matmul_backward<Space, Tune>(const Tensor3<Space>& da, const Tensor3<Space>& db, const ConstTensor3<Space>& dc, const ConstTensor3<Space>& a, const ConstTensor3<Space>& b, bool trans_a, bool trans_b, MatmulImpl impl);
namespace ptk::kernels {
PTK_FOR_EACH_CONFIG(PTK_MATMUL_TUNED_INSTANCES, extern)
}  // namespace ptk::kernels
