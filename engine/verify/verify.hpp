#pragma once
// The bit-exact check of a run: every value the host read back after each step (the graph's
// outputs, and the probes, such as layer outputs, where they stand in the step) against the golden
// executor's, bit pattern for bit pattern. The first difference names the step, the value (and
// its layer), the element and both bit patterns, so a divergence is localised to the first layer
// whose output differs.

#include "engine/card/card_config.hpp"
#include "engine/golden/golden.hpp"
#include "engine/graph/batch.hpp"
#include "engine/graph/graph.hpp"
#include "engine/graph/weight_source.hpp"
#include "engine/program/loaded.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::verify {

/// The first read-back value that differs from the golden executor's.
struct Mismatch {
    std::size_t step = 0;
    std::string value;                ///< the value's name in the graph (`logits`, `hidden`)
    std::optional<std::size_t> layer; ///< a layer output's layer
    bool probe = false;               ///< observed inside the step (else a graph output)
    std::size_t element = 0;          ///< the first differing f32 element
    std::uint32_t card = 0, golden = 0;
    /// When the sizes differ instead: the card's and the golden f32 counts.
    std::optional<std::pair<std::size_t, std::size_t>> sizes;
    /// `step 0, layer 2 output (hidden), element 5: card 0x3f800000 (1), golden 0x3f800001 (1.0000001)`.
    std::string text() const;
};

/// What the check found over a run.
struct Verdict {
    std::size_t steps = 0;           ///< steps compared (up to and including a mismatching one)
    std::size_t values = 0;          ///< read-back values compared, over every step
    std::vector<std::size_t> layers; ///< the layers whose outputs each step compares, in order
    std::optional<Mismatch> first;   ///< the earliest difference: earliest step, then earliest in it
    bool bit_exact() const { return !first; }
};

/// One step's read-back bytes, in `IoMap::outputs` order.
using Readback = std::vector<std::vector<std::byte>>;

/// The golden executor `verify` runs for program `c` (or a set whose first program it is): its
/// bucket, cache length and slots, reading the matrices of `c`'s image it finds equal to its own
/// packing. `c` must outlive it. A caller may `prepare` it while the card runs and pass it on.
std::unique_ptr<golden::Golden> golden_for(const graph::Graph& g, const graph::WeightSource& weights,
                                           const card::CardConfig& config, const program::Loaded& c);

/// Runs the golden executor for the bucket and cache length of `c`'s host map over `inputs` (one per step)
/// and compares each step's `readback` with it: the probes in the order they stand in the step, then the
/// graph's outputs. Stops at the first step that differs. Throws cardsim::Error when an io value is not in
/// `g` (a program compiled from another graph).
Verdict verify(const graph::Graph& g, const graph::WeightSource& weights, const card::CardConfig& config,
               const program::Loaded& c, std::span<const graph::BatchInputs> inputs,
               std::span<const Readback> readback, std::unique_ptr<golden::Golden> prepared = nullptr);

/// The same over a session on a set of buckets (lower::lower_set, slot-addressed stores): step s
/// ran program `set[bucket_of_step[s]]`, and the golden executor keeps one set of slot stores
/// across the buckets. Throws cardsim::Error when a step names a bucket past the set, or when the
/// set's programs differ in slots, cache length or probes (not one lowering).
Verdict verify(const graph::Graph& g, const graph::WeightSource& weights, const card::CardConfig& config,
               std::span<const program::Loaded> set, std::span<const std::size_t> bucket_of_step,
               std::span<const graph::BatchInputs> inputs, std::span<const Readback> readback,
               std::unique_ptr<golden::Golden> prepared = nullptr);

} // namespace cardsim::verify
