#pragma once
// What `cardsim trace show` prints: a trace's commands, cycles and per-unit busy totals.

#include "traces/trace.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace cardsim::traces {

/// One unit's share of a run. `busy_cycles` counts the cycles in which at least one of the unit's
/// commands was in [start, end) (overlapping commands count once).
struct UnitBusy {
    std::string unit;
    std::uint64_t commands = 0;
    std::uint64_t busy_cycles = 0;
    std::uint64_t read = 0, written = 0;
};

/// One link of a system over a run: its messages, their bytes and the cycles its wire was busy.
struct LinkBusy {
    std::uint32_t from = 0, to = 0, ports = 1;
    std::uint64_t messages = 0, bytes = 0, busy_cycles = 0;
};

/// Totals of a trace. The run spans cycles [0, cycles), cycles being the latest end. In a system
/// trace a unit is named by its card (`card1.matvec`), the DDR channels are summed over the cards,
/// and each link has its totals.
struct Summary {
    std::uint64_t commands = 0;
    std::uint64_t first_index = 0, last_index = 0; ///< meaningful when commands > 0
    std::uint64_t cycles = 0;
    std::uint64_t read = 0, written = 0;
    std::uint64_t with_data = 0;   ///< commands that carry data lines
    std::vector<UnitBusy> units;   ///< in order of first appearance
    std::vector<ChannelBytes> ddr; ///< per channel totals, when the header has ddr_channels
    std::vector<UnitTime> time;    ///< per unit, the splits of its commands that carry one, summed
    std::uint32_t cards = 1;       ///< the system's cards (1: a trace of one card)
    std::vector<LinkBusy> links;   ///< a system's links, in the header's order
};

/// A record's unit as the summaries and exports name it: `unit`, or `cardK.unit` in a system trace.
std::string unit_label(const Record& record);

/// The totals of `trace`.
Summary summarise(const Trace& trace);

/// The summary as `cardsim trace show` prints it, with the header's facts; `name` names the file.
/// A meta value that reads on one line is shown as it is; a longer one (a card's TOML, a run's
/// JSON) by meta_brief, or, when `whole_meta`, whole and laid out by meta_whole under its key.
std::string to_text(const Summary& summary, const Header& header, std::string_view name,
                    bool whole_meta = false);

} // namespace cardsim::traces
