#pragma once
// What the modules of one card share while it runs a program.

#include "engine/card/card_config.hpp"
#include "engine/program/program.hpp"
#include "sim/card/bit_flip.hpp"
#include "sim/card/command_record.hpp"
#include "sim/card/kernel_clock.hpp"
#include "sim/card/network.hpp"
#include "sim/memory/channel_interleave.hpp"
#include "sim/units/unit_set.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cardsim::sim {

/// Where a program's region lives on the card.
struct RegionAt {
    program::Space space = program::Space::Ddr;
    std::uint64_t base = 0;
    std::uint64_t size = 0;
    bool present = false;
};

/// The state a card's command processor and units share during a run. Owned by the card; modules
/// hold a reference. Nothing here is global.
struct CardContext {
    const card::CardConfig& config;
    const program::Program* program; ///< the program the current step runs (one of the card's set)
    KernelClock clock;
    memory::ChannelInterleave interleave;
    bool timing_only = false;
    bool keep_data = false;      ///< records carry their written bytes
    std::optional<BitFlip> flip; ///< a deliberate error in one command's output
    bool keep_records = true;    ///< completed commands' records are kept in `records`, else folded
                                 ///< into `kind_totals`
    units::UnitSet units;        ///< each unit kind's work, traffic and compute
    std::array<RegionAt, program::region_count> regions{};
    std::uint32_t step = 0;
    std::vector<std::uint32_t> positions; ///< this step's io positions, one per token row
    std::vector<std::uint32_t> slots;     ///< this step's io slots, one per token row (none: no slots)
    /// This step's routing, per router (units::Step::routing): a timing-only run's from its inputs,
    /// a full run's recorded by each route command as it computes.
    std::vector<std::vector<std::uint32_t>> routing;
    std::vector<CommandRecord> records; ///< every command run so far, in completion order
    /// Without keep_records: per unit kind, one record summing its commands' compute cycles, bytes
    /// and time split (`index`: how many commands it folds; `end`: the latest).
    std::array<CommandRecord, card::unit_kind_count> kind_totals{};
    std::vector<bool> done;           ///< per command of the current step
    sc_core::sc_event command_done;   ///< notified whenever a command completes
    std::optional<std::string> fault; ///< the bus error that stopped the run, if any
    Network* network = nullptr;       ///< the system's ports (none: a card on its own)

    CardContext(const card::CardConfig& c, const program::Program& p, bool timing, units::UnitSet u)
        : config(c), program(&p), clock(c.clock.kernel_mhz),
          interleave(c.ddr.channels, c.ddr.interleave_bytes, c.ddr.channel_bytes()), timing_only(timing),
          units(std::move(u)) {}

    /// The region `r` of the program, or nothing.
    const RegionAt& region(program::Region r) const { return regions[static_cast<std::size_t>(r)]; }
    /// Stops the run with a bus error naming command `index`, the address and the region (the
    /// first fault stands): the step ends, and commands already in flight complete.
    void bus_error(std::uint32_t index, const std::string& what);
};

} // namespace cardsim::sim
