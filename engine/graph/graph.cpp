#include "engine/graph/graph.hpp"

#include "engine/overload.hpp"

#include <fmt/core.h>

#include <type_traits>

namespace cardsim::graph {
namespace {

/// Appends `v` to `out` when it holds a value.
void add(std::vector<Weight>& out, const std::optional<Weight>& w) {
    if (w) out.push_back(*w);
}

} // namespace

std::string_view kind(const Op& op) {
    static constexpr std::string_view names[] = {"Embed",
                                                 "LayerNorm",
                                                 "Gemm",
                                                 "Rope",
                                                 "Attention",
                                                 "GeGlu",
                                                 "AddType",
                                                 "GatherMarkers",
                                                 "ActFeatures",
                                                 "RmsNorm",
                                                 "Rotate",
                                                 "CacheAppend",
                                                 "AttendCache",
                                                 "Conv",
                                                 "Silu",
                                                 "L2Norm",
                                                 "GdnGates",
                                                 "DeltaStep",
                                                 "GatedRmsNorm",
                                                 "SigmoidGate",
                                                 "SiluMul",
                                                 "Add",
                                                 "ArgMax",
                                                 "Gelu",
                                                 "Relu",
                                                 "Scale",
                                                 "Softcap",
                                                 "Moe",
                                                 "HeadMatmul",
                                                 "GeluMul",
                                                 "LatentAttendCache",
                                                 "AllReduce",
                                                 "AllGather"};
    static_assert(std::size(names) == std::variant_size_v<Op>, "a name per op kind");
    return names[op.index()];
}

Uses uses(const Op& op) {
    return std::visit(
        Overload{
            [](const Embed& o) {
                return Uses{{}, {o.out}};
            },
            [](const LayerNorm& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const Gemm& o) {
                return o.epilogue == Epilogue::Accumulate ? Uses{{o.a, o.out}, {o.out}}
                                                          : Uses{{o.a}, {o.out}};
            },
            [](const Rope& o) {
                return Uses{{o.qkv}, {o.qkv}};
            },
            [](const Attention& o) {
                return Uses{{o.qkv}, {o.out}};
            },
            [](const GeGlu& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const AddType& o) {
                return Uses{{o.h}, {o.h}};
            },
            [](const GatherMarkers& o) {
                return Uses{{o.h}, {o.out}};
            },
            [](const ActFeatures& o) {
                return Uses{{o.h, o.logits}, {o.out}};
            },
            [](const RmsNorm& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const Rotate& o) {
                return Uses{{o.x}, {o.x}};
            },
            [](const CacheAppend& o) {
                return Uses{{o.x}, {}};
            },
            [](const AttendCache& o) {
                return Uses{{o.q}, {o.out}};
            },
            [](const Conv& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const Silu& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const L2Norm& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const GdnGates& o) {
                return Uses{{o.b, o.a}, {o.beta, o.g}};
            },
            [](const DeltaStep& o) {
                return Uses{{o.q, o.k, o.v, o.beta, o.g}, {o.out}};
            },
            [](const GatedRmsNorm& o) {
                return Uses{{o.x, o.z}, {o.out}};
            },
            [](const SigmoidGate& o) {
                return Uses{{o.x, o.gate}, {o.out}};
            },
            [](const SiluMul& o) {
                return Uses{{o.gate, o.up}, {o.out}};
            },
            [](const Add& o) {
                return Uses{{o.a, o.b}, {o.out}};
            },
            [](const ArgMax& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const Gelu& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const Relu& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const Scale& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const Softcap& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const Moe& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const HeadMatmul& o) {
                return Uses{{o.x}, {o.out}};
            },
            [](const GeluMul& o) {
                return Uses{{o.gate, o.up}, {o.out}};
            },
            [](const LatentAttendCache& o) {
                return Uses{{o.q_latent, o.q_rope}, {o.out}};
            },
            [](const AllReduce& o) {
                return o.out == o.x ? Uses{{o.x}, {o.scratch, o.x}} : Uses{{o.x}, {o.scratch, o.out}};
            },
            [](const AllGather& o) {
                return Uses{{o.x}, {o.out}};
            },
        },
        op);
}

StateUses state_uses(const Op& op) {
    return std::visit(Overload{
                          [](const CacheAppend& o) {
                              return StateUses{{}, {o.cache}};
                          },
                          [](const AttendCache& o) {
                              return StateUses{{o.keys, o.values}, {}};
                          },
                          [](const LatentAttendCache& o) {
                              return StateUses{{o.latent, o.rope}, {}};
                          },
                          [](const Conv& o) {
                              return StateUses{{o.window}, {o.window}};
                          },
                          [](const DeltaStep& o) {
                              return StateUses{{o.state}, {o.state}};
                          },
                          [](const auto&) { return StateUses{}; },
                      },
                      op);
}

std::vector<Weight> weights(const Op& op) {
    std::vector<Weight> out;
    std::visit(Overload{
                   [&](const Embed& o) { out.push_back(o.table); },
                   [&](const LayerNorm& o) {
                       out.push_back(o.w);
                       add(out, o.b);
                   },
                   [&](const Gemm& o) {
                       out.push_back(o.w);
                       add(out, o.b);
                   },
                   [&](const AddType& o) { out.push_back(o.table); },
                   [&](const RmsNorm& o) { add(out, o.w); },
                   [&](const AttendCache& o) { add(out, o.sinks); },
                   [&](const Conv& o) { out.push_back(o.w); },
                   [&](const GdnGates& o) {
                       out.push_back(o.a_log);
                       out.push_back(o.dt_bias);
                   },
                   [&](const GatedRmsNorm& o) { out.push_back(o.w); },
                   [&](const Moe& o) {
                       out.push_back(o.router);
                       for (auto* list : {&o.gate, &o.up, &o.down})
                           out.insert(out.end(), list->begin(), list->end());
                       add(out, o.shared_gate);
                       add(out, o.shared_up);
                       add(out, o.shared_down);
                       add(out, o.shared_expert_gate);
                       add(out, o.router_bias);
                       for (auto* list : {&o.gate_bias, &o.up_bias, &o.down_bias})
                           out.insert(out.end(), list->begin(), list->end());
                   },
                   [&](const HeadMatmul& o) { out.push_back(o.w); },
                   [](const auto&) {},
               },
               op);
    return out;
}

std::string_view name(Part p) {
    switch (p) {
    case Part::Embedding:
        return "embedding";
    case Part::Mixer:
        return "mixer";
    case Part::Attention:
        return "attention";
    case Part::Ffn:
        return "ffn";
    case Part::Head:
        return "head";
    }
    return "?";
}

Val Graph::val(Rows rows, std::size_t width, std::string name) {
    vals.push_back(Shape{rows, width});
    names.push_back(std::move(name));
    return Val{static_cast<std::uint32_t>(vals.size() - 1)};
}

StateId Graph::state(State s) {
    states.push_back(s);
    return StateId{static_cast<std::uint32_t>(states.size() - 1)};
}

void Graph::push(Op op, Site site) {
    ops.push_back(std::move(op));
    sites.push_back(site);
}

std::vector<Val> Graph::outputs() const {
    std::vector<Val> out;
    for (auto& v : {logits, act, next})
        if (v) out.push_back(*v);
    return out;
}

std::size_t Bucket::rows(Rows r) const {
    switch (r) {
    case Rows::Tokens:
        return tokens;
    case Rows::Seqs:
        return seqs;
    case Rows::Markers:
        return markers;
    }
    return 0;
}

namespace {

/// The checks of one op against its graph; `fail` formats the first problem.
class OpCheck {
public:
    OpCheck(const Graph& g, std::size_t index) : g_(g), index_(index) {}

    /// The first problem found, if any.
    std::optional<std::string> problem;

    /// `v` names a value of the graph.
    bool exists(Val v) {
        if (v.id < g_.vals.size()) return true;
        fail(fmt::format("names value {} of {}", v.id, g_.vals.size()));
        return false;
    }
    /// `v` exists and is `width` wide.
    void width(Val v, std::size_t width, std::string_view what) {
        if (exists(v) && g_.vals[v.id].width != width)
            fail(
                fmt::format("needs {} {} wide, value {} is {} wide", what, width, v.id, g_.vals[v.id].width));
    }
    /// `a` and `b` exist and have the same shape.
    void same(Val a, Val b) {
        if (exists(a) && exists(b) && !(g_.vals[a.id] == g_.vals[b.id]))
            fail(fmt::format("needs values {} and {} of one shape", a.id, b.id));
    }
    /// `v` exists and has one row per `rows`.
    void rows(Val v, Rows rows) {
        if (exists(v) && g_.vals[v.id].rows != rows) fail(fmt::format("needs value {} in other rows", v.id));
    }
    /// `s` names a state holding a `T`; returns it.
    template <class T>
    const T* state(StateId s) {
        if (s.id >= g_.states.size()) {
            fail(fmt::format("names state {} of {}", s.id, g_.states.size()));
            return nullptr;
        }
        auto* t = std::get_if<T>(&g_.states[s.id]);
        if (!t) fail(fmt::format("needs state {} of another kind", s.id));
        return t;
    }
    /// The width of `v`, which exists.
    std::size_t width_of(Val v) const { return g_.vals[v.id].width; }
    /// The row width of a key or value cache `s`, or nothing (and a problem) for another state.
    std::optional<std::size_t> cache_row(StateId s) {
        if (s.id >= g_.states.size()) {
            fail(fmt::format("names state {} of {}", s.id, g_.states.size()));
            return std::nullopt;
        }
        if (auto* k = std::get_if<KeyCache>(&g_.states[s.id])) return k->kv_heads * k->head_dim;
        if (auto* v = std::get_if<ValueCache>(&g_.states[s.id])) return v->kv_heads * v->head_dim;
        fail(fmt::format("needs state {} to be a key or value cache", s.id));
        return std::nullopt;
    }
    /// `group` is positive and divides `v`'s width.
    void groups(Val v, std::size_t group) {
        if (exists(v) && (group == 0 || g_.vals[v.id].width % group != 0))
            fail(fmt::format("groups of {} do not divide value {}'s width {}", group, v.id,
                             g_.vals[v.id].width));
    }
    /// Records `what` as the problem, unless one was found before.
    void fail(std::string what) {
        if (!problem) problem = fmt::format("op {} ({}): {}", index_, kind(g_.ops[index_]), what);
    }

private:
    const Graph& g_;
    std::size_t index_;
};

/// The checks of every op kind beyond ids in range.
void check_op(OpCheck& c, const Op& op) {
    std::visit(
        Overload{
            [&](const Rope& o) { c.width(o.qkv, 3 * o.heads * o.head_dim, "fused qkv rows"); },
            [&](const Attention& o) {
                c.width(o.qkv, 3 * o.heads * o.head_dim, "fused qkv rows");
                c.width(o.out, o.heads * o.head_dim, "output rows");
            },
            [&](const GeGlu& o) {
                if (c.exists(o.out)) c.width(o.x, 2 * c.width_of(o.out), "an input twice the output");
            },
            [&](const GatherMarkers& o) {
                c.rows(o.h, Rows::Tokens);
                c.rows(o.out, Rows::Markers);
            },
            [&](const ActFeatures& o) {
                c.rows(o.logits, Rows::Markers);
                c.width(o.logits, 1, "marker logits");
                c.rows(o.out, Rows::Seqs);
                if (c.exists(o.h)) c.width(o.out, c.width_of(o.h) + 4, "its output");
            },
            [&](const LayerNorm& o) { c.same(o.x, o.out); },
            [&](const RmsNorm& o) {
                c.same(o.x, o.out);
                c.groups(o.x, o.group);
            },
            [&](const Rotate& o) {
                c.groups(o.x, o.head_dim);
                if (o.rotary_dim % 2 != 0 || o.rotary_dim > o.head_dim || o.rotary_dim == 0)
                    c.fail(fmt::format("rotary dim {} must be even and in 2..={}", o.rotary_dim, o.head_dim));
            },
            [&](const CacheAppend& o) {
                if (auto d = c.cache_row(o.cache)) c.width(o.x, *d, "cache rows");
            },
            [&](const AttendCache& o) {
                c.width(o.q, o.heads * o.head_dim, "query rows");
                c.width(o.out, o.heads * o.head_dim, "output rows");
                auto* k = c.state<KeyCache>(o.keys);
                auto* v = c.state<ValueCache>(o.values);
                if (k && (k->head_dim != o.head_dim || k->kv_heads != o.kv_heads))
                    c.fail("needs a key cache of its kv heads and head dim");
                if (v && (v->head_dim != o.head_dim || v->kv_heads != o.kv_heads))
                    c.fail("needs a value cache of its kv heads and head dim");
                if (o.kv_heads == 0 || o.heads % o.kv_heads != 0)
                    c.fail(fmt::format("{} heads are not a multiple of {} kv heads", o.heads, o.kv_heads));
            },
            [&](const Conv& o) {
                c.same(o.x, o.out);
                if (auto* w = c.state<ConvWindow>(o.window); w && c.exists(o.x))
                    c.width(o.x, w->channels, "as many channels as its window");
            },
            [&](const Silu& o) { c.same(o.x, o.out); },
            [&](const L2Norm& o) {
                c.same(o.x, o.out);
                c.groups(o.x, o.group);
            },
            [&](const GdnGates& o) {
                c.same(o.a, o.b);
                c.same(o.b, o.beta);
                c.same(o.b, o.g);
            },
            [&](const DeltaStep& o) {
                c.width(o.q, o.key_heads * o.dk, "queries");
                c.width(o.k, o.key_heads * o.dk, "keys");
                c.width(o.v, o.value_heads * o.dv, "values");
                c.width(o.beta, o.value_heads, "a beta per value head");
                c.width(o.g, o.value_heads, "a decay per value head");
                c.width(o.out, o.value_heads * o.dv, "output rows");
                if (o.key_heads == 0 || o.value_heads % o.key_heads != 0)
                    c.fail("value heads must be a multiple of key heads");
                if (auto* s = c.state<DeltaState>(o.state);
                    s && (s->heads != o.value_heads || s->dk != o.dk || s->dv != o.dv))
                    c.fail("needs a state of its value heads, dk and dv");
            },
            [&](const GatedRmsNorm& o) {
                c.same(o.x, o.z);
                c.same(o.x, o.out);
                c.groups(o.x, o.group);
            },
            [&](const SigmoidGate& o) {
                c.same(o.x, o.gate);
                c.same(o.x, o.out);
            },
            [&](const Moe& o) {
                if (o.partial) {
                    if (c.exists(o.x)) c.width(o.out, c.width_of(o.x) * partial_words, "its exact parts");
                } else {
                    c.same(o.x, o.out);
                }
                const std::size_t e = o.gate.size(), all = o.routed();
                if (e == 0 || o.up.size() != e || o.down.size() != e)
                    c.fail(fmt::format("needs as many gate, up and down projections (given {}, {}, {}), at "
                                       "least one",
                                       e, o.up.size(), o.down.size()));
                else if (o.first_expert > all || e > all - o.first_expert)
                    c.fail(fmt::format("holds experts {} .. {} of the router's {}", o.first_expert,
                                       o.first_expert + e, all));
                else if (o.top_k == 0 || o.top_k > all)
                    c.fail(fmt::format("chooses {} of {} experts, expected 1 .. {}", o.top_k, all, all));
                else if (o.intermediate == 0)
                    c.fail("needs the experts' intermediate width");
                for (const auto* biases : {&o.gate_bias, &o.up_bias, &o.down_bias})
                    if (!biases->empty() && biases->size() != e)
                        c.fail(fmt::format("has {} expert biases for {} experts", biases->size(), e));
                const bool shared = o.shared_gate.has_value();
                if (o.shared_up.has_value() != shared || o.shared_down.has_value() != shared ||
                    (o.shared_intermediate > 0) != shared || (o.shared_expert_gate && !shared))
                    c.fail("needs the shared expert's gate, up and down projections and width all or none");
            },
            [&](const SiluMul& o) {
                c.same(o.gate, o.up);
                c.same(o.gate, o.out);
            },
            [&](const Add& o) {
                c.same(o.a, o.b);
                c.same(o.a, o.out);
            },
            [&](const ArgMax& o) { c.width(o.out, 1, "an index per row"); },
            [&](const Gelu& o) { c.same(o.x, o.out); },
            [&](const Relu& o) { c.same(o.x, o.out); },
            [&](const Scale& o) { c.same(o.x, o.out); },
            [&](const Softcap& o) { c.same(o.x, o.out); },
            [&](const GeluMul& o) {
                c.same(o.gate, o.up);
                c.same(o.gate, o.out);
            },
            [&](const HeadMatmul& o) {
                if (o.heads == 0 || (c.exists(o.x) && c.width_of(o.x) % o.heads != 0) ||
                    (c.exists(o.out) && c.width_of(o.out) % o.heads != 0))
                    c.fail(fmt::format("input and output widths must be multiples of its {} heads", o.heads));
            },
            [&](const LatentAttendCache& o) {
                c.width(o.q_latent, o.heads * o.latent_dim, "latent query rows");
                c.width(o.q_rope, o.heads * o.rope_dim, "rope query rows");
                c.width(o.out, o.heads * o.latent_dim, "output rows");
                auto* l = c.state<KeyCache>(o.latent);
                auto* r = c.state<KeyCache>(o.rope);
                if (l && (l->kv_heads != 1 || l->head_dim != o.latent_dim))
                    c.fail("needs a latent cache of one head of its latent dim");
                if (r && (r->kv_heads != 1 || r->head_dim != o.rope_dim))
                    c.fail("needs a rope-key cache of one head of its rope dim");
            },
            [&](const Gemm& o) {
                if (o.partial && (o.b || o.epilogue != Epilogue::None))
                    c.fail("a partial Gemm has no bias and no epilogue");
            },
            [&](const AllReduce& o) {
                if (o.cards < 2) c.fail("an all-reduce needs at least two cards");
                const std::size_t words = o.exchange == Exchange::Exact ? partial_words : 1;
                c.width(o.x, o.width * words, "its parts");
                c.width(o.out, o.width, "its outputs");
                c.width(o.scratch, o.exchange == Exchange::Exact ? (o.cards - 1) * o.width * words : o.width,
                        "room for what it receives");
                if (o.exchange == Exchange::F32 && o.out != o.x) c.fail("an f32 all-reduce sums in place");
            },
            [&](const AllGather& o) {
                if (o.cards < 2) c.fail("an all-gather needs at least two cards");
                if (c.exists(o.x)) c.width(o.out, o.cards * c.width_of(o.x), "every card's columns");
            },
            [](const auto&) {},
        },
        op);
}

} // namespace

std::optional<std::string> check(const Graph& g) {
    if (g.names.size() != g.vals.size()) return "the graph has a name list unlike its value list";
    if (g.sites.size() != g.ops.size()) return "the graph has a site list unlike its op list";
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
        OpCheck c(g, i);
        auto [r, w] = uses(g.ops[i]);
        for (auto v : r)
            c.exists(v);
        for (auto v : w)
            c.exists(v);
        if (!c.problem) check_op(c, g.ops[i]);
        if (c.problem) return c.problem;
    }
    for (auto v : g.outputs())
        if (v.id >= g.vals.size()) return fmt::format("an output names value {} of {}", v.id, g.vals.size());
    return std::nullopt;
}

} // namespace cardsim::graph
