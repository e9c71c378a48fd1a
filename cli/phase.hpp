#pragma once
// One phase of a run (prefill or decode) as an architect reads it: tokens, time, tokens/s, and
// whether the DDR or a unit's compute bounds it.

#include "engine/card/card_config.hpp"
#include "sim/card/simulation.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace cardsim::cli {

/// The figures of a run that is one phase, and what bounds them.
struct Phase {
    std::size_t tokens = 0;      ///< tokens the phase processed (a prefill's prompt, decode's generated)
    std::size_t steps = 0;       ///< card steps it took
    std::uint64_t cycles = 0;    ///< kernel cycles from the start of its first step to the end of its last
    double seconds = 0;          ///< the same in simulated time
    std::uint64_t ddr_bytes = 0; ///< DDR bytes its commands moved
    double roofline_seconds = 0; ///< those bytes at the DDR's peak
    double compute_seconds = 0;  ///< the busiest unit kind's compute, spread over its instances
    std::string busiest;         ///< that unit kind
    double host_seconds = 0;     ///< the host's wall-clock time simulating it (not simulated time)

    double tokens_per_second() const { return seconds > 0 ? double(tokens) / seconds : 0.0; }
    /// The DDR roofline is the larger bound (the card waits on memory rather than on a unit).
    bool bandwidth_bound() const { return roofline_seconds >= compute_seconds; }
    /// `bandwidth-bound (DDR roofline 12.3 ms, 95.1 % of it achieved; busiest unit matvec 4.5 ms)`.
    std::string bound_text() const;
    /// `key=value` lines; `parse_phase` reads them back (a phase simulated in a child process).
    std::string encode() const;
};

/// The bytes a run's channels (a system's: every card's) read and wrote.
struct DdrTraffic {
    std::uint64_t read = 0, write = 0;
    std::uint64_t total() const { return read + write; }
};
DdrTraffic ddr_traffic(const sim::RunResult& run);

/// `run` as a phase over `tokens` tokens.
Phase phase_of(const sim::RunResult& run, const card::CardConfig& config, std::size_t tokens);

/// The phase `Phase::encode` wrote.
Phase parse_phase(const std::string& text);

} // namespace cardsim::cli
