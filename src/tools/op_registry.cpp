// The registry of `ptk op` (op_registry.hpp): one entry per row of the op table (ptk/op_table.def), which names
// it and gives its summary; this file gives its inputs, outputs, keys and run function (spec_<name>()).
#include "op_registry.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>
#include <utility>

#include "ptk/ptk.hpp"

namespace ptk::tools {

namespace {

template <class T>
struct TypeTag {
  using type = T;
};

// What a run function sees: the float inputs on space S (undefined at index positions), the index
// inputs on request, the settings, and `host` to bring a result back. An op written over the element type
// runs under `typed`, which calls f(TypeTag<E>) for --set dtype's E, and takes its inputs with as<E>(i).
template <class S>
struct Call {
  using Space = S;
  const HostInputs& inputs;
  const Settings& set;
  std::vector<Tensor<S>> in;

  IndexVector<S> ids(std::size_t i) const {  // values were range-checked when read
    const auto& a = inputs.ids[i];
    std::vector<int> host(a.data.size());
    for (std::size_t j = 0; j < host.size(); ++j) host[j] = static_cast<int>(a.data[j]);
    IndexVector<S> v("ptk::ids", host.size());
    Kokkos::deep_copy(v, Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                             host.data(), host.size()));
    return v;
  }
  template <class E>
  static io::NpyArray host(const Tensor<S, E>& t) {
    if constexpr (std::is_same_v<E, float>) return {t.shape(), t.to_vector()};
    else return {t.shape(), ops::to_f32(t).to_vector()};
  }

  template <class F>
  OpResults typed(const F& f) const {
    switch (inputs.dtype) {
      case io::NpyDtype::bf16: return f(TypeTag<bf16>{});
      case io::NpyDtype::f16: return f(TypeTag<f16>{});
      case io::NpyDtype::f32: break;
    }
    return f(TypeTag<float>{});
  }
  // Float input i stored as E: exact, its values were rounded to E when read.
  template <class E>
  Tensor<S, E> as(std::size_t i) const {
    if constexpr (std::is_same_v<E, float>) return in[i];
    else return ops::cast<E>(in[i]);
  }
};

template <class S>
struct SpaceTag {
  using type = S;
};

// An entry whose run function `f(call)` is instantiated for the host and the default space; its name and summary
// come from the op table (make_registry).
template <class F>
OpEntry spec(std::vector<OpInput> inputs, std::vector<OpOutput> outputs, std::vector<OpKey> keys, F f) {
  const auto on = [f, inputs](auto tag) {
    using S = typename decltype(tag)::type;
    return OpRun([f, inputs](const HostInputs& h, const Settings& set) {
      Call<S> call{h, set, {}};
      for (std::size_t i = 0; i < inputs.size(); ++i)
        call.in.push_back(inputs[i].index ? Tensor<S>() : Tensor<S>::from_host(h.arrays[i].shape, h.arrays[i].data));
      return f(call);
    });
  };
  OpRun run_host = on(SpaceTag<Kokkos::DefaultHostExecutionSpace>{});
  OpRun run_default = on(SpaceTag<Kokkos::DefaultExecutionSpace>{});
  return OpEntry{"", std::move(inputs), std::move(outputs), std::move(keys), "", std::move(run_host), std::move(run_default)};
}

using Results = OpResults;
template <class C>
using SpaceOf = typename C::Space;

const OpKey kTransA{"trans_a", "0", "A is stored transposed ([K,M])"};
const OpKey kTransB{"trans_b", "0", "B is stored transposed ([N,K])"};
const OpKey kEps{"eps", "1e-5", "added to the variance (mean square) before the square root"};
const OpKey kCausal{"causal", "0", "1: position t sees positions <= t only"};
const OpKey kAttnScale{"scale", "1/sqrt(D)", "multiplies the scores Q·Kᵀ"};
const OpKey kIgnore{"ignore_index", "-100", "rows whose target is this are not counted"};
const OpKey kPosOffset{"pos_offset", "0", "position of the first row (a cached prefix's length)"};
const OpKey kBase{"base", "10000", "the rotation frequencies' base"};
const OpKey kLayout{"layout", "bthd", "bthd ([B,T,H,D]) or bhtd ([B,H,T,D])"};

ops::RopeLayout rope_layout(const Settings& set, const std::string& op) {
  const auto layout = set.word("layout", "bthd");
  if (layout != "bthd" && layout != "bhtd") throw UsageError{"op " + op + ": layout must be bthd or bhtd, got '" + layout + "'"};
  return layout == "bthd" ? ops::RopeLayout::bthd : ops::RopeLayout::bhtd;
}

int ignore_index(const Settings& set) { return static_cast<int>(set.integer("ignore_index", -100, INT_MIN, INT_MAX)); }

// The rope ops share their settings; rope_backward applies the inverse rotation to dY.
template <class C>
Results run_rope(const C& c, bool backward) {
  const auto offset = c.set.integer("pos_offset", 0, 0, INT_MAX);
  const auto base = c.set.number("base", 10000.0f);
  const auto layout = rope_layout(c.set, backward ? "rope_backward" : "rope");
  return c.typed([&](auto e) -> Results {
    using E = typename decltype(e)::type;
    const auto x = c.template as<E>(0);
    if (!backward) return {c.host(ops::rope(x, offset, base, layout))};
    Tensor<SpaceOf<C>, E> dx(x.shape(), "ptk::drope");
    ops::rope_backward(dx, x, offset, base, layout);
    return {c.host(dx)};
  });
}

// One function per row of the op table (ptk/op_table.def): the op's inputs, outputs, --set keys and run function.
// Backward ops write fresh gradients: a new tensor is zero-filled and the op accumulates into it.
OpEntry spec_matmul() {
  return spec({{"A"}, {"B"}}, {{"C"}},
              {kTransA, kTransB, {"impl", "portable", "portable (ptk's kernels) or kokkos_blas (KokkosBlas::gemm)"}},
              [](const auto& c) -> Results {
    const auto impl = c.set.word("impl", "portable");
    if (impl != "portable" && impl != "kokkos_blas")
      throw UsageError{"op matmul: impl must be portable or kokkos_blas, got '" + impl + "'"};
    return {c.host(ops::matmul(c.in[0], c.in[1], c.set.flag("trans_a"), c.set.flag("trans_b"),
                               impl == "portable" ? ops::MatmulImpl::portable : ops::MatmulImpl::kokkos_blas))};
  });
}

OpEntry spec_matmul_backward() {
  return spec({{"A"}, {"B"}, {"dC"}}, {{"dA"}, {"dB"}}, {kTransA, kTransB}, [](const auto& c) -> Results {
    using S = SpaceOf<std::decay_t<decltype(c)>>;
    Tensor<S> da(c.in[0].shape(), "ptk::dA"), db(c.in[1].shape(), "ptk::dB");
    ops::matmul_backward(da, db, c.in[2], c.in[0], c.in[1], c.set.flag("trans_a"), c.set.flag("trans_b"));
    return {c.host(da), c.host(db)};
  });
}

OpEntry spec_softmax() {
  return spec({{"X"}}, {{"Y"}},
              {{"scale", "1", "multiplies X first"},
               {"causal", "0", "1: the last two dims are a square score matrix, masked above the diagonal"}},
              [](const auto& c) -> Results {
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      return {c.host(ops::softmax(c.template as<E>(0), c.set.number("scale", 1.0f), c.set.flag("causal")))};
    });
  });
}

OpEntry spec_softmax_backward() {
  return spec({{"Y"}, {"dY"}}, {{"dX"}}, {{"scale", "1", "as the forward's"}}, [](const auto& c) -> Results {
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      Tensor<SpaceOf<std::decay_t<decltype(c)>>, E> dx(c.in[0].shape(), "ptk::dX");
      ops::softmax_backward(dx, c.template as<E>(0), c.template as<E>(1), c.set.number("scale", 1.0f));
      return {c.host(dx)};
    });
  });
}

OpEntry spec_layernorm() {
  return spec({{"X"}, {"gamma"}, {"beta"}}, {{"Y"}}, {kEps}, [](const auto& c) -> Results {
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      return {c.host(ops::layernorm(c.template as<E>(0), c.in[1], c.in[2], c.set.number("eps", 1e-5f)).out)};
    });
  });
}

OpEntry spec_layernorm_backward() {
  return spec({{"X"}, {"gamma"}, {"dY"}}, {{"dX"}, {"dgamma"}, {"dbeta"}}, {kEps}, [](const auto& c) -> Results {
    using S = SpaceOf<std::decay_t<decltype(c)>>;
    const auto& gamma = c.in[1];
    ops::check_tensor("layernorm_backward", "X", c.in[0], 1, INT_MAX);  // before the forward's checks name "layernorm"
    ops::check_feature_vector("layernorm_backward", "gamma", gamma, c.in[0]);
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      const auto x = c.template as<E>(0);
      Tensor<S, E> dx(x.shape(), "ptk::dX");
      Tensor<S> dgamma(gamma.shape(), "ptk::dgamma"), dbeta(gamma.shape(), "ptk::dbeta");
      const auto stats = ops::layernorm(x, gamma, Tensor<S>(gamma.shape()), c.set.number("eps", 1e-5f));
      ops::layernorm_backward(dx, dgamma, dbeta, c.template as<E>(2), x, gamma, stats.mean, stats.rstd);
      return {c.host(dx), c.host(dgamma), c.host(dbeta)};
    });
  });
}

OpEntry spec_rmsnorm() {
  return spec({{"X"}, {"weight"}}, {{"Y"}}, {kEps}, [](const auto& c) -> Results {
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      return {c.host(ops::rmsnorm(c.template as<E>(0), c.in[1], c.set.number("eps", 1e-5f)).out)};
    });
  });
}

OpEntry spec_rmsnorm_backward() {
  return spec({{"X"}, {"weight"}, {"dY"}}, {{"dX"}, {"dweight"}}, {kEps}, [](const auto& c) -> Results {
    using S = SpaceOf<std::decay_t<decltype(c)>>;
    const auto& weight = c.in[1];
    ops::check_tensor("rmsnorm_backward", "X", c.in[0], 1, INT_MAX);
    ops::check_feature_vector("rmsnorm_backward", "weight", weight, c.in[0]);
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      const auto x = c.template as<E>(0);
      Tensor<S, E> dx(x.shape(), "ptk::dX");
      Tensor<S> dweight(weight.shape(), "ptk::dweight");
      const auto stats = ops::rmsnorm(x, weight, c.set.number("eps", 1e-5f));
      ops::rmsnorm_backward(dx, dweight, c.template as<E>(2), x, weight, stats.rstd);
      return {c.host(dx), c.host(dweight)};
    });
  });
}

OpEntry spec_attention() {
  return spec({{"Q"}, {"K"}, {"V"}}, {{"O"}, {"lse", true, true}}, {kCausal, kAttnScale}, [](const auto& c) -> Results {
    const auto scale = c.set.has("scale") ? std::optional<float>(c.set.number("scale", 0)) : std::nullopt;
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      const auto fwd = ops::attention(c.template as<E>(0), c.template as<E>(1), c.template as<E>(2), scale,
                                      c.set.flag("causal"));
      return {c.host(fwd.out), c.host(fwd.lse)};
    });
  });
}

OpEntry spec_attention_backward() {
  return spec({{"Q"}, {"K"}, {"V"}, {"dO"}}, {{"dQ"}, {"dK"}, {"dV"}}, {kCausal, kAttnScale}, [](const auto& c) -> Results {
    using S = SpaceOf<std::decay_t<decltype(c)>>;
    const auto scale = c.set.has("scale") ? std::optional<float>(c.set.number("scale", 0)) : std::nullopt;
    const bool causal = c.set.flag("causal");
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      const auto q = c.template as<E>(0), k = c.template as<E>(1), v = c.template as<E>(2);
      const auto fwd = ops::attention(q, k, v, scale, causal);
      Tensor<S, E> dq(q.shape(), "ptk::dQ"), dk(k.shape(), "ptk::dK"), dv(v.shape(), "ptk::dV");
      ops::attention_backward(dq, dk, dv, c.template as<E>(3), q, k, v, fwd.out, fwd.lse, scale, causal);
      return {c.host(dq), c.host(dk), c.host(dv)};
    });
  });
}

OpEntry spec_decode_attention() {
  return spec({{"Q"}, {"Kcache"}, {"Vcache"}}, {{"O"}, {"lse", true, true}},
              {{"length", "Tmax", "filled cache positions L; the Tq queries sit at L - Tq .. L - 1 (causal)"},
               kAttnScale, {"splits", "0", "key chunks merged (0: chosen for the machine; any gives the same up to rounding)"}},
              [](const auto& c) -> Results {
    const auto scale = c.set.has("scale") ? std::optional<float>(c.set.number("scale", 0)) : std::nullopt;
    const auto Tmax = c.in[1].rank() == 4 ? c.in[1].dim(2) : 0;
    const auto length = c.set.integer("length", Tmax, 0, INT_MAX);
    const auto splits = static_cast<int>(c.set.integer("splits", 0, 0, INT_MAX));
    const auto r = ops::decode_attention(c.in[0], c.in[1], c.in[2], length, scale, splits);
    return {c.host(r.out), c.host(r.lse)};
  });
}

OpEntry spec_gelu() {
  return spec({{"X"}}, {{"Y"}}, {}, [](const auto& c) -> Results {
    return c.typed([&](auto e) -> Results { return {c.host(ops::gelu(c.template as<typename decltype(e)::type>(0)))}; });
  });
}

OpEntry spec_silu() {
  return spec({{"X"}}, {{"Y"}}, {}, [](const auto& c) -> Results {
    return c.typed([&](auto e) -> Results { return {c.host(ops::silu(c.template as<typename decltype(e)::type>(0)))}; });
  });
}

OpEntry spec_gelu_backward() {
  return spec({{"X"}, {"dY"}}, {{"dX"}}, {}, [](const auto& c) -> Results {
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      Tensor<SpaceOf<std::decay_t<decltype(c)>>, E> dx(c.in[0].shape(), "ptk::dX");
      ops::gelu_backward(dx, c.template as<E>(0), c.template as<E>(1));
      return {c.host(dx)};
    });
  });
}

OpEntry spec_silu_backward() {
  return spec({{"X"}, {"dY"}}, {{"dX"}}, {}, [](const auto& c) -> Results {
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      Tensor<SpaceOf<std::decay_t<decltype(c)>>, E> dx(c.in[0].shape(), "ptk::dX");
      ops::silu_backward(dx, c.template as<E>(0), c.template as<E>(1));
      return {c.host(dx)};
    });
  });
}

OpEntry spec_embedding() {
  return spec({{"ids", true}, {"table"}}, {{"out"}}, {}, [](const auto& c) -> Results {
    using S = SpaceOf<std::decay_t<decltype(c)>>;
    return c.typed([&](auto e) -> Results {
      return {c.host(ops::embedding<S>(c.ids(0), c.template as<typename decltype(e)::type>(1), c.inputs.ids[0].shape))};
    });
  });
}

OpEntry spec_embedding_backward() {
  return spec({{"ids", true}, {"dout"}}, {{"dtable"}},
              {{"vocab", "max id + 1", "rows of dtable"}}, [](const auto& c) -> Results {
    using S = SpaceOf<std::decay_t<decltype(c)>>;
    long long max_id = -1;
    for (auto id : c.inputs.ids[0].data) max_id = std::max<long long>(max_id, id);
    const auto vocab = c.set.integer("vocab", max_id + 1, 1, INT_MAX);
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      Tensor<S, E> dtable({vocab, c.in[1].dim(-1)}, "ptk::dtable");
      ops::embedding_backward<S>(dtable, c.template as<E>(1), c.ids(0));
      return {c.host(dtable)};
    });
  });
}

OpEntry spec_cross_entropy() {
  return spec({{"logits"}, {"targets", true}}, {{"loss", false, true}, {"losses", false, true}, {"lse", true, true}}, {kIgnore}, [](const auto& c) -> Results {
    using S = SpaceOf<std::decay_t<decltype(c)>>;
    const int ignore = ignore_index(c.set);
    return c.typed([&](auto e) -> Results {
      const auto ce = ops::cross_entropy<S>(c.template as<typename decltype(e)::type>(0), c.ids(1), ignore);
      return {io::NpyArray{{}, {ce.loss_value()}}, c.host(ce.losses), c.host(ce.lse)};
    });
  });
}

OpEntry spec_cross_entropy_backward() {
  return spec({{"logits"}, {"targets", true}}, {{"dlogits"}},
              {kIgnore, {"dloss", "1", "the upstream gradient of the loss"}}, [](const auto& c) -> Results {
    using S = SpaceOf<std::decay_t<decltype(c)>>;
    const int ignore = ignore_index(c.set);
    const auto targets = c.ids(1);
    return c.typed([&](auto e) -> Results {
      using E = typename decltype(e)::type;
      const auto logits = c.template as<E>(0);
      const auto ce = ops::cross_entropy<S>(logits, targets, ignore);
      Tensor<S, E> dlogits(logits.shape(), "ptk::dlogits");
      ops::cross_entropy_backward<S>(dlogits, c.set.number("dloss", 1.0f), logits, ce.lse, targets, ce.counted, ignore);
      return {c.host(dlogits)};
    });
  });
}

OpEntry spec_rope() {
  return spec({{"X"}}, {{"Y"}}, {kPosOffset, kBase, kLayout}, [](const auto& c) { return run_rope(c, false); });
}

OpEntry spec_rope_backward() {
  return spec({{"dY"}}, {{"dX"}}, {kPosOffset, kBase, kLayout}, [](const auto& c) { return run_rope(c, true); });
}

// The entries in the table's order, named and summarized by it. A row without its spec_<name>() does not compile.
std::vector<OpEntry> make_registry() {
  std::vector<OpEntry> r;
#define PTK_OP(NAME, HEADER, BENCH, LAUNCHES, SUMMARY) \
  r.push_back(spec_##NAME());                         \
  r.back().name = #NAME;                              \
  r.back().summary = SUMMARY;
#include "ptk/op_table.def"
  return r;
}

}  // namespace

const std::vector<OpEntry>& op_registry() {
  static const std::vector<OpEntry> registry = make_registry();
  return registry;
}

const OpEntry* find_op(const std::string& name) {
  const auto& ops = op_registry();
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const OpEntry& o) { return o.name == name; });
  return it == ops.end() ? nullptr : &*it;
}

}  // namespace ptk::tools
