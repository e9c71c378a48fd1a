#include "engine/verify/verify.hpp"

#include "engine/error.hpp"
#include "engine/golden/golden.hpp"
#include "engine/graph/probe.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>

namespace cardsim::verify {

std::string Mismatch::text() const {
    std::string what =
        probe ? (layer ? fmt::format("layer {} output ({})", *layer, value) : fmt::format("probe {}", value))
              : fmt::format("output {}", value);
    if (sizes)
        return fmt::format("step {}, {}: {} values on the card, {} golden", step, what, sizes->first,
                           sizes->second);
    return fmt::format("step {}, {}, element {}: card {:#010x} ({}), golden {:#010x} ({})", step, what,
                       element, card, std::bit_cast<float>(card), golden, std::bit_cast<float>(golden));
}

Verdict verify(const graph::Graph& g, const graph::WeightSource& weights, const card::CardConfig& config,
               const program::Loaded& c, std::span<const graph::BatchInputs> inputs,
               std::span<const Readback> readback, std::unique_ptr<golden::Golden> prepared) {
    const std::vector<std::size_t> buckets(std::min(inputs.size(), readback.size()), 0);
    return verify(g, weights, config, std::span<const program::Loaded>(&c, 1), buckets, inputs, readback,
                  std::move(prepared));
}

std::unique_ptr<golden::Golden> golden_for(const graph::Graph& g, const graph::WeightSource& weights,
                                           const card::CardConfig& config, const program::Loaded& c) {
    const auto& h = c.program.host;
    const auto slots = c.io.slot_count ? std::optional<std::size_t>(c.io.slot_count) : std::nullopt;
    // The image the card ran: the golden executor reads the matrices of it that equal its own packing.
    return std::make_unique<golden::Golden>(g, weights, config, graph::Bucket{h.tokens, h.seqs, h.markers},
                                            h.max_positions, slots, &c.image);
}

Verdict verify(const graph::Graph& g, const graph::WeightSource& weights, const card::CardConfig& config,
               std::span<const program::Loaded> set, std::span<const std::size_t> bucket_of_step,
               std::span<const graph::BatchInputs> inputs, std::span<const Readback> readback,
               std::unique_ptr<golden::Golden> prepared) {
    if (set.empty()) throw Error("verify: no program to check the run against");
    const auto& c = set.front();
    const auto& io = c.io;
    for (std::size_t k = 1; k < set.size(); ++k) {
        const auto& o = set[k];
        if (o.io.slot_count != io.slot_count ||
            o.program.host.max_positions != c.program.host.max_positions ||
            o.io.outputs.size() != io.outputs.size() || o.io.probes.size() != io.probes.size())
            throw Error(fmt::format("verify: bucket {} is not of the same lowering as bucket 0 (its slots, "
                                    "cache length or read-back values differ)",
                                    k));
        for (std::size_t i = 0; i < io.outputs.size(); ++i)
            if (o.io.outputs[i].first != io.outputs[i].first)
                throw Error(fmt::format("verify: bucket {} reads back other values than bucket 0", k));
    }
    const std::size_t n = io.outputs.size(), first_probe = io.graph_outputs();
    for (std::size_t k = 0; k < n; ++k)
        if (io.outputs[k].first.id >= g.vals.size())
            throw Error(fmt::format("the program reads back value {}, the model's graph has {} values",
                                    io.outputs[k].first.id, g.vals.size()));
    for (auto& p : io.probes)
        if (auto problem = graph::check(g, p))
            throw Error("the program's probes do not fit the model's graph: " + *problem);
    // The order values stand in a step: the probes by their op, then the graph's outputs.
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin() + std::ptrdiff_t(first_probe), order.end(),
                     [&](std::size_t a, std::size_t b) {
                         return io.probes[a - first_probe].after < io.probes[b - first_probe].after;
                     });
    std::rotate(order.begin(), order.begin() + std::ptrdiff_t(first_probe), order.end());
    Verdict v;
    for (auto& p : io.probes)
        if (p.layer) v.layers.push_back(*p.layer);
    const auto owned = prepared ? std::move(prepared) : golden_for(g, weights, config, c);
    golden::Golden& gold = *owned;
    std::vector<std::vector<float>> seen(io.probes.size());
    const std::size_t steps = std::min({inputs.size(), readback.size(), bucket_of_step.size()});
    for (std::size_t s = 0; s < steps && !v.first; ++s) {
        const std::size_t b = bucket_of_step[s];
        if (b >= set.size())
            throw Error(fmt::format("verify: step {} ran bucket {} of a set of {}", s, b, set.size()));
        const auto& hb = set[b].program.host;
        gold.use(graph::Bucket{hb.tokens, hb.seqs, hb.markers});
        gold.step(inputs[s], [&](std::size_t op) {
            for (std::size_t k = 0; k < io.probes.size(); ++k)
                if (io.probes[k].after == op) seen[k] = gold.value(io.probes[k].value);
        });
        ++v.steps;
        for (auto k : order) {
            if (k >= readback[s].size()) break;
            bool probe = k >= first_probe;
            auto val = io.outputs[k].first;
            const auto& want = probe ? seen[k - first_probe] : gold.value(val);
            const auto& got = readback[s][k];
            ++v.values;
            Mismatch m;
            m.step = s;
            m.value = g.names[val.id];
            m.probe = probe;
            if (probe) m.layer = io.probes[k - first_probe].layer;
            if (got.size() != 4 * want.size()) {
                m.sizes = std::pair{got.size() / 4, want.size()};
                v.first = m;
                break;
            }
            for (std::size_t i = 0; i < want.size(); ++i) {
                std::uint32_t a, b;
                std::memcpy(&a, got.data() + 4 * i, 4);
                std::memcpy(&b, &want[i], 4);
                if (a != b) {
                    m.element = i;
                    m.card = a;
                    m.golden = b;
                    v.first = m;
                    break;
                }
            }
            if (v.first) break;
        }
    }
    return v;
}

} // namespace cardsim::verify
