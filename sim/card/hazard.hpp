#pragma once
// The command processor's hazard check: two commands in flight at once that touch overlapping
// bytes, one of them writing, race (the hardware would compute garbage there); the simulator names
// the race instead of quietly serialising it.

#include "engine/program/program.hpp"
#include "sim/card/card_context.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace cardsim::sim {

/// The race between commands `a` and `b` of `ctx.program` when both are in flight: the first pair
/// of their operands in one memory space whose bytes overlap, one of the two written, as a sentence
/// naming both commands, the region and the bytes; nothing when they touch disjoint bytes or only
/// read what they share.
std::optional<std::string> race(const CardContext& ctx, std::uint32_t a, std::uint32_t b);

} // namespace cardsim::sim
