#include "engine/graph/layout.hpp"

#include "engine/graph/moe_scratch.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

namespace cardsim::graph {
namespace {

constexpr std::size_t never = std::numeric_limits<std::size_t>::max();

/// A value's live range in op indices: first and last op touching it; `last == never` for outputs.
struct Live {
    std::size_t first = never;
    std::size_t last = 0;
    bool touched() const { return first != never; }
    bool overlaps(const Live& o) const { return first <= o.last && o.first <= last; }
};

/// The live range of every value of `g`.
std::vector<Live> live_ranges(const Graph& g) {
    std::vector<Live> live(g.vals.size());
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
        auto [r, w] = uses(g.ops[i]);
        for (auto* list : {&r, &w})
            for (auto v : *list) {
                auto& l = live[v.id];
                l.first = std::min(l.first, i);
                l.last = std::max(l.last, i);
            }
    }
    for (auto v : g.outputs()) {
        auto& l = live[v.id];
        l.first = std::min(l.first, g.ops.size());
        l.last = never;
    }
    return live;
}

/// The values to place, largest first, ties by index.
std::vector<std::uint32_t> placement_order(const std::vector<Live>& live,
                                           const std::vector<std::size_t>& size) {
    std::vector<std::uint32_t> order;
    for (std::uint32_t v = 0; v < live.size(); ++v)
        if (live[v].touched()) order.push_back(v);
    std::sort(order.begin(), order.end(),
              [&](auto a, auto b) { return size[a] != size[b] ? size[a] > size[b] : a < b; });
    return order;
}

/// The lowest offset at which `size` fits between the `taken` spans (sorted by start).
std::size_t first_fit(std::vector<std::pair<std::size_t, std::size_t>>& taken, std::size_t size) {
    std::sort(taken.begin(), taken.end());
    std::size_t at = 0;
    for (auto [lo, hi] : taken) {
        if (at + size <= lo) break;
        at = std::max(at, hi);
    }
    return at;
}

/// The arena sizes of `g`'s values in bucket `b`.
std::vector<std::size_t> sizes(const Graph& g, const Bucket& b) {
    std::vector<std::size_t> size;
    size.reserve(g.vals.size());
    for (auto& s : g.vals)
        size.push_back(padded_size(s, b));
    return size;
}

/// Puts the ops' scratch after the values of `out` (none without experts: `len` stays).
void add_scratch(const Graph& g, const Bucket& b, Layout& out) {
    out.scratch = out.len;
    out.len += scratch_len(g, b);
}

} // namespace

std::size_t padded_size(const Shape& s, const Bucket& b) {
    std::size_t n = b.rows(s.rows) * s.width;
    return (n + ALIGN - 1) / ALIGN * ALIGN;
}

Layout layout_by_scan(const Graph& g, const Bucket& b) {
    auto live = live_ranges(g);
    auto size = sizes(g, b);
    Layout out{std::vector<std::size_t>(g.vals.size(), 0), 0};
    std::vector<std::uint32_t> placed;
    std::vector<std::pair<std::size_t, std::size_t>> taken;
    for (auto v : placement_order(live, size)) {
        taken.clear();
        for (auto u : placed)
            if (live[u].overlaps(live[v])) taken.emplace_back(out.offsets[u], out.offsets[u] + size[u]);
        out.offsets[v] = first_fit(taken, size[v]);
        out.len = std::max(out.len, out.offsets[v] + size[v]);
        placed.push_back(v);
    }
    add_scratch(g, b, out);
    return out;
}

Layout layout(const Graph& g, const Bucket& b) {
    // The same greedy as `layout_by_scan`, but the placed values that overlap a value in time are
    // found through a list per op index (each placed value is in the lists of the ops it lives
    // over) instead of a scan over everything placed: the set found, hence every offset, is the same.
    auto live = live_ranges(g);
    auto size = sizes(g, b);
    const std::size_t slots = g.ops.size() + 1; // op indices, and one past the end for outputs
    auto slot = [&](std::size_t t) { return std::min(t, slots - 1); };
    std::vector<std::vector<std::uint32_t>> at_slot(slots);
    std::vector<std::uint32_t> seen(g.vals.size(), 0);
    std::uint32_t stamp = 0;
    Layout out{std::vector<std::size_t>(g.vals.size(), 0), 0};
    std::vector<std::pair<std::size_t, std::size_t>> taken;
    for (auto v : placement_order(live, size)) {
        ++stamp;
        taken.clear();
        for (std::size_t t = live[v].first, end = slot(live[v].last); t <= end; ++t)
            for (auto u : at_slot[t])
                if (seen[u] != stamp) {
                    seen[u] = stamp;
                    taken.emplace_back(out.offsets[u], out.offsets[u] + size[u]);
                }
        out.offsets[v] = first_fit(taken, size[v]);
        out.len = std::max(out.len, out.offsets[v] + size[v]);
        for (std::size_t t = live[v].first, end = slot(live[v].last); t <= end; ++t)
            at_slot[t].push_back(v);
    }
    add_scratch(g, b, out);
    return out;
}

} // namespace cardsim::graph
