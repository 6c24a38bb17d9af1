#pragma once
// matmul_forward: c[B,M,N] = op(a) · op(b) per batch; op(a) = a[·,M,K] or, with trans_a, a[·,K,M]ᵀ
// (likewise b). An operand whose batch extent is 1 is broadcast over c's batch.
#include <Kokkos_Core.hpp>
#include <KokkosBlas3_gemm.hpp>

#include "ptk/core/tensor.hpp"

namespace ptk::kernels {

enum class MatmulImpl {
  portable,     // the Kokkos kernel below: one source for every backend
  kokkos_blas,  // KokkosBlas::gemm: OpenBLAS / cuBLAS through Kokkos Kernels' TPLs where enabled
};

// A team owns a block of kRows rows of c and kCols columns; it keeps the block's partial sums in
// team scratch and walks k, so each b element it loads feeds kRows FMAs and b is read row-wise
// (contiguous when b is not transposed). Threads own fixed columns, so the k loop needs no barrier.
template <class Space>
struct MatmulForward {
  static constexpr int kRows = 4;
  static constexpr int kCols = 256;
  using Policy = Kokkos::TeamPolicy<Space>;
  using Team = typename Policy::member_type;
  using Scratch = Kokkos::View<float[kRows][kCols], typename Space::scratch_memory_space,
                               Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  Tensor3<Space> c;
  ConstTensor3<Space> a, b;
  bool trans_a, trans_b;
  int row_blocks, col_blocks;

  KOKKOS_INLINE_FUNCTION float a_at(int batch, int i, int k) const {
    const int ab = a.extent(0) == 1 ? 0 : batch;
    return trans_a ? a(ab, k, i) : a(ab, i, k);
  }
  KOKKOS_INLINE_FUNCTION float b_at(int batch, int k, int j) const {
    const int bb = b.extent(0) == 1 ? 0 : batch;
    return trans_b ? b(bb, j, k) : b(bb, k, j);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int block = team.league_rank();
    const int batch = block / (row_blocks * col_blocks);
    const int i0 = (block / col_blocks % row_blocks) * kRows;
    const int j0 = block % col_blocks * kCols;
    const int M = static_cast<int>(c.extent(1)), N = static_cast<int>(c.extent(2));
    const int K = static_cast<int>(trans_a ? a.extent(1) : a.extent(2));
    const int rows = M - i0 < kRows ? M - i0 : kRows;
    const int cols = N - j0 < kCols ? N - j0 : kCols;

    Scratch acc(team.team_scratch(0));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](int j) {
      for (int r = 0; r < kRows; ++r) acc(r, j) = 0.0f;
    });
    for (int k = 0; k < K; ++k) {
      float a_col[kRows];
      for (int r = 0; r < kRows; ++r) a_col[r] = r < rows ? a_at(batch, i0 + r, k) : 0.0f;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](int j) {
        const float bkj = b_at(batch, k, j0 + j);
        for (int r = 0; r < kRows; ++r) acc(r, j) += a_col[r] * bkj;
      });
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, cols), [&](int j) {
      for (int r = 0; r < rows; ++r) c(batch, i0 + r, j0 + j) = acc(r, j);
    });
  }
};

template <class Space>
void matmul_forward(const Tensor3<Space>& c, const ConstTensor3<Space>& a, const ConstTensor3<Space>& b,
                    bool trans_a, bool trans_b, MatmulImpl impl = MatmulImpl::portable) {
  const int batches = static_cast<int>(c.extent(0));
  if (impl == MatmulImpl::kokkos_blas) {
    for (int batch = 0; batch < batches; ++batch) {
      const auto a2 = Kokkos::subview(a, a.extent(0) == 1 ? 0 : batch, Kokkos::ALL, Kokkos::ALL);
      const auto b2 = Kokkos::subview(b, b.extent(0) == 1 ? 0 : batch, Kokkos::ALL, Kokkos::ALL);
      const auto c2 = Kokkos::subview(c, batch, Kokkos::ALL, Kokkos::ALL);
      KokkosBlas::gemm(trans_a ? "T" : "N", trans_b ? "T" : "N", 1.0f, a2, b2, 0.0f, c2);
    }
    return;
  }
  using Kernel = MatmulForward<Space>;
  const int row_blocks = (static_cast<int>(c.extent(1)) + Kernel::kRows - 1) / Kernel::kRows;
  const int col_blocks = (static_cast<int>(c.extent(2)) + Kernel::kCols - 1) / Kernel::kCols;
  const auto policy = typename Kernel::Policy(batches * row_blocks * col_blocks, Kokkos::AUTO)
                          .set_scratch_size(0, Kokkos::PerTeam(Kernel::Scratch::shmem_size()));
  Kokkos::parallel_for("ptk::matmul_forward", policy, Kernel{c, a, b, trans_a, trans_b, row_blocks, col_blocks});
}

}  // namespace ptk::kernels
