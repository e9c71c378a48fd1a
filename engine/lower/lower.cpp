#include "engine/lower/lower.hpp"

#include "engine/kernels/kernels.hpp"
#include "engine/lower/lowering.hpp"

#include <algorithm>

namespace cardsim::lower {

using detail::align_up;
using detail::Lowering;
using detail::SetShare;
using graph::Bucket;
using graph::Graph;
using graph::WeightSource;
using program::Region;

std::optional<std::string> arena_refusal(const Graph& g, const graph::Bucket& b, std::uint64_t sram_bytes) {
    const std::uint64_t need = 4 * layout(g, b).len;
    if (need <= sram_bytes) return std::nullopt;
    return fmt::format(
        "the arena needs {} bytes and the card's SRAM holds {} bytes (`sram.bytes` = {}; raise "
        "it to at least {})",
        need, sram_bytes, sram_bytes, need);
}

Compiled lower(const Graph& g, const WeightSource& weights, const Target& target, const Options& options) {
    return Lowering(g, weights, target, options).run();
}

Capacity capacity(const Graph& g, const WeightSource& weights, const Target& target, Options options) {
    options.shapes_only = true;
    return Lowering(g, weights, target, options, false).run().capacity;
}

namespace {

/// The shares of a set of `buckets` lowered with `options`: sizes from a shapes-only lowering of each.
std::vector<SetShare> shares_of(const Graph& g, const WeightSource& weights, const Target& target,
                                Options options, std::span<const Bucket> buckets) {
    options.shapes_only = true;
    std::vector<std::uint64_t> programs;
    SetShare all;
    for (auto& b : buckets) {
        options.bucket = b;
        auto c = Lowering(g, weights, target, options, false).run();
        all.io_bytes = std::max(all.io_bytes, c.program.region(Region::Io)->size);
        all.arena_bytes = std::max(all.arena_bytes, c.program.arena_bytes);
        programs.push_back(c.program.region(Region::Program)->size);
    }
    std::vector<SetShare> shares;
    for (auto bytes : programs) {
        shares.push_back(all);
        shares.back().program_offset = all.programs_bytes;
        all.programs_bytes += align_up(bytes, target.line);
    }
    for (auto& sh : shares)
        sh.programs_bytes = all.programs_bytes;
    return shares;
}

void need_a_set(const Options& options, std::span<const Bucket> buckets) {
    if (buckets.empty()) throw Error("a bucket set needs at least one bucket");
    if (!options.slots)
        throw Error("a bucket set needs slots (lower::Options::slots): without them each bucket's stores are "
                    "laid out for its own sequences, and the buckets could not share them");
}

} // namespace

std::vector<Compiled> lower_set(const Graph& g, const WeightSource& weights, const Target& target,
                                const Options& options, std::span<const Bucket> buckets) {
    need_a_set(options, buckets);
    auto shares = shares_of(g, weights, target, options, buckets);
    std::vector<Compiled> set;
    for (std::size_t k = 0; k < buckets.size(); ++k) {
        Options o = options;
        o.bucket = buckets[k];
        if (k > 0) o.shapes_only = true; // the weights are the first bucket's, packed once
        set.push_back(Lowering(g, weights, target, o, true, &shares[k]).run());
        if (k > 0) { // the image is the first bucket's: one copy in the host's memory, not one a bucket
            set[k].image = {};
            set[k].program.image_digest = set[0].program.image_digest;
            set[k].options.shapes_only = options.shapes_only;
        }
    }
    return set;
}

SlotCapacity slot_capacity(const Graph& g, const WeightSource& weights, const Target& target,
                           const Options& options, std::span<const Bucket> buckets) {
    Options o = options;
    o.slots = 1;
    auto shares = shares_of(g, weights, target, o, buckets);
    o.bucket = buckets.front();
    o.shapes_only = true;
    auto cap = Lowering(g, weights, target, o, false, &shares.front()).run().capacity;
    SlotCapacity sc;
    const auto kept = detail::states_kept(g, o.stage); // a card of a plan keeps its own part's
    for (std::size_t k = 0; k < g.states.size(); ++k)
        if (kept[k])
            sc.per_slot += align_up(state_bytes(g.states[k], o.max_positions, target.storage.cache_row_bytes,
                                                target.storage.state_element_bytes),
                                    kernels::sequence_line);
    // Beside the weights, io and programs: the pad slot, and the stripe each of the two store
    // regions may round up to.
    const std::uint64_t fixed = cap.weights + cap.io + cap.program + sc.per_slot + 2 * target.stripe();
    sc.free = cap.ddr_bytes > fixed ? cap.ddr_bytes - fixed : 0;
    sc.slots = sc.per_slot ? sc.free / sc.per_slot : 0;
    return sc;
}

} // namespace cardsim::lower
