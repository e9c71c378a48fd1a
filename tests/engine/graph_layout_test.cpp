// The arena layout: the seed's two tests, a property test over random graphs, and the fast layout
// against the seed's scan.

#include "engine/graph/examples.hpp"
#include "engine/graph/layout.hpp"

#include <catch2/catch.hpp>

#include <limits>
#include <random>

using namespace cardsim::graph;

namespace {

constexpr std::size_t never = std::numeric_limits<std::size_t>::max();

/// A value's live range recomputed here from `uses`, independently of the layout code.
struct Range {
    std::size_t first = never, last = 0;
};

std::vector<Range> ranges(const Graph& g) {
    std::vector<Range> live(g.vals.size());
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
        auto [r, w] = uses(g.ops[i]);
        r.insert(r.end(), w.begin(), w.end());
        for (auto v : r)
            live[v.id] = {std::min(live[v.id].first, i), std::max(live[v.id].last, i)};
    }
    for (auto v : g.outputs())
        live[v.id] = {std::min(live[v.id].first, g.ops.size()), never};
    return live;
}

/// `width` wide values chained by `steps` LayerNorms after an Embed.
Graph chain(std::size_t width, std::size_t steps) {
    Graph g;
    auto x = g.val(Rows::Tokens, width);
    g.push(Embed{Weight{0}, x});
    for (std::size_t i = 0; i < steps; ++i) {
        auto y = g.val(Rows::Tokens, width);
        g.push(LayerNorm{x, Weight{1}, std::nullopt, 1e-5, y});
        x = y;
    }
    g.logits = x;
    return g;
}

/// Asserts the layout's invariants on `g`: live values never overlap, every value fits in the
/// arena, in-place ops keep one offset (trivially: one value), the arena is never larger than the
/// sum of the sizes, and offsets are aligned.
void check_invariants(const Graph& g, const Bucket& b, const Layout& l) {
    auto live = ranges(g);
    std::size_t total = 0;
    for (std::size_t u = 0; u < g.vals.size(); ++u) {
        if (live[u].first == never) continue;
        std::size_t su = padded_size(g.vals[u], b);
        total += su;
        REQUIRE(l.offsets[u] % ALIGN == 0);
        REQUIRE(l.offsets[u] + su <= l.len);
        for (std::size_t v = 0; v < u; ++v) {
            if (live[v].first == never) continue;
            std::size_t sv = padded_size(g.vals[v], b);
            bool time = live[u].first <= live[v].last && live[v].first <= live[u].last;
            bool space = l.offsets[u] < l.offsets[v] + sv && l.offsets[v] < l.offsets[u] + su;
            if (su == 0 || sv == 0) space = false;
            INFO("values " << u << " and " << v);
            REQUIRE_FALSE((time && space));
        }
    }
    REQUIRE(l.len <= total);
}

/// A random graph: a residual stream or two, temporaries of random widths and row kinds, in-place
/// ops (Add into the stream, Rotate, AddType, accumulating Gemms) and random outputs.
Graph random_graph(std::mt19937_64& rng) {
    Graph g;
    auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
    const Rows kinds[] = {Rows::Tokens, Rows::Seqs, Rows::Markers};
    std::vector<Val> pool;
    std::size_t streams = 1 + pick(2);
    for (std::size_t s = 0; s < streams; ++s) {
        auto h = g.val(Rows::Tokens, 16 * (1 + pick(4)));
        g.push(Embed{Weight{0}, h});
        pool.push_back(h);
    }
    std::size_t ops = 1 + pick(60);
    for (std::size_t i = 0; i < ops; ++i) {
        Val a = pool[pick(pool.size())];
        auto fresh = [&](Val like) {
            auto s = g.shape(like);
            return g.val(pick(4) == 0 ? kinds[pick(3)] : s.rows, pick(3) == 0 ? 1 + pick(100) : s.width);
        };
        switch (pick(7)) {
        case 0: { // a new temporary from a
            auto y = g.val(kinds[pick(3)], 1 + pick(200));
            g.push(Gemm{a, Weight{1}, std::nullopt, Epilogue::None, y});
            pool.push_back(y);
            break;
        }
        case 1: { // accumulate into a stream
            auto y = pool[pick(streams)];
            g.push(Gemm{a, Weight{1}, std::nullopt, Epilogue::Accumulate, y});
            break;
        }
        case 2: { // in-place add of two values of one shape
            auto b = g.val(g.shape(a).rows, g.shape(a).width);
            g.push(Gemm{a, Weight{2}, std::nullopt, Epilogue::None, b});
            g.push(Add{a, b, a});
            break;
        }
        case 3:
            g.push(Rotate{a, 1, 0, 1e4, false, {}});
            break; // in place; shape checks don't matter here
        case 4:
            g.push(AddType{a, Weight{3}});
            break;
        case 5: {
            auto y = fresh(a);
            g.push(GatherMarkers{a, y});
            pool.push_back(y);
            break;
        }
        default: {
            auto y = g.val(g.shape(a).rows, g.shape(a).width);
            g.push(LayerNorm{a, Weight{4}, std::nullopt, 1e-5, y});
            pool.push_back(y);
            break;
        }
        }
    }
    if (pick(2)) g.logits = pool[pick(pool.size())];
    if (pick(2)) g.act = pool[pick(pool.size())];
    if (pick(3) == 0) g.val(Rows::Tokens, 7); // a value no op touches
    return g;
}

} // namespace

TEST_CASE("a_chain_needs_two_buffers") {
    auto g = chain(10, 20);
    Bucket b{7, 7, 7};
    auto l = layout(g, b);
    std::size_t one = padded_size(Shape{Rows::Tokens, 10}, b);
    REQUIRE(one == 80);
    REQUIRE(l.len == 2 * one);
    for (std::size_t i = 1; i < g.ops.size(); ++i) {
        auto& n = std::get<LayerNorm>(g.ops[i]);
        INFO("op " << i << " aliases");
        REQUIRE(l.offsets[n.x.id] != l.offsets[n.out.id]);
    }
}

TEST_CASE("live_values_never_overlap") {
    // A residual stream that lives throughout, with temporaries of several sizes around it.
    Graph g;
    auto h = g.val(Rows::Tokens, 8);
    g.push(Embed{Weight{0}, h});
    for (std::size_t i = 0; i < 6; ++i) {
        auto a = g.val(Rows::Tokens, 8 * (i % 3 + 1));
        auto b = g.val(Rows::Seqs, 3);
        g.push(Gemm{h, Weight{0}, std::nullopt, Epilogue::None, a});
        g.push(GatherMarkers{a, b});
        g.push(Gemm{a, Weight{0}, std::nullopt, Epilogue::Accumulate, h});
    }
    g.act = h;
    Bucket bucket{33, 5, 9};
    auto l = layout(g, bucket);
    check_invariants(g, bucket, l);
    std::size_t sum = 0;
    for (auto& s : g.vals)
        sum += bucket.rows(s.rows) * s.width;
    REQUIRE(l.len < sum);
}

TEST_CASE("random graphs keep every layout invariant and the fast layout equals the seed's scan") {
    std::mt19937_64 rng(20261202);
    for (int n = 0; n < 3000; ++n) {
        auto g = random_graph(rng);
        Bucket b{1 + rng() % 64, 1 + rng() % 8, rng() % 16};
        auto l = layout(g, b);
        INFO("graph " << n);
        check_invariants(g, b, l);
        REQUIRE(l == layout_by_scan(g, b));
    }
}

TEST_CASE("in-place ops keep their value at one offset and outputs survive to the end") {
    Graph g;
    auto h = g.val(Rows::Tokens, 32);
    g.push(Embed{Weight{0}, h});
    auto t = g.val(Rows::Tokens, 32);
    g.push(Gemm{h, Weight{1}, std::nullopt, Epilogue::None, t});
    g.push(Add{h, t, h});
    auto late = g.val(Rows::Tokens, 32);
    g.push(LayerNorm{h, Weight{2}, std::nullopt, 1e-5, late});
    g.logits = h;
    auto l = layout(g, Bucket{4, 1, 0});
    // h is an output: nothing placed after its first use may share its space.
    REQUIRE(l.offsets[late.id] != l.offsets[h.id]);
    REQUIRE(l.offsets[t.id] != l.offsets[h.id]);
}

TEST_CASE("example graphs pass the graph check and lay out identically by both algorithms") {
    auto d = example_decoder(DecoderShape{4, 256, 4, 2, 64, 512, 1000});
    auto e = example_encoder(EncoderShape{4, 128, 2, 192, 500, 3, 128});
    for (auto* g : {&d, &e}) {
        REQUIRE_FALSE(check(*g).has_value());
        Bucket b{16, 2, 4};
        auto l = layout(*g, b);
        check_invariants(*g, b, l);
        REQUIRE(l == layout_by_scan(*g, b));
    }
}

TEST_CASE("the graph check names the op and the problem") {
    Graph g;
    auto a = g.val(Rows::Tokens, 8), b = g.val(Rows::Tokens, 4);
    g.push(Embed{Weight{0}, a});
    g.push(Add{a, b, a});
    auto problem = check(g);
    REQUIRE(problem.has_value());
    REQUIRE(problem->find("op 1 (Add)") != std::string::npos);
    Graph bad;
    bad.push(Embed{Weight{0}, Val{3}});
    REQUIRE(check(bad).value().find("names value 3 of 0") != std::string::npos);
}
