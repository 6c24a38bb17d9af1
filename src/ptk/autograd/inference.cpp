// The inference-only ops: argument checks and the kernels' calls on the arguments' space; no graph nodes.
#include "ptk/autograd/inference.hpp"

#include <optional>
#include <type_traits>

#include "ptk/autograd/storage.hpp"
#include "ptk/kernels/heads.hpp"
#include "ptk/ops/attention.hpp"
#include "ptk/ops/decode_attention.hpp"
#include "ptk/ops/linear.hpp"
#include "ptk/ops/sampling.hpp"

namespace ptk::ag {

namespace {

template <class S>
Var wrap(Tensor<S> value, Device device) {
  auto impl = std::make_shared<VarImpl>();
  impl->shape = value.shape();
  impl->device = device;
  impl->data.get<S>() = std::move(value);
  return Var(std::move(impl));
}

void check_same_device(const char* op, const Var& a, const char* a_name, const Var& b, const char* b_name) {
  require(a.defined() && b.defined(), op, ": ", a.defined() ? b_name : a_name, " is an undefined Var");
  if (a.device() != b.device())
    require(false, op, ": ", a_name, " ", a.shape(), " is on ", describe(a.device()), " but ", b_name, " ",
            b.shape(), " is on ", describe(b.device()));
}

// f(k, v) with the caches' tensors of their element type: f32, bf16 or f16.
template <class S, class F>
void with_caches(const Var& k_cache, const Var& v_cache, F&& f) {
  const DType t = k_cache.dtype();
  require(v_cache.dtype() == t, "cached_attention: the K cache is ", dtype_name(t), " but the V cache ",
          dtype_name(v_cache.dtype()));
  switch (t) {
    case DType::f32: return f(stored_of<S, float>(k_cache), stored_of<S, float>(v_cache));
    case DType::bf16: return f(stored_of<S, bf16>(k_cache), stored_of<S, bf16>(v_cache));
    case DType::f16: return f(stored_of<S, f16>(k_cache), stored_of<S, f16>(v_cache));
    default: require(false, "cached_attention: a KV cache is f32, bf16 or f16, not ", dtype_name(t));
  }
}

}  // namespace

int prefill_rows(Device device) {
  return on_compute(device, [](auto tag) { return decltype(tag)::tune::decode_attention::prefill_rows; });
}

Var cached_attention(HeadColumns q, HeadColumns k, HeadColumns v, const HeadLayout& layout, const Var& k_cache,
                     const Var& v_cache, int pos, std::optional<float> rope_base) {
  const char* op = "cached_attention";
  check_same_device(op, q.rows, "q", k_cache, "K cache");
  check_same_device(op, k.rows, "k", k_cache, "K cache");
  check_same_device(op, v.rows, "v", k_cache, "K cache");
  check_same_device(op, v_cache, "V cache", k_cache, "K cache");
  const Shape& cs = k_cache.shape();
  require(cs.size() == 4 && v_cache.shape() == cs, op, ": the caches must be [B, Hkv, Tmax, D] alike, got K ",
          cs, " and V ", v_cache.shape());
  const Shape& qs = q.rows.shape();
  require(qs.size() == 3, op, ": q rows must be [B, Tn, W], got ", qs);
  const auto B = cs[0], Tn = qs[1], H = static_cast<std::int64_t>(layout.heads), D = cs[3];
  require(H > 0 && H % cs[1] == 0, op, ": ", H, " query heads are not a multiple of the cache's kv heads (cache ", cs, ")");
  require(layout.kv_heads == cs[1] && layout.dim == D, op, ": ", layout.kv_heads, " kv heads of ", layout.dim,
          " do not match the cache ", cs);
  require(qs[0] == B && k.rows.shape().size() == 3 && k.rows.shape()[1] == Tn, op, ": q rows ", qs, ", k rows ",
          k.rows.shape(), " and the cache ", cs, " must share B and Tn");
  // The new tokens' keys and values into the cache (ops::kv_cache_append checks k and v's rows against it).
  on_device(k_cache.device(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    with_caches<S>(k_cache, v_cache, [&](const auto& kc, const auto& vc) {
      if (rope_base)
        ops::rope_kv_cache_append(kc, vc, data_of<S>(q.rows), q.offset, H, data_of<S>(k.rows), k.offset,
                                  data_of<S>(v.rows), v.offset, pos, *rope_base);
      else
        ops::kv_cache_append(kc, vc, data_of<S>(k.rows), k.offset, data_of<S>(v.rows), v.offset, pos);
    });
  });
  // A long prefill (more than the tuning's prefill_rows) has nothing before the new tokens: they attend only each
  // other, through flash attention; a short one and decode through the decode kernel. Either way q is read from its
  // rows and the output written into y's rows in place (strided heads), and the keys and values are read from the
  // cache as it is stored (a 16-bit cache's values, as every later step reads them), where a head's positions lie
  // together (in k's rows they are a row of W columns apart: 2-3 % slower at 2048 tokens, docs/benchmarks.md).
  const Device device = k_cache.device();
  const bool flash = pos == 0 && Tn > prefill_rows(device);
  require(H > 0 && q.offset >= 0 && q.offset + H * D <= qs[2], op, ": ", H, " query heads of ", D, " from column ",
          q.offset, " do not fit q rows ", qs);
  return on_compute(device, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const Tensor<S>& q_rows = data_of<S>(q.rows);
    const int b = static_cast<int>(B), tn = static_cast<int>(Tn), h = static_cast<int>(H), d = static_cast<int>(D);
    auto y = Tensor<S>::uninitialized({B, Tn, H * D}, "ptk::cached_attention");
    auto lse = Tensor<S>::uninitialized({B, H, Tn}, "ptk::decode_attention_lse");
    const auto y_heads = kernels::heads_of<S>(y.data(), b, tn, h * d, 0, h, d);
    const auto q_heads = kernels::heads_of<S>(q_rows.data(), b, tn, static_cast<int>(q_rows.dim(2)), q.offset, h, d);
    with_caches<S>(k_cache, v_cache, [&](const auto& kc, const auto& vc) {
      if (flash) {
        using EKV = typename std::decay_t<decltype(kc)>::value_type;
        const auto first = [tn](const auto& cache) {  // the cache's positions [0, Tn)
          return Kokkos::subview(kernels::heads_of(ops::detail::as4(cache)), Kokkos::ALL, Kokkos::ALL,
                                 std::make_pair(0, tn), Kokkos::ALL);
        };
        ops::detail::attention_heads<S, Tune, float, EKV>(y_heads, lse, q_heads, first(kc), first(vc), std::nullopt,
                                                          true);
      } else {
        ops::detail::decode_attention_heads<S, Tune>(y_heads, lse, q_heads, kc, vc, pos + Tn, std::nullopt, 0);
      }
    });
    return wrap<S>(y, device);
  });
}

void accumulate_linear(const Var& x, const Var& a, const Var& weight, const Var& bias) {
  const char* op = "accumulate_linear";
  check_same_device(op, x, "x", a, "a");
  check_same_device(op, x, "x", weight, "weight");
  if (bias.defined()) check_same_device(op, x, "x", bias, "bias");
  const Shape &xs = x.shape(), &as = a.shape(), &ws = weight.shape();
  require(ws.size() == 2 && !as.empty() && as.back() == ws[1] && !xs.empty() && xs.back() == ws[0] &&
              x.numel() / ws[0] == a.numel() / ws[1],
          op, ": x ", xs, " += a ", as, " · weightᵀ (weight ", ws, "): weight must be [out, in] with a's rows of in, x's of out");
  if (bias.defined())
    require(bias.shape() == Shape{ws[0]}, op, ": bias has shape ", bias.shape(), ", expected [", ws[0], "]");
  on_compute(x.device(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    const auto rows = a.numel() / ws[1];
    const Tensor<S> x2 = data_of<S>(x).reshape({rows, ws[0]}), a2 = data_of<S>(a).reshape({rows, ws[1]});
    const Tensor<S> b = bias.defined() ? data_of<S>(bias) : Tensor<S>();
    const auto autocast = [&](auto e) {  // as ag::linear under Autocast: operands rounded, fp32 accumulation
      using E = decltype(e);
      ops::matmul_accumulate<S, Tune, E, E>(x2, cast_of<S, E>(a).reshape({rows, ws[1]}), cast_of<S, E>(weight), false, true);
      if (b.defined()) kernels::bias_forward<S>(x2.rows(), x2.rows(), b.flat());
    };
    x.impl().drop_cast();  // x changes
    if (weight.dtype() == DType::f32 && autocast_dtype() == DType::bf16) autocast(bf16{});
    else if (weight.dtype() == DType::f32 && autocast_dtype() == DType::f16) autocast(f16{});
    else if (weight.dtype() == DType::f32)
      ops::linear_accumulate<S, Tune>(x2, a2, data_of<S>(weight), b);
    else  // a weight stored for inference (Var::store_as)
      with_stored<S>(weight, [&](const auto& w) { ops::linear_accumulate<S, Tune>(x2, a2, w, b); });
  });
}

Var last_position(const Var& x) {
  require(x.defined() && x.shape().size() == 3, "last_position: x must be [B, T, C], got ",
          x.defined() ? to_string(x.shape()) : "an undefined Var");
  const auto B = x.shape()[0], T = x.shape()[1], C = x.shape()[2];
  return on_device(x.device(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const Tensor<S>& t = data_of<S>(x);
    auto y = Tensor<S>::uninitialized({B, C}, "ptk::last_position");
    Kokkos::deep_copy(y.rows(), Kokkos::subview(Tensor3<S>(t.data(), B, T, C), Kokkos::ALL, T - 1, Kokkos::ALL));
    return wrap<S>(y, x.device());
  });
}

std::vector<int> TokenSampler::operator()(const Var& logits, const std::vector<float>& u, const SamplingParams& p) {
  require(logits.defined() && logits.shape().size() == 2, "sample: logits must be [rows, V], got ",
          logits.defined() ? to_string(logits.shape()) : "an undefined Var");
  const auto rows = logits.shape()[0];
  return on_compute(logits.device(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using Tune = typename decltype(tag)::tune;
    if (!tokens_ || rows_ != rows || device_ != logits.device()) {
      tokens_ = std::make_shared<IndexVector<S>>("ptk::sampled_tokens", static_cast<std::size_t>(rows));
      rows_ = rows;
      device_ = logits.device();
    }
    const auto& tokens = *static_cast<IndexVector<S>*>(tokens_.get());
    ops::sample<S, Tune>(tokens, data_of<S>(logits), u, {p.temperature, p.top_k, p.top_p});
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), tokens);
    std::vector<int> out(host.data(), host.data() + rows);
    for (std::int64_t b = 0; b < rows; ++b)
      require(out[static_cast<std::size_t>(b)] >= 0, "sample: row ", b, " of the logits ", logits.shape(),
              " holds a NaN or only -inf");
    return out;
  });
}

}  // namespace ptk::ag
