#pragma once
// Where a command's time went: waiting for its dependencies and its unit, then the causes of its
// own cycles (DDR stall categories, SRAM, compute, pipeline latency) (traces/FORMAT.md section 5).

#include "sim/card/command_time.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cardsim::traces {

/// The parts of a command's time and their split (sim/card/command_time.hpp, where the card
/// fills them); the trace's `split=` field spells them by `name(TimePart)`.
using sim::before_start;
using sim::time_part;
using sim::time_part_count;
using sim::time_parts;
using sim::TimePart;
using sim::TimeSplit;

/// One unit's commands' splits summed: how many commands carried one, and the sum.
struct UnitTime {
    std::string unit;
    std::uint64_t commands = 0;
    TimeSplit sum{};
};

/// Sums commands' splits per unit, units in order of first appearance.
class TimeByUnit {
public:
    /// Adds `commands` commands of `unit` whose splits sum to `split` (one command by default; a
    /// run that folds each kind's records into one adds its count).
    void add(std::string_view unit, const TimeSplit& split, std::uint64_t commands = 1);
    const std::vector<UnitTime>& units() const { return units_; }

private:
    std::vector<UnitTime> units_;
};

/// The summary lines of the sums, one per unit, as (label, text): `time in matvec`, `224
/// commands, 51234 cycles from ready to end: deps 10.2 %, ...` (every nonzero part, in file order,
/// the largest marked). Units come in order of their cycles from ready to end, the most first
/// (ties by name), so the lines are the same whatever order the commands were added in. The lines
/// `cardsim run` prints (`label: text`), `cardsim trace show` prints and the report page shows.
std::vector<std::pair<std::string, std::string>> time_lines(std::span<const UnitTime> units);

} // namespace cardsim::traces
