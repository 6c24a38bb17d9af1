#pragma once
// The GPU's GEMM (Tune::matmul::register_tiled; tuning.hpp, GpuMatmul): c[B,M,N] = alpha · op(a) ·
// op(b) + beta · c as matmul.hpp states it, each thread's tile of c held in registers for all of K; a and b stored
// as EA and EB (f32, bf16, f16: the slab copy reads them as float, load.hpp), c and every sum in f32.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ptk/core/buffer_pool.hpp"
#include "ptk/core/tensor.hpp"
#include "ptk/kernels/detail/load.hpp"
#include "ptk/kernels/detail/memory_hints.hpp"
#include "ptk/kernels/tuning.hpp"

namespace ptk::kernels {

// One team per (batch, 128-row block, 64-column block). Per 16-deep slab of k:
//   copy_slabs   every thread copies its share of op(a)'s and op(b)'s slab into scratch, k-major
//                (As[k][m], Bs[k][n]), consecutive threads reading consecutive addresses of a and
//                b (coalesced) and writing zeros past the matrix edges;
//   barrier;
//   multiply     each thread adds, for each of its tiles, the slab's 16 rank-1 updates of its
//                8 x 4 tile (per k: two 16-byte loads of As, one of Bs, 32 FMAs) into `part`;
//   fold         every `chunk` k-steps (and at the end) part is added into acc and cleared;
//   barrier;
// and at the end write_back stores alpha · acc (+ bias) + beta · c once (beta = 0: c is not read).
// Split K (matmul_split): a team sums one range of split_k steps and stores its sums in `partial`; a second launch,
// MatmulSplitSum, adds the ranges in order and stores c as above.
// A thread's tiles: thread t owns tiles t, t + team_size, ...; tile v covers rows (v / 16) · 8 and
// columns (v % 16) · 4 of the block, so a warp's 32 tiles read 16 distinct, consecutive float4 of
// Bs (one bank each per quarter warp) and 2 broadcast addresses of As.
template <class Space, class Tune, class EA = float, class EB = float>
struct MatmulRegisterTiled {
  using Tiles = typename Tune::matmul;
  static constexpr int BM = Tiles::block_rows, BN = Tiles::block_cols, KS = Tiles::slab;
  static constexpr int TM = Tiles::micro_rows, TN = Tiles::micro_cols;
  static constexpr int threads = Tiles::team_size, tiles = Tiles::tiles_per_thread;
  static constexpr int tiles_across = BN / TN;
  static constexpr int lda = BM + Tiles::pad, ldb = BN + Tiles::pad;  // floats per k-row of the slabs
  static_assert(TM % 4 == 0 && TN % 4 == 0 && lda % 4 == 0 && ldb % 4 == 0, "float4 reads need 16-byte rows");
  using Policy = Kokkos::TeamPolicy<Space, Kokkos::Schedule<Kokkos::Static>,
                                    Kokkos::LaunchBounds<Tiles::threads, Tiles::launch_min_blocks>>;
  using Team = typename Policy::member_type;
  using Scratch =
      Kokkos::View<float*, typename Space::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  // The scratch layout, used both to size the request and to carve it: the A slab, then the B slab,
  // starting at the first 16-byte boundary of the team's scratch (3 floats of slack for that).
  static constexpr int slab_floats = KS * lda + KS * ldb;
  static std::size_t scratch_bytes() { return Scratch::shmem_size(slab_floats + 3); }
  KOKKOS_INLINE_FUNCTION static float* carve(const Team& team) {
    const Scratch raw(team.team_scratch(0), slab_floats + 3);
    const std::uintptr_t p = reinterpret_cast<std::uintptr_t>(raw.data());
    return raw.data() + ((16 - p % 16) % 16) / sizeof(float);
  }

  Tensor3<Space> c;
  ConstTensor3Of<Space, EA> a;
  ConstTensor3Of<Space, EB> b;
  ConstVector<Space> bias;  // [N], added to every row, or empty
  bool trans_a, trans_b;
  float alpha, beta;
  int M, N, K;
  int row_blocks, col_blocks;
  int split_k;     // k-steps a team sums: K, or a multiple of KS when K is split
  float* partial;  // split K: [splits][batch][M][N], each range's sums; else null

  struct Block {
    const EA* a;  // op(a)'s batch matrix, as stored
    const EB* b;
    int lda, ldb;       // row strides of a and b as stored
    int i0, j0;         // the block's first row and column of c
    int batch, split;
    int k_begin, k_end;  // the k-steps this team sums
  };

  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    const int blocks = static_cast<int>(c.extent(0)) * row_blocks * col_blocks;  // a split's teams
    const int rank = team.league_rank() % blocks;
    Block blk;
    blk.split = team.league_rank() / blocks;
    blk.k_begin = blk.split * split_k;
    blk.k_end = K - blk.k_begin < split_k ? K : blk.k_begin + split_k;
    blk.batch = rank / (row_blocks * col_blocks);
    blk.i0 = rank % row_blocks * BM;  // row blocks vary fastest: neighbours share a B panel in L2
    blk.j0 = rank / row_blocks % col_blocks * BN;
    blk.a = &a(a.extent(0) == 1 ? 0 : blk.batch, 0, 0);
    blk.b = &b(b.extent(0) == 1 ? 0 : blk.batch, 0, 0);
    blk.lda = static_cast<int>(a.extent(2));
    blk.ldb = static_cast<int>(b.extent(2));
    float* const as = carve(team);
    float* const bs = as + KS * lda;
    const int t = team.team_rank();

    float acc[tiles][TM][TN], part[tiles][TM][TN];
    for (int s = 0; s < tiles; ++s)
      for (int r = 0; r < TM; ++r)
        for (int q = 0; q < TN; ++q) acc[s][r][q] = part[s][r][q] = 0.0f;

    for (int k0 = blk.k_begin; k0 < blk.k_end; k0 += KS) {
      copy_slabs(team, blk, k0, as, bs);
      team.team_barrier();
      multiply(t, as, bs, part);
      if ((k0 - blk.k_begin + KS) % Tiles::chunk == 0 || k0 + KS >= blk.k_end) fold(acc, part);
      team.team_barrier();  // the slabs are read before the next copy overwrites them
    }
    write_back(t, blk, acc);
  }

  // op(a)[i0 + m, k0 + k] -> as[k * lda + m] and op(b)[k0 + k, j0 + n] -> bs[k * ldb + n], zero outside the
  // matrices and past the team's k range. Element e of a slab goes to thread e % threads; e runs along the stored
  // rows of a and b, so the threads of a warp read consecutive addresses.
  KOKKOS_INLINE_FUNCTION void copy_slabs(const Team& team, const Block& blk, int k0, float* as, float* bs) const {
    const int t = team.team_rank();
    for (int e = t; e < BM * KS; e += threads) {
      int m, k;
      float value = 0.0f;
      if (!trans_a) {  // a[M, K]: k is contiguous
        m = e / KS, k = e % KS;
        if (blk.i0 + m < M && k0 + k < blk.k_end)
          value = load(blk.a + static_cast<std::size_t>(blk.i0 + m) * blk.lda, k0 + k);
      } else {  // a[K, M]: m is contiguous
        k = e / BM, m = e % BM;
        if (blk.i0 + m < M && k0 + k < blk.k_end)
          value = load(blk.a + static_cast<std::size_t>(k0 + k) * blk.lda, blk.i0 + m);
      }
      as[k * lda + m] = value;
    }
    for (int e = t; e < KS * BN; e += threads) {
      int k, n;
      float value = 0.0f;
      if (!trans_b) {  // b[K, N]: n is contiguous
        k = e / BN, n = e % BN;
        if (k0 + k < blk.k_end && blk.j0 + n < N)
          value = load(blk.b + static_cast<std::size_t>(k0 + k) * blk.ldb, blk.j0 + n);
      } else {  // b[N, K]: k is contiguous
        n = e / KS, k = e % KS;
        if (k0 + k < blk.k_end && blk.j0 + n < N)
          value = load(blk.b + static_cast<std::size_t>(blk.j0 + n) * blk.ldb, k0 + k);
      }
      bs[k * ldb + n] = value;
    }
  }

  // part[s] += the slab's product for each of the thread's tiles (zero-padded k adds 0).
  KOKKOS_INLINE_FUNCTION void multiply(int t, const float* as, const float* bs, float (&part)[tiles][TM][TN]) const {
    for (int s = 0; s < tiles; ++s) {
      const int v = t + s * threads;
      const float* ap = as + v / tiles_across * TM;
      const float* bp = bs + v % tiles_across * TN;
      PTK_UNROLL
      for (int k = 0; k < KS; ++k) {
        float av[TM], bv[TN];
        for (int r = 0; r < TM; r += 4) load4_scratch(av + r, ap + k * lda + r);
        for (int q = 0; q < TN; q += 4) load4_scratch(bv + q, bp + k * ldb + q);
        for (int r = 0; r < TM; ++r)
          for (int q = 0; q < TN; ++q) part[s][r][q] += av[r] * bv[q];
      }
    }
  }

  KOKKOS_INLINE_FUNCTION static void fold(float (&acc)[tiles][TM][TN], float (&part)[tiles][TM][TN]) {
    for (int s = 0; s < tiles; ++s)
      for (int r = 0; r < TM; ++r)
        for (int q = 0; q < TN; ++q) {
          acc[s][r][q] += part[s][r][q];
          part[s][r][q] = 0.0f;
        }
  }

  KOKKOS_INLINE_FUNCTION void write_back(int t, const Block& blk, const float (&acc)[tiles][TM][TN]) const {
    for (int s = 0; s < tiles; ++s) {
      const int v = t + s * threads;
      const int i = blk.i0 + v / tiles_across * TM, j = blk.j0 + v % tiles_across * TN;
      for (int r = 0; r < TM && i + r < M; ++r) {
        if (partial) {  // this range's sums, as they are
          float* pr = partial + ((static_cast<std::size_t>(blk.split) * c.extent(0) + blk.batch) * M + i + r) * N;
          for (int q = 0; q < TN && j + q < N; ++q) pr[j + q] = acc[s][r][q];
          continue;
        }
        float* cr = &c(blk.batch, i + r, 0);
        for (int q = 0; q < TN && j + q < N; ++q) {
          const float y = bias.data() ? alpha * acc[s][r][q] + bias(j + q) : alpha * acc[s][r][q];
          cr[j + q] = beta == 0.0f ? y : y + beta * cr[j + q];
        }
      }
    }
  }
};

// c = alpha · Σ_s partial[s] (+ bias) + beta · c, the ranges added in order: the same bits every run.
template <class Space>
struct MatmulSplitSum {
  Tensor3<Space> c;
  ConstVector<Space> bias;
  const float* partial;
  int splits;
  float alpha, beta;

  KOKKOS_INLINE_FUNCTION void operator()(std::size_t e) const {
    const std::size_t M = c.extent(1), N = c.extent(2), elements = c.extent(0) * M * N;
    const int batch = static_cast<int>(e / (M * N)), i = static_cast<int>(e / N % M), j = static_cast<int>(e % N);
    float sum = partial[e];
    for (int s = 1; s < splits; ++s) sum += partial[s * elements + e];
    const float y = bias.data() ? alpha * sum + bias(j) : alpha * sum;
    float& out = c(batch, i, j);
    out = beta == 0.0f ? y : y + beta * out;
  }
};

struct MatmulSplit {
  int splits, split_k;  // K's ranges and the k-steps of each (the last may be shorter)
};

// How K is split (Tiles: GpuMatmul): not at all while `blocks` (batch x row x column blocks) fill at least half of
// Tiles::fill_blocks; else into as many ranges as bring them to it, none shorter than Tiles::min_split_k steps. The
// shape alone decides, so every device gives the same bits.
template <class Tiles>
MatmulSplit matmul_split(long long blocks, int K) {
  long long splits = 1;
  if (blocks > 0 && 2 * blocks <= Tiles::fill_blocks)
    splits = std::min<long long>(Tiles::fill_blocks / blocks, K / Tiles::min_split_k);
  if (splits <= 1) return {1, K};
  const int split_k = static_cast<int>((K + splits - 1) / splits + Tiles::slab - 1) / Tiles::slab * Tiles::slab;
  return {(K + split_k - 1) / split_k, split_k};
}

// c = alpha · op(a) · op(b) (+ bias) + beta · c with the register-tiled kernel; c is not empty, bias [N] or empty.
// split = false: K is never split (the benchmarks' comparison).
template <class Space, class Tune, class EA = float, class EB = float>
void matmul_register_tiled(const Tensor3<Space>& c, const ConstTensor3Of<Space, EA>& a,
                           const ConstTensor3Of<Space, EB>& b, bool trans_a, bool trans_b, float alpha, float beta,
                           const ConstVector<Space>& bias, bool split = true) {
  using Kernel = MatmulRegisterTiled<Space, Tune, EA, EB>;
  const int batches = static_cast<int>(c.extent(0));
  const int M = static_cast<int>(c.extent(1)), N = static_cast<int>(c.extent(2));
  const int K = static_cast<int>(trans_a ? a.extent(1) : a.extent(2));
  const int row_blocks = (M + Kernel::BM - 1) / Kernel::BM, col_blocks = (N + Kernel::BN - 1) / Kernel::BN;
  const long long blocks = static_cast<long long>(batches) * row_blocks * col_blocks;
  const MatmulSplit s = split ? matmul_split<typename Tune::matmul>(blocks, K) : MatmulSplit{1, K};
  const std::size_t elements = c.extent(0) * c.extent(1) * c.extent(2);
  const auto partial = s.splits > 1 ? work_view<Kokkos::View<float*, Space>>("ptk::matmul_split_sums",
                                                                           s.splits * elements)
                                    : Kokkos::View<float*, Space>();
  const auto policy = typename Kernel::Policy(static_cast<int>(blocks * s.splits), Kernel::threads)
                          .set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes()));
  Kokkos::parallel_for("ptk::matmul_forward", policy,
                       Kernel{c, a, b, bias, trans_a, trans_b, alpha, beta, M, N, K, row_blocks, col_blocks, s.split_k,
                              partial.data()});
  if (s.splits > 1)
    Kokkos::parallel_for("ptk::matmul_split_sum", Kokkos::RangePolicy<Space>(0, elements),
                         MatmulSplitSum<Space>{c, bias, partial.data(), s.splits, alpha, beta});
}

}  // namespace ptk::kernels
