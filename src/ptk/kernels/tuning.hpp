#pragma once
// Every per-space choice of every kernel, and nothing else: how rows, GEMM tiles, attention tiles
// and column sums map onto a team, side by side for the host and for a GPU. A kernel takes its
// tuning as a template parameter (`class Tune = Tuning<Space>`, the space's own); Tune::rows,
// Tune::matmul, Tune::decode, Tune::attention and Tune::columns are its geometries. Measurements behind the host
// numbers are in docs/design.md and docs/benchmarks.md; the GPU mapping is explained there too.
//
// The GPU tuning also runs on OpenMP (EmulatedGpuTuning: teams of at most emulated_gpu_team threads),
// so every GPU code path (team barriers, thread-owned register tiles, cooperative copies, vector
// lanes) is tested on the CPU: the parity tests pass it as the template argument, and the layers
// above the ops take it at run time (PTK_TUNING=gpu, ptk/core/runtime.hpp).
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <type_traits>

#include "ptk/core/compat.hpp"

namespace ptk::kernels {

constexpr int min_int(int a, int b) { return a < b ? a : b; }

// ---- Row ops (softmax, layernorm, rmsnorm) and the elementwise activations -------------------------
// A team sweeps `rows_per_team` rows; TeamThreadRange hands each row to one thread (host: the team
// is one OpenMP thread that walks its rows in turn; GPU: one warp per row). Within a row, the
// thread's `vector_length` ThreadVectorRange lanes each keep `lanes` partial sums, and column j of a
// block of `lanes * vector_length` columns belongs to partial (l, v) with
// j = block + l * vector_length + v. Host (vector_length 1, lanes 32): a fixed-size local array
// over 32 consecutive columns, two AVX-512 registers; GPU (vector_length 32, lanes 1): one register
// per warp lane with coalesced loads.
struct HostRows {
  static constexpr bool host = true;
  static constexpr int rows_per_team = 8;  // amortizes a team's dispatch over short rows
  static constexpr int team_size = 1;
  static constexpr int vector_length = 1;
  static constexpr int lanes = 32;  // partial sums per vector lane
  // The forward layernorm / rmsnorm / softmax sweeps: 16 slots, one AVX-512 vector a partial, so
  // lane_sum2_map's 6 partial vectors stay in registers.
  static constexpr int norm_lanes = 16;
  static constexpr int elementwise_block = 32;  // elements per iteration of gelu / silu (vectorized)
  static constexpr int chunk_blocks = 8;  // blocks summed plainly before a compensated add (lane_sum)
  // How far ahead a sweep that streams a row from memory prefetches its lines, in floats (4 KB).
  static constexpr int prefetch_distance = 1024;
  // Outputs at least this large are written with non-temporal stores by the pipelined forwards
  // (store_block): they cannot stay in the last-level cache anyway, and an ordinary store first
  // reads its line (read-for-ownership). 32 MiB: this machine's L3.
  static constexpr std::size_t stream_store_bytes = std::size_t(32) << 20;
  // Rows a team takes in the software-pipelined forwards: teams_per_thread teams a thread, each a
  // long run of rows (the pipeline restarts at each team).
  static constexpr int pipeline_teams_per_thread = 4;
};

struct GpuRows {
  static constexpr bool host = false;
  static constexpr int rows_per_team = 4;
  static constexpr int team_size = 4;  // one warp per row, 4 warps a block
  static constexpr int vector_length = 32;
  static constexpr int lanes = 1;
  static constexpr int norm_lanes = 1;
  static constexpr int elementwise_block = 1;  // one element a thread: coalesced
  static constexpr int chunk_blocks = 8;
  static constexpr int prefetch_distance = 0;  // other resident warps hide the latency
  static constexpr std::size_t stream_store_bytes = 0;  // never
  static constexpr int pipeline_teams_per_thread = 0;  // a team keeps rows_per_team rows (a row a warp)
};

// ---- GEMM (matmul.hpp) -----------------------------------------------------------------------------
// Host: the blocked Goto-style kernel (MatmulBlocked). A team is the threads that share an L3 (up to team_threads:
// all of them here) and packs a block of A once a slab, into level-1 scratch; each thread packs its column blocks
// of B (96 x 2048: 768 KB, L2) and runs 8 x 48 micro-tiles, 24 AVX-512 accumulators (8 broadcasts and 3 loads a
// k-step), consecutive tiles sharing an A micro-panel. 8 rows waste fewer padded rows on a prompt than 12 x 32
// tiles did (16 rows: 1.15x) at the same speed on training shapes. Long slabs: a weight row is packed in 8 KB runs
// that the hardware prefetcher follows (384-float slabs gave it 1.5 KB runs) and C is read and written once every
// 2048 k-steps; 2048 x 96 against 384 x 480 on the 2-vCPU Xeon: 1.2x at 16 x 4096 x 4096, 1.1-1.2x at 32-128 rows,
// 1.0-1.04x at 512 and on training shapes. Registers sum 384 k-steps (chunk) before the tile in L1 takes them: a
// chunk of 64 cost 7 % at 512 x 4096 x 4096. B is fetched 16 k-steps ahead. (docs/benchmarks.md, "The GEMM for
// prefill rows", "The GEMM's teams share a packed A".)
struct HostMatmul {
  static constexpr bool register_tiled = false;
  static constexpr int micro_rows = 8, micro_cols = 48;
  // Columns of a micro-tile summed in registers at a time (the tile's k-chunk is walked once a group, its A values
  // read again from L1): all 48 with AVX-512's 32 registers; 8 (8 accumulators, one ymm a row) with AVX2's 16, where
  // 8 x 48 would be 48 accumulators (the avx2 CPU variant: core/cpu_variants.def).
#if defined(__AVX2__) && !defined(__AVX512F__)
  static constexpr int register_cols = 8;
#else
  static constexpr int register_cols = micro_cols;
#endif
  static constexpr int block_rows = 512, block_cols = 96, slab = 2048;
  static constexpr int team_threads = 1 << 20;  // every thread of the space: one L3 on the machines measured
  static constexpr int scratch_level = 1;
  static constexpr int chunk = 384;  // k summed plainly in registers before it is added to the tile
  static constexpr int prefetch_distance = 16 * micro_cols;  // floats of packed B ahead of the k-step
  // A value packed (a weight's, transposed from memory) costs about as long as 40 multiply-adds: at 128 x 4096 x
  // 4096, 16.7 M values packed took 4.5 ms of the two threads' time, 2.1 G multiply-adds 13 ms.
  static constexpr double pack_cost = 40;
  // b untransposed in f32 is read in place, not packed, where a block's rows spread over the L2's sets: at most
  // b_in_place_lines of its lines on one of the l2_sets (2 MB of 16 ways; 0: always pack). docs/benchmarks.md.
  static constexpr int l2_sets = 2048;
  static constexpr int b_in_place_lines = 8;
  static constexpr bool vendor_gemm16 = false;  // this GEMM for every dtype
};

// GPU: the register-tiled kernel (MatmulRegisterTiled). A 128 x 64 block of C per thread block of
// 256 threads; each thread owns an 8 x 4 tile of C in registers for all of K (two sets: the sum
// of the current `chunk` k-steps and the running total, so no fp32 partial sum is deeper than
// chunk + K / chunk). Per 16-deep slab, all threads copy A's and B's slab into shared memory
// (coalesced, k-major, rows padded by 4 floats so that the float4 reads of a quarter warp hit
// distinct banks), synchronize, and each k-step reads 2 float4 of A and 1 of B for 32 FMAs.
// launch_min_blocks = 2 caps registers at 128 a thread (two blocks, 16 warps an SM: 25 %).
// On the emulating host (EmulatedGpuTuning), a team of `team_size` < 256 threads keeps
// the same block and tiles, each thread owning 256 / team_size of them.
template <int MaxTeam>
struct GpuMatmul {
  static constexpr bool register_tiled = true;
  static constexpr int micro_rows = 8, micro_cols = 4;
  static constexpr int block_rows = 128, block_cols = 64, slab = 16;
  static constexpr int threads = (block_rows / micro_rows) * (block_cols / micro_cols);  // 256
  static constexpr int team_size = min_int(threads, MaxTeam);
  static constexpr int tiles_per_thread = threads / team_size;
  static constexpr int pad = 4;  // floats after each k-row of a scratch slab
  static constexpr int scratch_level = 0;
  static constexpr int chunk = 256;  // k-steps summed in the chunk registers (a multiple of slab)
  static constexpr int launch_min_blocks = 2;
  // Split K (matmul_split) where the blocks fill less than half of fill_blocks, an H100's or H200's 132 SMs x 2
  // resident blocks: a 16- to 128-row prompt against a 4096 x 4096 weight makes 64 blocks, a 768 x 768 weight
  // gradient 72, so most SMs would idle; 4 and 3 ranges of K fill them. No range is shorter than min_split_k steps
  // (its sums are written once and read once more). The choice follows from occupancy, not yet from a GPU's timings.
  static constexpr int fill_blocks = 264;
  static constexpr int min_split_k = 512;
  // bf16 × bf16 and f16 × f16 products go to the vendor GEMM on the tensor cores (core/vendor_blas.hpp: cuBLAS,
  // loaded at run time) where it is there; the kernel above converts in its tile copies and multiplies in fp32
  // FMAs, 20-37x slower on an H100 (docs/benchmarks.md, "GPU results"). Never on the emulating host.
  static constexpr bool vendor_gemm16 = true;
  static_assert(threads % team_size == 0 && chunk % slab == 0, "GpuMatmul: inconsistent tiles");
};

// ---- Decode matmul (matmul_decode.hpp): y[R,N] = x[R,K] · W[N,K]ᵀ for R <= 8 rows ----------------
// Bound by reading W once. A team owns `rows_per_team` rows n of W; TeamThreadRange hands each
// thread a group of J = w_rows(R) of them, whose `vector_length` lanes stream them over K, each lane
// keeping `lanes` partial sums per (x row, W row) pair (k = block + l * vector_length + v, as the row
// ops): every W vector loaded feeds R FMAs and every x vector J. Host: a team is one thread, 16
// slots (one AVX-512 register) a pair; 16 W rows a team leave 64 teams at N = 1024 for dynamic
// scheduling. For R = 3..7 the host sweeps K in slices of k_block(R) floats, all the team's rows
// over one slice before the next, so the R x rows' slice (at most 14 KB) stays in L1 rather than R x
// vectors per W vector coming from L2. R = 1 needs J = 4 independent FMA chains; R = 8 is fastest
// unsliced with J = 2; R = 4 (and 3, 5, 6, 7 after it) sliced with J = 1 and 512-float slices; R = 2
// gains nothing from slices (x fits L1). The measurements behind each choice: docs/benchmarks.md,
// "Tuning choices". GPU: a warp per W row (coalesced loads, no slices), 4 slots a lane for
// independent FMA chains, 4 warps a block.
struct HostDecode {
  static constexpr bool host = true;
  static constexpr int rows_per_team = 16;
  static constexpr int team_size = 1;
  static constexpr int vector_length = 1;
  static constexpr int lanes = 16;
  static constexpr int w_rows(int R) { return R == 1 ? 4 : R == 8 ? 2 : 1; }
  static constexpr int k_block(int R) { return R <= 2 || R == 8 ? 0 : 512; }
  // Floats' worth of bytes (4 KB) ahead of each W row, as the row ops; past a row's end, as far into the row the
  // group takes next (prefetch_group_items). TinyLlama's MLP layers from memory, M = 1, 5632 x 2048, ms
  // (docs/benchmarks.md, "Decode weights from memory"): bf16 1.00 within the row, 0.82-0.94 into the next group;
  // 2 KB 3-5 % faster there but q8_0 in blocks 12 % slower; 8 KB 5-20 % slower.
  static constexpr int prefetch_distance = 1024;
  static constexpr bool int8_simd = true;  // quantized W: vpdpbusd where the build has AVX-512 VNNI
  // Quantized W: products of up to this many rows (a short prompt) take this kernel 8 rows at a time, reading W once
  // a chunk and multiplying int8, rather than the f32 GEMM widening W's blocks (ops/linear.hpp). 75 M Llama q8_0
  // prefill: 12 rows 2.0x, 16 1.35x, 24 1.16x the GEMM's tokens/s, 32 0.82x (docs/benchmarks.md, 2026-11-28). Since
  // the panel kernel (below, from 9 rows) it applies only where panel_from_rows is 0 or above it.
  static constexpr int quantized_rows = 24;
  // Quantized W from this many rows of x on (0: never): matmul_quantized_panel, x's rows in SIMD lanes, panel_w_rows W
  // rows a block step, panel_rows_per_team W rows a team (docs/benchmarks.md, "Quantized prompts in panels").
  static constexpr int panel_from_rows = 9;
  static constexpr int panel_w_rows = 8;
  static constexpr int panel_rows_per_team = 32;
  // q8_0 and q4_0 weights of whole 16-row tiles kept in row tiles (quant.hpp q8_0x16, q4_0x16): the decode kernel's
  // lanes are then W rows, a block's 8 products summed in int32 (matmul_decode_tiles.hpp). M = 1, 4096 x 4096, ms:
  // q4_0 0.167 against 0.311 over GGUF's layout, q8_0 0.351 against 0.378 (docs/benchmarks.md, "Row tiles").
  static constexpr bool row_tiles = true;
};

struct GpuDecode {
  static constexpr bool host = false;
  static constexpr int rows_per_team = 4;
  static constexpr int team_size = 4;
  static constexpr int vector_length = 32;
  static constexpr int lanes = 4;
  static constexpr int w_rows(int) { return 1; }
  static constexpr int k_block(int) { return 0; }
  static constexpr int prefetch_distance = 0;
  static constexpr bool int8_simd = false;  // the portable integer loop (a dp4a route is not written yet)
  static constexpr int quantized_rows = 8;  // none past the kernel's own rows: not measured on a GPU yet
  static constexpr int panel_from_rows = 0;  // the panel kernel is the host's (its portable loop: one lane a team)
  static constexpr int panel_w_rows = 1;
  static constexpr int panel_rows_per_team = 1;
  static constexpr bool row_tiles = false;  // the tile kernel is the host's (its portable loop: one thread a tile)
};

// ---- Attention (attention_forward.hpp, attention_backward.hpp) --------------------------------------
// A team owns `query_rows` rows of one head and streams the head's keys through team scratch
// `key_rows` at a time; a thread owns micro_rows x micro_cols micro-tiles of each product.
// Host: a team is one thread walking every micro-tile of its block: an 8 x 32 tile is 16 AVX-512
// accumulators (a 4 x 64 tile was slower: docs/benchmarks.md, "Tuning choices"). Scratch is level 1 (both host levels are
// thread-private memory).
struct HostAttention {
  static constexpr int query_rows = 128;
  static constexpr int key_rows = 128;
  static constexpr int micro_rows = 8;
  static constexpr int micro_cols = 32;  // divides key_rows; head dims are padded to a multiple of it
  static constexpr int team_size = 1;
  static constexpr int lanes = 16;  // independent partial max / sum per row: one AVX-512 vector
  static constexpr int level0_bytes = 0;
  // Backward: query rows x keys of one step (both kernels): 224 KB of scratch at D = 64.
  static constexpr int backward_query_rows = 64;
  static constexpr int backward_key_rows = 128;
  // Every head width uses these tiles (no separate set for wide heads).
  static constexpr int level0_head_dim = 1 << 30;
  using wide = HostAttention;
};

// GPU: 32 x 32 forward tiles, so the forward's scratch (q, output accumulator, k, v: 4 x 8 KB, and
// the 4 KB score tile) is 36.4 KB at D = 64, inside the 48 KB that Kokkos grants level 0 (shared
// memory). The backward steps 16 query rows at a time against 32 keys: the dK/dV kernel's scratch
// (k, v, the dK and dV accumulators: 4 x 8 KB, q and dout rows 2 x 4 KB, P and dS 2 x 2 KB) is
// 44.1 KB at D = 64 and the dQ kernel's 30.1 KB, both level 0. Heads wider than level0_head_dim
// take the `wide` tiles below.
template <int MaxTeam>
struct GpuAttentionWide;

template <int MaxTeam>
struct GpuAttention {
  static constexpr int query_rows = 32;
  static constexpr int key_rows = 32;
  static constexpr int micro_rows = 2;
  static constexpr int micro_cols = 4;
  static constexpr int team_size = min_int(128, MaxTeam);  // (32/2) x (32/4): a score tile a thread
  static constexpr int lanes = 1;
  static constexpr int level0_bytes = 48 * 1024;
  static constexpr int backward_query_rows = 16;
  static constexpr int backward_key_rows = 32;
  static constexpr int level0_head_dim = 64;
  using wide = GpuAttentionWide<MaxTeam>;
};

// Heads of 65 to 128 dims (D = 128: Llama-style heads): 16 x 16 forward tiles (q, accumulator, k, v
// 4 x 8 KB, scores 1 KB: 33 KB at D = 128) and 8-row backward steps against 16 keys (dK/dV kernel:
// k, v, dK, dV 4 x 8 KB, q and dout rows 2 x 4 KB, P and dS 1 KB: 41 KB; dQ kernel 25 KB), all in
// level 0. Wider heads fall back to level 1.
template <int MaxTeam>
struct GpuAttentionWide : GpuAttention<MaxTeam> {
  static constexpr int query_rows = 16;
  static constexpr int key_rows = 16;
  static constexpr int backward_query_rows = 8;
  static constexpr int backward_key_rows = 16;
  static constexpr int level0_head_dim = 1 << 30;
  using wide = GpuAttentionWide;
};

// ---- Column sums (bias, dgamma / dbeta, dweight; column_sums.hpp) --------------------------------
// Rows are cut into blocks, a team a block, a partial row per team thread; a second pass adds the
// partial rows in order (deterministic). At most `max_partials` partial rows and
// `max_partial_elements` doubles per summed quantity, with at least `min_rows_per_partial` rows
// behind each; a partial gathers `chunk_rows` rows in fp32 before it adds them in double.
// `final_block`: columns a work item of the final pass sums (host: 32, vectorized; GPU: 1).
struct HostColumns {
  static constexpr int max_partials = 128;
  static constexpr int max_partial_elements = 1 << 18;
  static constexpr int min_rows_per_partial = 16;
  static constexpr int chunk_rows = 8;
  static constexpr int final_block = 32;
  static constexpr int bias_columns = 16;  // bias_backward: columns a work item (one cache line a row)
  static constexpr bool bias_two_level = false;  // bias_backward walks every row per column group
};

struct GpuColumns {
  static constexpr int max_partials = 2048;
  static constexpr int max_partial_elements = 1 << 21;
  static constexpr int min_rows_per_partial = 4;
  static constexpr int chunk_rows = 8;
  static constexpr int final_block = 1;
  static constexpr int bias_columns = 1;
  // bias_backward as partial rows + add_column_sums: one thread a column would leave most of a GPU idle.
  static constexpr bool bias_two_level = true;
};

// ---- Decode attention (decode_attention.hpp) ----------------------------------------------------
// A team per (batch, kv head, key chunk); `query_rows` query rows of the group at a time, their
// scores for the whole chunk in scratch ([query_rows, chunk] floats, at most max_chunk keys). Keys
// are split until every execution unit has `teams_per_unit` teams, chunks no shorter than min_chunk.
// prefill_rows: a prompt of at most this many tokens attends through this kernel too, reading q and the cache in
// place; longer ones through flash attention (q's rows and an f32 cache read in place too), whose register tiles
// win once the query rows are many (the whole prefill of a 75 M Llama: 0.95-0.99x flash's time up to 64 tokens,
// 1.06x at 128, 1.73x at 2048; docs/benchmarks.md, "A short prefill attends through the decode kernel").
struct HostDecodeAttention {
  static constexpr int team_size = 1;
  static constexpr int vector_length = 1;
  static constexpr int query_rows = 8;
  static constexpr int scratch_level = 1;
  static constexpr int min_chunk = 64;
  static constexpr int max_chunk = 1024;
  static constexpr int teams_per_unit = 1;
  static constexpr int prefill_rows = 64;
};

// Threads over keys for the scores and over query rows for the values, 32 lanes over the head dim;
// scratch level 0: 8 x D queries and 8 x 256 scores are 12 KB at D = 128.
template <int MaxTeam>
struct GpuDecodeAttention {
  static constexpr int team_size = min_int(8, MaxTeam);
  static constexpr int vector_length = 32;
  static constexpr int query_rows = 8;
  static constexpr int scratch_level = 0;
  static constexpr int min_chunk = 64;
  static constexpr int max_chunk = 256;
  static constexpr int teams_per_unit = 1;
  // The host's bound, not yet measured on a GPU (where flash has a team per 16-row query tile and head only).
  static constexpr int prefill_rows = 64;
};

// ---- Sampling (sampling.hpp) ----------------------------------------------------------------------
// A team a row of logits; its threads split the vocabulary in every pass.
struct HostSampling {
  static constexpr int team_size = 1;
};
template <int MaxTeam>
struct GpuSampling {
  static constexpr int team_size = min_int(256, MaxTeam);
};

// ---- The tunings -------------------------------------------------------------------------------------
struct HostTuning {
  static constexpr bool host = true;
  using rows = HostRows;
  using matmul = HostMatmul;
  using decode = HostDecode;
  using attention = HostAttention;
  using decode_attention = HostDecodeAttention;
  using sampling = HostSampling;
  using columns = HostColumns;
};

// MaxTeam: the largest team the space runs (1024 on a GPU; emulated_gpu_team on the host).
template <int MaxTeam>
struct GpuTuning {
  static constexpr bool host = false;
  static constexpr int max_team = MaxTeam;
  using rows = GpuRows;
  using matmul = GpuMatmul<MaxTeam>;
  using decode = GpuDecode;
  using attention = GpuAttention<MaxTeam>;
  using decode_attention = GpuDecodeAttention<MaxTeam>;
  using sampling = GpuSampling<MaxTeam>;
  using columns = GpuColumns;
};

// Teams of the GPU geometry on the emulating host: 16 OpenMP threads a team (an oversubscribed team
// barrier costs ~46 us with 16 threads on 2 cores, ~230 us with 64).
constexpr int emulated_gpu_team = 16;

using EmulatedGpuTuning = GpuTuning<emulated_gpu_team>;

template <class Space>
struct DefaultTuning {
  using type = std::conditional_t<is_host_space_v<Space>, HostTuning, GpuTuning<1024>>;
};

// Tune with its attention tiles for wide heads (the attention launchers switch to it for heads wider
// than Tune::attention::level0_head_dim).
template <class Tune>
struct WideHeads : Tune {
  using attention = typename Tune::attention::wide;
};

// The space's own tuning: what every kernel uses unless told otherwise.
template <class Space>
using Tuning = typename DefaultTuning<Space>::type;

// One (space, tuning) pair, as the autograd (ag::on_compute) and the parity tests hand it on.
template <class S, class T = Tuning<S>>
struct Config {
  using type = S;
  using tune = T;
};

// Calls f(Config<S, T>{}) with T the tuning S runs in this process: its own, or on OpenMP the GPU
// tuning when `gpu_on_host` (PTK_TUNING=gpu, runtime::host_runs_gpu_tuning()).
template <class S, class F>
decltype(auto) with_tuning(bool gpu_on_host, F&& f) {
#if defined(KOKKOS_ENABLE_OPENMP)
  if constexpr (std::is_same_v<S, Kokkos::OpenMP>)
    if (gpu_on_host) return f(Config<S, EmulatedGpuTuning>{});
#endif
  (void)gpu_on_host;
  return f(Config<S>{});
}

}  // namespace ptk::kernels
