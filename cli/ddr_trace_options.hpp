#pragma once
// The DDR trace export options `cardsim run` and `cardsim ddr replay` share: `--ddr-trace FILE`,
// its format, channel and request size.

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_stats.hpp"
#include "sim/memory/trace_export.hpp"

#include <boost/program_options.hpp>

#include <filesystem>
#include <optional>
#include <span>
#include <string>

namespace cardsim::cli {

/// A DDR trace to write: where, and what it holds.
struct DdrTraceRequest {
    std::filesystem::path path;
    sim::memory::ExportSpec spec;
};

/// `--ddr-trace FILE`, `--ddr-trace-format cardsim|dramsim3|dramsys` (default cardsim),
/// `--ddr-trace-channel N|all` (default all), `--ddr-trace-bytes B` (default one burst of the card, 64).
boost::program_options::options_description ddr_trace_options();

/// The trace the parsed options ask for, none without `--ddr-trace`. A bad format, channel or
/// size is a cardsim::Error naming the option and what was expected.
std::optional<DdrTraceRequest> ddr_trace_request(const boost::program_options::variables_map& vm,
                                                 const card::CardConfig& card);

/// The clocks and address range of a card's traces: DRAMSim3 cycles of its memory clock, DRAMSys
/// cycles of `player_mhz` (0: the memory clock), requests inside its DDR.
sim::memory::TraceContext trace_context(const card::CardConfig& card, std::uint32_t player_mhz = 0);

/// What an exported trace holds and what the memory did with its requests, in the words `cardsim
/// run` and `cardsim ddr replay` print: the file, format, request count and size, which addresses
/// and where each DRAM field sits in them, then the DDR time (memory cycles from 0 to the last
/// data beat, the write queues drained) and the row hits, misses and conflicts of the exported
/// channels (`channels`: the memory's per-channel statistics).
std::string ddr_trace_text(const sim::memory::TraceExporter& exporter, const card::DdrConfig& ddr,
                           std::span<const sim::memory::ChannelStats> channels);

} // namespace cardsim::cli
