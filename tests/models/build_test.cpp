// Generated checkpoints of every architecture load, recognise and build graphs that pass
// graph::check, with the bindings the shim's one-matrix rule reads; make-model is deterministic.

#include "engine/graph/graph.hpp"
#include "models/bindings.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace cardsim;
using namespace cardsim::models;
using namespace cardsim::models::test;
using namespace cardsim::graph;

namespace {

/// The Gemm ops of layer `layer` and part `part`, in order.
std::vector<const Gemm*> gemms(const Graph& g, std::size_t layer, Part part) {
    std::vector<const Gemm*> out;
    for (std::size_t i = 0; i < g.ops.size(); ++i)
        if (auto* m = std::get_if<Gemm>(&g.ops[i]); m && g.sites[i] == Site{layer, part}) out.push_back(m);
    return out;
}

/// How many ops of kind `K` the graph has.
template <class K>
std::size_t count(const Graph& g) {
    return static_cast<std::size_t>(
        std::count_if(g.ops.begin(), g.ops.end(), [](auto& op) { return std::holds_alternative<K>(op); }));
}

/// The view `v` as a RowRange (fails the test otherwise).
RowRange rows(const View& v) {
    REQUIRE(std::holds_alternative<RowRange>(v));
    return std::get<RowRange>(v);
}
HeadPart heads(const View& v) {
    REQUIRE(std::holds_alternative<HeadPart>(v));
    return std::get<HeadPart>(v);
}

/// Every value named, every op sited, the check passing.
void well_formed(const Graph& g) {
    CHECK_FALSE(check(g).has_value());
    for (auto& n : g.names)
        CHECK_FALSE(n.empty());
    REQUIRE(g.sites.size() == g.ops.size());
}

} // namespace

TEST_CASE("every architecture's generated checkpoint loads and builds a checked graph", "[models][build]") {
    ScratchDir d("build-all");
    for (auto arch : {SynthArch::Dense, SynthArch::Hybrid, SynthArch::HybridMoe, SynthArch::Encoder,
                      SynthArch::Windowed, SynthArch::Softcap, SynthArch::Mla, SynthArch::Moe}) {
        INFO(name(arch));
        const auto dir = d / std::string(name(arch));
        const auto written = tiny(arch, dir);
        const Model m = load_model(dir);
        CHECK(describe(m.spec) == describe(written.spec));
        CHECK(m.checkpoint.parameter_count() == written.parameters);
        const auto b = build_graph(m);
        well_formed(b.graph);
        // Every tensor of the checkpoint is read by the graph.
        std::set<W> bound;
        for (auto& x : bindings(b))
            bound.insert(x.weight.tensor);
        CHECK(bound.size() == m.checkpoint.tensor_count());
    }
}

TEST_CASE("a decoder graph is one step: token rows in, logits and next token out", "[models][build]") {
    ScratchDir d("build-step");
    tiny(SynthArch::Dense, d / "m");
    const auto m = load_model(d / "m");
    const auto g = build_graph(m).graph;
    REQUIRE(g.logits);
    REQUIRE(g.next);
    CHECK(g.shape(*g.logits) == Shape{Rows::Tokens, 96});
    CHECK(g.shape(*g.next) == Shape{Rows::Tokens, 1});
    CHECK_FALSE(g.act);
    for (auto& s : g.vals)
        CHECK(s.rows == Rows::Tokens);
    CHECK(count<Embed>(g) == 1);
    CHECK(count<ArgMax>(g) == 1);
    CHECK(count<CacheAppend>(g) == 4); // k and v, two layers
    CHECK(count<AttendCache>(g) == 2);
    // The tied LM head multiplies by the embedding.
    const auto* head = std::get_if<Gemm>(&g.ops[g.ops.size() - 2]);
    REQUIRE(head);
    CHECK(m.checkpoint.name(head->w.tensor) == "model.embed_tokens.weight");
    CHECK(head->w.view == View{Whole{true}});
    CHECK(g.sites[g.ops.size() - 2] == Site{std::nullopt, Part::Head});
}

TEST_CASE("Qwen3.5 q, k, v are row ranges of in_proj_qkv following one another from row 0",
          "[models][build]") {
    ScratchDir d("build-qwen35");
    tiny(SynthArch::Hybrid, d / "m");
    const auto m = load_model(d / "m");
    const auto g = build_graph(m).graph;
    const auto mix = gemms(g, 0, Part::Mixer);
    REQUIRE(mix.size() == 7); // q k v z b a out
    const W qkv = m.checkpoint.require("model.language_model.layers.0.linear_attn.in_proj_qkv.weight");
    std::size_t next = 0;
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(mix[i]->w.tensor == qkv);
        const auto r = rows(mix[i]->w.view);
        CHECK(r.first == next);
        CHECK(r.transpose);
        next = r.first + r.count;
        CHECK(mix[i]->a == mix[0]->a); // one activation
    }
    CHECK(next == m.checkpoint.shape(qkv)[0]);
    // Conv per part with its rows of the kernel, then SiLU.
    std::size_t convs = 0, conv_next = 0;
    for (std::size_t i = 0; i < g.ops.size(); ++i)
        if (auto* c = std::get_if<Conv>(&g.ops[i]); c && g.sites[i].layer == 0) {
            const auto r = rows(c->w.view);
            CHECK(r.first == conv_next);
            conv_next += r.count;
            ++convs;
            const auto* silu = std::get_if<Silu>(&g.ops[i + 1]);
            REQUIRE(silu);
            CHECK(silu->x == c->out);
        }
    CHECK(convs == 3);
    // The gated attention's query and gate are the halves of each head of q_proj.
    const auto att = gemms(g, 3, Part::Attention);
    REQUIRE(att.size() >= 2);
    const auto q = heads(att[0]->w.view), gate = heads(att[1]->w.view);
    CHECK(att[0]->w.tensor == att[1]->w.tensor);
    CHECK(q.stride == 2 * 16);
    CHECK(q.offset == 0);
    CHECK(q.width == 16);
    CHECK(gate.stride == q.stride);
    CHECK(gate.offset == 16);
    CHECK(gate.width == 16);
    CHECK(count<SigmoidGate>(g) == 1);
    CHECK(count<DeltaStep>(g) == 3);
    // Zero-centred norms with the head dim as the QK norm's group.
    for (auto& op : g.ops)
        if (auto* n = std::get_if<RmsNorm>(&op)) {
            CHECK(n->zero_centred);
            CHECK((n->group == 16 || n->group == 32));
        }
}

TEST_CASE("Qwen3-Next's grouped in_proj_qkvz and in_proj_ba are read by head parts", "[models][build]") {
    ScratchDir d("build-next");
    tiny(SynthArch::HybridMoe, d / "m");
    const auto m = load_model(d / "m");
    const auto b = build_graph(m);
    const auto& g = b.graph;
    const auto mix = gemms(g, 0, Part::Mixer);
    REQUIRE(mix.size() == 7);
    // nk 2, nv 4, dk = dv = 8: per key head [q 8 | k 8 | v 16 | z 16], and [b 2 | a 2].
    const HeadPart expect[] = {{48, 0, 8}, {48, 8, 8}, {48, 16, 16}, {48, 32, 16}, {4, 0, 2}, {4, 2, 2}};
    for (std::size_t i = 0; i < 6; ++i) {
        INFO("projection " << i);
        CHECK(heads(mix[i]->w.view) == expect[i]);
    }
    // Experts: one Moe op per layer with every expert and its shared-expert gate.
    CHECK(count<Moe>(g) == 4);
    for (std::size_t i = 0; i < g.ops.size(); ++i)
        if (auto* moe = std::get_if<Moe>(&g.ops[i])) {
            CHECK(moe->gate.size() == 4);
            CHECK(moe->top_k == 2);
            CHECK(moe->shared_gate.has_value());
            CHECK(g.sites[i].part == Part::Ffn);
            REQUIRE(moe->shared_expert_gate);
            CHECK(m.checkpoint.name(moe->shared_expert_gate->tensor)
                      .ends_with("mlp.shared_expert_gate.weight"));
            CHECK(moe->intermediate > 0);
            CHECK(moe->shared_intermediate > 0);
        }
    // Untied: the LM head is lm_head.weight.
    const auto* head = std::get_if<Gemm>(&g.ops[g.ops.size() - 2]);
    REQUIRE(head);
    CHECK(m.checkpoint.name(head->w.tensor) == "lm_head.weight");
}

TEST_CASE("the encoder graph is the seed's: types, layers, markers, act head", "[models][build]") {
    ScratchDir d("build-enc");
    tiny(SynthArch::Encoder, d / "m");
    const auto m = load_model(d / "m");
    const auto g = build_graph(m).graph;
    REQUIRE(g.logits);
    REQUIRE(g.act);
    CHECK(g.shape(*g.logits) == Shape{Rows::Markers, 1});
    CHECK(g.shape(*g.act) == Shape{Rows::Seqs, 2});
    CHECK(count<AddType>(g) == 1);
    CHECK(count<GatherMarkers>(g) == 1);
    CHECK(count<ActFeatures>(g) == 1);
    CHECK(count<GeGlu>(g) == 3);
    // Layer 0 global (no window, theta 160000), layers 1 and 2 local (window 2, theta 10000).
    std::vector<std::optional<std::size_t>> windows;
    std::vector<double> thetas;
    for (auto& op : g.ops) {
        if (auto* a = std::get_if<Attention>(&op)) windows.push_back(a->window);
        if (auto* r = std::get_if<Rope>(&op)) thetas.push_back(r->theta);
    }
    CHECK(windows == std::vector<std::optional<std::size_t>>{std::nullopt, 2, 2});
    CHECK(thetas == std::vector<double>{160000.0, 10000.0, 10000.0});
    // Layer 0's attention norm is the identity: 1 embedding norm + 2 attention norms + 3 MLP norms + final.
    CHECK(count<LayerNorm>(g) == 7);
    CHECK(g.states.empty());
}

TEST_CASE("make-model writes the same bytes for the same seed and other bytes for another",
          "[models][build]") {
    ScratchDir d("build-det");
    tiny(SynthArch::Hybrid, d / "a", 5, Dtype::BF16);
    tiny(SynthArch::Hybrid, d / "b", 5, Dtype::BF16);
    tiny(SynthArch::Hybrid, d / "c", 6, Dtype::BF16);
    const auto a = read_file(d / "a" / "model.safetensors");
    CHECK(a == read_file(d / "b" / "model.safetensors"));
    CHECK(a != read_file(d / "c" / "model.safetensors"));
    CHECK(read_file(d / "a" / "config.json") == read_file(d / "c" / "config.json"));
    // More threads, same bytes.
    SynthOptions o;
    o.arch = SynthArch::Hybrid;
    o.seed = 5;
    o.threads = 2;
    make_model(o, d / "t");
    CHECK(a == read_file(d / "t" / "model.safetensors"));
}

TEST_CASE("shards and dtypes hold the same weights: bf16 is f32 rounded", "[models][build]") {
    ScratchDir d("build-shards");
    tiny(SynthArch::Dense, d / "f32", 3, Dtype::F32, 1);
    tiny(SynthArch::Dense, d / "bf16", 3, Dtype::BF16, 4);
    const auto f = Checkpoint::open(d / "f32");
    const auto b = Checkpoint::open(d / "bf16");
    CHECK(b.files().size() == 4);
    REQUIRE(f.tensor_count() == b.tensor_count());
    for (W w = 0; w < f.tensor_count(); ++w) {
        REQUIRE(f.name(w) == b.name(w));
        const auto x = f.values(w, Whole{}), y = b.values(w, Whole{});
        REQUIRE(x.size() == y.size());
        for (std::size_t i = 0; i < x.size(); ++i)
            REQUIRE(y[i] == bf16_to_double(float_to_bf16(static_cast<float>(x[i]))));
    }
}

TEST_CASE("make-model values have their roles' scales", "[models][build]") {
    auto stats = [](const TensorSpec& t, std::size_t n) {
        double sum = 0, sq = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const double v = synth_value(t, 1, i);
            sum += v;
            sq += v * v;
        }
        return std::pair{sum / n, std::sqrt(sq / n - (sum / n) * (sum / n))};
    };
    const auto [lm, ls] = stats({"w", {1024, 1024}, Role::Linear}, 100000);
    CHECK(std::fabs(lm) < 0.001);
    CHECK(ls == Approx(1.0 / 32).epsilon(0.02));
    const auto [nm, ns] = stats({"n", {100000}, Role::Norm}, 100000);
    CHECK(nm == Approx(1.0 + 3.0 / 64).epsilon(0.01)); // one channel in 64 about 4
    CHECK(ns > 0.1);
    for (std::size_t i = 0; i < 1000; ++i) {
        const double a = synth_value({"a", {1000}, Role::ALog}, 1, i);
        CHECK((a >= 0 && a < std::log(16.0)));
        const double dt = synth_value({"d", {1000}, Role::DtBias}, 1, i);
        const double step = std::log1p(std::exp(dt));
        CHECK((step >= 0.001 * 0.999 && step <= 0.1 * 1.001));
    }
}

TEST_CASE("make-model refuses to overwrite unless told, and leaves no temporary behind", "[models][build]") {
    ScratchDir d("build-over");
    tiny(SynthArch::Encoder, d / "m");
    REQUIRE_THROWS_WITH(tiny(SynthArch::Encoder, d / "m"), Catch::Matchers::Contains("already exists"));
    SynthOptions o;
    o.arch = SynthArch::Dense;
    o.replace = true;
    make_model(o, d / "m");
    CHECK(std::holds_alternative<DecoderSpec>(load_model(d / "m").spec));
    std::size_t entries = 0;
    for (auto& e : std::filesystem::directory_iterator(d.path())) {
        (void)e;
        ++entries;
    }
    CHECK(entries == 1);
}
