#include "engine/shim/fusion.hpp"

#include "engine/shim/support.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace cardsim::shim {
namespace {

using namespace graph;
using program::Opcode;
using program::Unit;

/// The index of the first op after `from` that reads or writes `v`, if any.
std::optional<std::size_t> next_touching(const Graph& g, std::size_t from, Val v) {
    for (std::size_t i = from + 1; i < g.ops.size(); ++i) {
        auto [r, w] = uses(g.ops[i]);
        if (std::find(r.begin(), r.end(), v) != r.end() || std::find(w.begin(), w.end(), v) != w.end())
            return i;
    }
    return std::nullopt;
}

/// A plain projection: a Gemm with no bias and no epilogue.
const Gemm* projection(const Op& op) {
    auto* m = std::get_if<Gemm>(&op);
    return m && !m->b && m->epilogue == Epilogue::None ? m : nullptr;
}

/// Whether the card runs `cls` as one unit.
bool native(ClassId cls, const Capabilities& caps) {
    return std::holds_alternative<Native>(supports(cls, caps));
}

/// The pass's state: which ops are grouped so far.
class Pass {
public:
    Pass(const Graph& g, const Capabilities& caps) : g_(g), caps_(caps), taken_(g.ops.size(), false) {}

    Fusion run() {
        for (std::size_t i = 0; i < g_.ops.size(); ++i)
            if (!taken_[i]) at(i);
        std::sort(out_.groups.begin(), out_.groups.end(),
                  [](auto& a, auto& b) { return a.ops.front() < b.ops.front(); });
        return std::move(out_);
    }

private:
    const Graph& g_;
    const Capabilities& caps_;
    std::vector<bool> taken_;
    Fusion out_;

    void group(std::optional<ClassId> cls, std::vector<std::size_t> ops) {
        for (auto i : ops)
            taken_[i] = true;
        out_.groups.push_back(Group{cls, std::move(ops)});
    }
    /// The op at `i` if it is free and holds a `T`.
    template <class T>
    const T* free_as(std::optional<std::size_t> i) {
        if (!i || taken_[*i]) return nullptr;
        return std::get_if<T>(&g_.ops[*i]);
    }

    /// Groups the op at `i` with what follows it, by the first rule that applies.
    void at(std::size_t i) {
        const Op& op = g_.ops[i];
        if (merged_projections(i) || gate_up_glu(i) || qk_norm_rope(i) || add_norm(i)) return;
        if (auto* c = std::get_if<Conv>(&op)) {
            auto j = next_touching(g_, i, c->out);
            if (auto* s = free_as<Silu>(j); s && s->x == c->out && native(ClassId::ConvBiasSilu, caps_))
                return group(ClassId::ConvBiasSilu, {i, *j});
            return group(std::nullopt, {i});
        }
        if (auto* e = std::get_if<Embed>(&op)) {
            auto j = next_touching(g_, i, e->out);
            if (free_as<LayerNorm>(j)) return group(ClassId::EmbedNorm, {i, *j});
            if (free_as<Scale>(j)) return group(ClassId::EmbedScale, {i, *j});
            return group(std::nullopt, {i});
        }
        if (std::holds_alternative<GdnGates>(op) && native(ClassId::GdnGating, caps_))
            return group(ClassId::GdnGating, {i});
        if (std::holds_alternative<SigmoidGate>(op) && native(ClassId::GluActMul, caps_))
            return group(ClassId::GluActMul, {i});
        if (std::holds_alternative<SiluMul>(op)) {
            out_.declined.push_back({ClassId::GluActMul, {i}, std::string(sigmoid_only)});
            return group(std::nullopt, {i});
        }
        if (auto* n = std::get_if<RmsNorm>(&op)) {
            if (n->zero_centred) return group(ClassId::NormWeightOffset, {i});
            if (n->w) return group(ClassId::NormWeight, {i});
            return group(std::nullopt, {i});
        }
        if (std::holds_alternative<GatedRmsNorm>(op)) return group(ClassId::GatedNorm, {i});
        if (std::holds_alternative<DeltaStep>(op)) return group(ClassId::GdnStep, {i});
        if (std::holds_alternative<L2Norm>(op)) return group(ClassId::GdnPostConvPrep, {i});
        if (auto* m = std::get_if<Gemm>(&op)) {
            if (m->b) return group(ClassId::GemmBias, {i});
            auto j = next_touching(g_, i, m->out);
            if (auto* a = free_as<ArgMax>(j); a && a->x == m->out)
                return group(ClassId::FusedSampling, {i, *j});
            return group(std::nullopt, {i});
        }
        if (std::holds_alternative<Moe>(op)) return group(ClassId::MoeGateUpAct, {i});
        if (std::holds_alternative<HeadMatmul>(op) || std::holds_alternative<LatentAttendCache>(op))
            return group(ClassId::Mla, {i});
        if (std::holds_alternative<Softcap>(op)) return group(ClassId::Softcap, {i});
        if (auto* a = std::get_if<AttendCache>(&op); a && (a->window || a->sinks || a->softcap))
            return group(ClassId::AttentionVariantsInline, {i});
        group(std::nullopt, {i});
    }

    /// Consecutive projections of one activation from one tensor, merged a product at a time while
    /// they stay one matrix (MergedQkv). Returns whether it grouped anything.
    bool merged_projections(std::size_t i) {
        auto* first = projection(g_.ops[i]);
        if (!first) return false;
        std::vector<std::size_t> run{i};
        std::vector<Weight> parts{first->w};
        for (std::size_t j = i + 1; j < g_.ops.size() && !taken_[j]; ++j) {
            auto* m = projection(g_.ops[j]);
            if (!m || m->a != first->a || m->w.tensor != first->w.tensor) break;
            auto grown = parts;
            grown.push_back(m->w);
            if (!one_matrix(grown)) {
                out_.declined.push_back({ClassId::MergedQkv, {i, j}, std::string(not_one_matrix)});
                break;
            }
            parts = std::move(grown);
            run.push_back(j);
        }
        if (run.size() < 2 || !native(ClassId::MergedQkv, caps_)) return false;
        group(ClassId::MergedQkv, std::move(run));
        return true;
    }

    /// A gate projection, an up projection and the SiLU·mul of both (GemvGateUpGlu, decomposed).
    bool gate_up_glu(std::size_t i) {
        auto* gate = projection(g_.ops[i]);
        if (!gate || i + 2 >= g_.ops.size() || taken_[i + 1] || taken_[i + 2]) return false;
        auto* up = projection(g_.ops[i + 1]);
        auto* glu = std::get_if<SiluMul>(&g_.ops[i + 2]);
        if (!up || !glu || up->a != gate->a || glu->gate != gate->out || glu->up != up->out) return false;
        out_.declined.push_back({ClassId::GluActMul, {i + 2}, std::string(sigmoid_only)});
        group(ClassId::GemvGateUpGlu, {i, i + 1, i + 2});
        return true;
    }

    /// A per-head norm, the rotation of its result, and the cache append of that (QkNormRope,
    /// QkNormRopeKvAppend), or a rotation and its append (RopeKvAppend), decomposed.
    bool qk_norm_rope(std::size_t i) {
        const Op& op = g_.ops[i];
        Val v;
        std::vector<std::size_t> ops{i};
        bool norm = false;
        if (auto* n = std::get_if<RmsNorm>(&op); n && n->group < g_.shape(n->x).width) {
            v = n->out;
            auto j = next_touching(g_, i, v);
            auto* r = free_as<Rotate>(j);
            if (!r || r->x != v) return false;
            ops.push_back(*j);
            norm = true;
        } else if (auto* r = std::get_if<Rotate>(&op)) {
            v = r->x;
        } else {
            return false;
        }
        auto k = next_touching(g_, ops.back(), v);
        bool append = false;
        if (auto* c = free_as<CacheAppend>(k); c && c->x == v) {
            ops.push_back(*k);
            append = true;
        }
        if (!norm && !append) return false;
        group(norm ? (append ? ClassId::QkNormRopeKvAppend : ClassId::QkNormRope) : ClassId::RopeKvAppend,
              ops);
        return true;
    }

    /// A residual add and the norm of its result (AddNorm, decomposed).
    bool add_norm(std::size_t i) {
        auto* a = std::get_if<Add>(&g_.ops[i]);
        if (!a) return false;
        auto j = next_touching(g_, i, a->out);
        auto* n = free_as<RmsNorm>(j);
        if (!n || n->x != a->out) return false;
        group(ClassId::AddNorm, {i, *j});
        return true;
    }
};

/// The noun phrase of what an op needs a unit for, in "the engine has no unit for ...".
std::string needs(const Op& op) {
    return std::visit(
        [](const auto& o) -> std::string {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, LayerNorm>)
                return "a LayerNorm";
            else if constexpr (std::is_same_v<T, Rope>)
                return "a rotary embedding of fused rows";
            else if constexpr (std::is_same_v<T, AddType>)
                return "a question-type table";
            else if constexpr (std::is_same_v<T, GatherMarkers>)
                return "a marker gather";
            else if constexpr (std::is_same_v<T, ActFeatures>)
                return "an act head";
            else if constexpr (std::is_same_v<T, GeGlu> || std::is_same_v<T, Gelu>)
                return "GELU";
            else
                return "a " + std::string(kind(Op{o}));
        },
        op);
}

} // namespace

bool one_matrix(std::span<const Weight> parts) {
    if (parts.empty()) return false;
    for (auto& p : parts)
        if (p.tensor != parts[0].tensor) return false;
    std::size_t next = 0;
    bool ranges = true;
    for (auto& p : parts) {
        auto* r = std::get_if<RowRange>(&p.view);
        if (!r || !r->transpose || r->first != next) {
            ranges = false;
            break;
        }
        next = r->first + r->count;
    }
    if (ranges) return true;
    auto* h1 = std::get_if<HeadPart>(&parts[0].view);
    if (!h1 || !h1->transpose || h1->offset != 0 || h1->stride != 2 * h1->width || h1->heads) return false;
    if (parts.size() == 1) return true;
    if (parts.size() > 2) return false;
    auto* h2 = std::get_if<HeadPart>(&parts[1].view);
    return h2 && h2->transpose && h2->stride == h1->stride && h2->offset == h1->width &&
           h2->width == h1->width;
}

Fusion fuse(const Graph& g, const Capabilities& caps) {
    return Pass(g, caps).run();
}

std::optional<std::string> fits(const Op& op, const Capabilities& caps) {
    auto none = [](std::string what) { return std::string(no_unit) + what; };
    if (const auto* m = std::get_if<Moe>(&op)) {
        if (!caps.experts) return none("experts");
        if (!caps.has(program::Unit::Router))
            return "the card config enables experts (`capabilities.experts`) but has no router unit "
                   "(`units.router.count` is 0)";
        // What lower/emit_experts.cpp emits besides the route and the combine: the experts' matvecs
        // on the matvec unit and their SiLU-multiply (or clamped SwiGLU) on the silu_mul unit.
        for (auto [unit, key] :
             {std::pair{program::Unit::Matvec, "matvec"}, {program::Unit::SiluMul, "silu_mul"}})
            if (!caps.has(unit))
                return std::string("the experts' layer runs its experts on the ") + key +
                       " unit, and the card has none (`units." + key + ".count` is 0)";
        // The combine takes a shared expert under its sigmoid gate.
        if (m->shared_gate && !m->shared_expert_gate)
            return "the router unit combines a shared expert only under its sigmoid gate "
                   "(`shared_expert_gate`), and this one has none";
        // gpt-oss's experts: what this card's matvec and SiLU-multiply units lack of them, all named.
        std::vector<std::string> lacks;
        if (m->router_bias && !caps.matvec_bias) lacks.push_back("a router bias (`units.matvec.bias`)");
        if ((!m->gate_bias.empty() || !m->down_bias.empty()) && !caps.matvec_bias)
            lacks.push_back("expert biases (`units.matvec.bias`)");
        if (m->swiglu_limit && !caps.swiglu_clamp)
            lacks.push_back("a clamped SwiGLU (`units.silu_mul.clamp`)");
        if (!lacks.empty()) {
            std::string what = lacks.front();
            for (std::size_t k = 1; k < lacks.size(); ++k)
                what += (k + 1 == lacks.size() ? " or " : ", ") + lacks[k];
            return none(what);
        }
        return std::nullopt;
    }
    if (auto* r = std::get_if<Rotate>(&op); r && r->yarn && !caps.rotation_yarn)
        return none("YaRN rotary scaling (`units.rotation.yarn`)");
    if ((std::holds_alternative<HeadMatmul>(op) || std::holds_alternative<LatentAttendCache>(op)) &&
        !caps.mla)
        return none("multi-head latent attention");
    if (auto* r = std::get_if<Rotate>(&op); r && r->interleaved)
        return none("an interleaved rotary embedding"); // the rotate unit pairs (i, i + d/2)
    if (auto* m = std::get_if<GeluMul>(&op)) {
        // No command takes GELU of one value times another: GeGLU reads one row [input | gate].
        if (!caps.has(Unit::Gelu)) return none("GELU");
        return none(m->tanh ? "GELU's tanh approximation" : "GELU of one projection times another");
    }
    if (std::holds_alternative<AllReduce>(op) || std::holds_alternative<AllGather>(op)) {
        // Sends and receives on the network unit a card has in a system of several.
        if (caps.cards < 2) return none("a collective across cards (the card is in no system)");
        return std::nullopt;
    }
    if (std::holds_alternative<Scale>(op) && !caps.embedding_scale) return none("an embedding scale");
    if (std::holds_alternative<Softcap>(op) && !caps.logit_softcap) return none("a logit soft cap");
    if (std::holds_alternative<Relu>(op) && !caps.matvec_relu) return none("a ReLU");
    if (auto* m = std::get_if<Gemm>(&op)) {
        if (m->epilogue == Epilogue::Gelu && !caps.has(Unit::Gelu)) return none("GELU");
        if (m->epilogue == Epilogue::Relu && !caps.matvec_relu) return none("a ReLU");
    }
    if (auto* a = std::get_if<AttendCache>(&op)) {
        if (a->window && !caps.attention_window) return none("a sliding window");
        if (a->sinks && !caps.attention_sinks) return none("attention sinks");
        if (a->softcap && !caps.attention_softcap) return none("soft-capped scores");
    }
    if (auto* a = std::get_if<Attention>(&op); a && !caps.has(Unit::AttentionWindow))
        return none(a->window ? "a sliding window" : "a full attention");
    auto code = opcode_of(op);
    if (code && !caps.has(program::spec(*code).unit)) return none(needs(op));
    return std::nullopt;
}

std::optional<Opcode> opcode_of(const Op& op) {
    return std::visit(
        [](const auto& o) -> std::optional<Opcode> {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, Embed>)
                return Opcode::Embed;
            else if constexpr (std::is_same_v<T, LayerNorm>)
                return Opcode::LayerNorm;
            else if constexpr (std::is_same_v<T, Gemm>)
                return Opcode::Matvec;
            else if constexpr (std::is_same_v<T, Rope>)
                return Opcode::Rope;
            else if constexpr (std::is_same_v<T, Attention>)
                return Opcode::SelfAttention;
            else if constexpr (std::is_same_v<T, GeGlu>)
                return Opcode::GeGlu;
            else if constexpr (std::is_same_v<T, AddType>)
                return Opcode::AddType;
            else if constexpr (std::is_same_v<T, GatherMarkers>)
                return Opcode::GatherMarkers;
            else if constexpr (std::is_same_v<T, ActFeatures>)
                return Opcode::ActFeatures;
            else if constexpr (std::is_same_v<T, RmsNorm>)
                return Opcode::RmsNorm;
            else if constexpr (std::is_same_v<T, Rotate>)
                return Opcode::Rotate;
            else if constexpr (std::is_same_v<T, CacheAppend>)
                return Opcode::CacheAppend;
            else if constexpr (std::is_same_v<T, AttendCache>)
                return Opcode::Attend;
            else if constexpr (std::is_same_v<T, Conv>)
                return Opcode::Conv;
            else if constexpr (std::is_same_v<T, Silu>)
                return Opcode::Silu;
            else if constexpr (std::is_same_v<T, L2Norm>)
                return Opcode::L2Norm;
            else if constexpr (std::is_same_v<T, GdnGates>)
                return Opcode::Gates;
            else if constexpr (std::is_same_v<T, DeltaStep>)
                return Opcode::DeltaStep;
            else if constexpr (std::is_same_v<T, GatedRmsNorm>)
                return Opcode::GatedNorm;
            else if constexpr (std::is_same_v<T, SigmoidGate>)
                return Opcode::SigmoidGate;
            else if constexpr (std::is_same_v<T, SiluMul>)
                return Opcode::SiluMul;
            else if constexpr (std::is_same_v<T, Add>)
                return Opcode::Add;
            else if constexpr (std::is_same_v<T, ArgMax>)
                return Opcode::ArgMax;
            else if constexpr (std::is_same_v<T, Gelu>)
                return Opcode::Gelu;
            else if constexpr (std::is_same_v<T, AllReduce> || std::is_same_v<T, AllGather>)
                return Opcode::Send; // and receives, adds or copies (lower/emit_collectives.cpp)
            else
                return std::nullopt; // Relu, Scale, Softcap, Moe, HeadMatmul, GeluMul, LatentAttendCache:
                                     // no unit runs them alone
        },
        op);
}

std::vector<Opcode> commands_of(const Graph& g, const Group& group, const Capabilities& caps) {
    if (group.cls && native(*group.cls, caps)) {
        switch (*group.cls) {
        case ClassId::MergedQkv:
            return {Opcode::Matvec};
        case ClassId::ConvBiasSilu:
            return {Opcode::Conv};
        case ClassId::GdnGating:
            return {Opcode::Gates};
        case ClassId::GluActMul:
            return {Opcode::SigmoidGate};
        default:
            break;
        }
    }
    std::vector<Opcode> out;
    for (auto i : group.ops)
        if (auto c = opcode_of(g.ops[i])) out.push_back(*c);
    return out;
}

} // namespace cardsim::shim
