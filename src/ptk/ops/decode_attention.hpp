#pragma once
// decode_attention: O[B,Hq,Tq,D] for the Tq newest tokens, at positions L − Tq … L − 1, against a KV cache K, V
// [B,Hkv,Tmax,D] whose first L positions are filled (the new tokens' keys included): query i attends
// keys 0 … L − Tq + i (causal), query head h the kv head h / (Hq/Hkv) (grouped-query attention; Hkv = Hq is
// multi-head attention). scale defaults to 1/sqrt(D). Also returns lse[B,Hq,Tq] as ops::attention does.
// Positions L … Tmax − 1 of the cache are never read. The cache is f32, bf16 or f16 (Tensor<Space, E>): a 16-bit
// cache halves the bytes a step reads; its values are read as float, the arithmetic is fp32.
// kv_cache_append: writes the heads of the new tokens' keys and values, projection rows [B,Tn,W] (columns offset …
// offset + Hkv·D of each), into positions pos … pos + Tn − 1 of the caches [B,Hkv,Tmax,D], rounded to the caches'
// type to nearest even (a value beyond f16's range becomes inf there, and the attention's output NaN);
// rope_kv_cache_append: the same after rotating the new tokens' q and k heads in place (rope in the same pass).
#include <cmath>
#include <optional>

#include "ptk/kernels/decode_attention.hpp"
#include "ptk/kernels/heads.hpp"
#include "ptk/ops/attention.hpp"
#include "ptk/ops/checks.hpp"
#include "ptk/ops/rope.hpp"

namespace ptk::ops {

namespace detail {
template <class Space, class E>
void check_cache(const char* op, const Tensor<Space, E>& k_cache, const Tensor<Space, E>& v_cache) {
  static_assert(Element<E>::block == 1, "a KV cache is f32, bf16 or f16");
  check_tensor(op, "K cache", k_cache, 4, 4);
  check_tensor(op, "V cache", v_cache, 4, 4);
  require(k_cache.shape() == v_cache.shape(), op, ": the K cache ", k_cache.shape(), " and the V cache ",
          v_cache.shape(), " must have the same shape [B,Hkv,Tmax,D]");
}
}  // namespace detail

namespace detail {
// decode_attention over heads views (q may be the heads of a projection's rows; out is written in place).
template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
void decode_attention_heads(const kernels::Heads<Space>& out, const Tensor<Space>& lse,
                            const kernels::ConstHeads<Space>& q, const Tensor<Space, E>& k_cache,
                            const Tensor<Space, E>& v_cache, std::int64_t length, std::optional<float> scale, int splits) {
  const char* op = "decode_attention";
  check_cache(op, k_cache, v_cache);
  const auto B = static_cast<std::int64_t>(q.extent(0)), Hq = static_cast<std::int64_t>(q.extent(1)),
             Tq = static_cast<std::int64_t>(q.extent(2)), D = static_cast<std::int64_t>(q.extent(3));
  const auto Hkv = k_cache.dim(1), Tmax = k_cache.dim(2);
  const auto shapes = lazy([&] { return "Q " + to_string(Shape{B, Hq, Tq, D}) + ", K cache " + to_string(k_cache.shape()); });
  require(B > 0 && Hq > 0 && Tq > 0 && D > 0, op, ": Q must not be empty, got ", shapes);
  require(k_cache.dim(0) == B && k_cache.dim(3) == D, op,
          ": Q [B,Hq,Tq,D] and the cache [B,Hkv,Tmax,D] must agree in B and D, got ", shapes);
  require(Hq % Hkv == 0, op, ": the query heads Hq = ", Hq, " are not a multiple of the cache's kv heads Hkv = ", Hkv,
          " (", shapes, ")");
  require(length >= Tq && length <= Tmax, op, ": length ", length, " must be in [Tq, Tmax] = [", Tq, ", ", Tmax,
          "]: the cache holds the new tokens' keys too (", shapes, ")");
  require(splits >= 0, op, ": splits must be >= 0, got ", splits);
  const auto s = kernels::decode_attention_shape<Space>(static_cast<int>(B), static_cast<int>(Hq), static_cast<int>(Hkv),
                                                        static_cast<int>(Tq), static_cast<int>(D),
                                                        static_cast<int>(length), splits);
  const auto rows = B * Hq * Tq;
  auto part_max = Tensor<Space>::uninitialized({rows, s.splits}, "ptk::decode_attention_max");
  auto part_sum = Tensor<Space>::uninitialized({rows, s.splits}, "ptk::decode_attention_sum");
  auto part_acc = Tensor<Space>::uninitialized({rows, s.splits, D}, "ptk::decode_attention_acc");
  kernels::decode_attention<Space, Tune, E>(out, lse.flat(), q, as4(k_cache), as4(v_cache),
                                   scale.value_or(1.0f / std::sqrt(static_cast<float>(D))), s,
                                   Matrix<Space>(part_max.data(), rows, s.splits),
                                   Matrix<Space>(part_sum.data(), rows, s.splits),
                                   Tensor3<Space>(part_acc.data(), rows, s.splits, D));
}
}  // namespace detail

// splits: how many key chunks are reduced in parallel and merged (0: chosen from the shape and the space's
// concurrency, kernels::decode_attention_shape). Any value gives the same result up to rounding.
template <class Space, class Tune = kernels::Tuning<Space>, class E = float>
AttentionOutputs<Space> decode_attention(const Tensor<Space>& q, const Tensor<Space, E>& k_cache,
                                         const Tensor<Space, E>& v_cache, std::int64_t length,
                                         std::optional<float> scale = std::nullopt, int splits = 0) {
  check_tensor("decode_attention", "Q", q, 4, 4);
  detail::check_cache("decode_attention", k_cache, v_cache);
  AttentionOutputs<Space> r{Tensor<Space>::uninitialized(q.shape(), "ptk::decode_attention"),
                            Tensor<Space>::uninitialized({q.dim(0), q.dim(1), q.dim(2)}, "ptk::decode_attention_lse")};
  using detail::as4;
  detail::decode_attention_heads<Space, Tune, E>(kernels::heads_of(as4(r.out)), r.lse, kernels::heads_of(as4(q)), k_cache, v_cache,
                                        length, scale, splits);
  return r;
}

namespace detail {
template <class Space, class E>
void check_append(const char* op, const Tensor<Space, E>& k_cache, const Tensor<Space, E>& v_cache,
                  const Tensor<Space>& k_rows, std::int64_t k_offset, const Tensor<Space>& v_rows, std::int64_t v_offset,
                  std::int64_t pos) {
  check_cache(op, k_cache, v_cache);
  check_tensor(op, "k rows", k_rows, 3, 3);
  check_tensor(op, "v rows", v_rows, 3, 3);
  const auto B = k_cache.dim(0), H = k_cache.dim(1), Tmax = k_cache.dim(2), D = k_cache.dim(3), Tn = k_rows.dim(1);
  const auto shapes = lazy([&] {
    return "cache " + to_string(k_cache.shape()) + ", k rows " + to_string(k_rows.shape()) + ", v rows " +
           to_string(v_rows.shape());
  });
  require(k_rows.dim(0) == B && v_rows.dim(0) == B && v_rows.dim(1) == Tn, op,
          ": the k and v rows must be [B, Tn, ·] with the cache's batch: ", shapes);
  require(k_offset >= 0 && k_offset + H * D <= k_rows.dim(2) && v_offset >= 0 && v_offset + H * D <= v_rows.dim(2), op,
          ": columns [", k_offset, ", ", k_offset + H * D, ") of the k rows and [", v_offset, ", ", v_offset + H * D,
          ") of the v rows hold the heads, beyond the rows' columns (", shapes, ")");
  require(pos >= 0 && pos + Tn <= Tmax, op, ": positions [", pos, ", ", pos + Tn, ") do not fit the cache's Tmax = ",
          Tmax, " (", shapes, ")");
}
template <class Space>
Tensor3<Space> as3(const Tensor<Space>& t) {
  return Tensor3<Space>(t.data(), t.dim(0), t.dim(1), t.dim(2));
}
}  // namespace detail

template <class Space, class E = float>
void kv_cache_append(const Tensor<Space, E>& k_cache, const Tensor<Space, E>& v_cache, const Tensor<Space>& k_rows,
                     std::int64_t k_offset, const Tensor<Space>& v_rows, std::int64_t v_offset, std::int64_t pos) {
  detail::check_append("kv_cache_append", k_cache, v_cache, k_rows, k_offset, v_rows, v_offset, pos);
  kernels::split_kv<Space, E>(detail::as4(k_cache), detail::as4(v_cache), detail::as3(k_rows), static_cast<int>(k_offset),
                              detail::as3(v_rows), static_cast<int>(v_offset), static_cast<int>(pos));
}

// rope_kv_cache_append: kv_cache_append after rotating, in place, the q rows' q_heads heads of D from column q_offset
// and the k rows' heads (ops::rope's rotation, layout bthd, positions pos … pos + Tn − 1, `base`): one pass, the bits
// of ops::rope on q and k then kv_cache_append. q rows [B, Tn, W] (D even).
template <class Space, class E = float>
void rope_kv_cache_append(const Tensor<Space, E>& k_cache, const Tensor<Space, E>& v_cache, const Tensor<Space>& q_rows,
                          std::int64_t q_offset, std::int64_t q_heads, const Tensor<Space>& k_rows, std::int64_t k_offset,
                          const Tensor<Space>& v_rows, std::int64_t v_offset, std::int64_t pos, float base) {
  const char* op = "rope_kv_cache_append";
  detail::check_append(op, k_cache, v_cache, k_rows, k_offset, v_rows, v_offset, pos);
  check_tensor(op, "q rows", q_rows, 3, 3);
  const auto D = k_cache.dim(3), Tn = k_rows.dim(1);
  require(q_rows.dim(0) == k_cache.dim(0) && q_rows.dim(1) == Tn, op, ": q rows ", q_rows.shape(), " and k rows ",
          k_rows.shape(), " must share B and Tn");
  require(q_heads > 0 && q_offset >= 0 && q_offset + q_heads * D <= q_rows.dim(2), op, ": ", q_heads, " query heads of ",
          D, " from column ", q_offset, " do not fit q rows ", q_rows.shape());
  require(D % 2 == 0, op, ": the head dimension D = ", D, " must be even");
  require(std::isfinite(base) && base > 0.0f, op, ": base must be a positive number, got ", base);
  const auto tables = detail::rope_tables<Space>(Tn, D, pos, base);
  kernels::rope_kv_append<Space, E>(detail::as3(q_rows), static_cast<int>(q_offset), static_cast<int>(q_heads),
                                    detail::as3(k_rows), static_cast<int>(k_offset), detail::as3(v_rows),
                                    static_cast<int>(v_offset), detail::as4(k_cache), detail::as4(v_cache),
                                    static_cast<int>(pos), tables.cos, tables.sin);
}

}  // namespace ptk::ops
