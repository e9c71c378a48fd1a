#pragma once
// One phase of a run (prefill or decode) as an architect reads it: tokens, time, tokens/s, and
// whether the DDR or a unit's compute bounds it.

#include "engine/card/card_config.hpp"
#include "sim/card/simulation.hpp"
#include "sim/system/system.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

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
    double link_seconds = 0;     ///< a system's busiest link's busy time (0: one card)

    double tokens_per_second() const { return seconds > 0 ? double(tokens) / seconds : 0.0; }
    /// What bounds the phase, the largest of the three: `bandwidth` (the DDR roofline; it wins a
    /// tie), `compute` (the busiest unit kind) or `link` (a system's busiest link).
    std::string_view bound() const {
        if (link_seconds > roofline_seconds && link_seconds > compute_seconds) return "link";
        return roofline_seconds >= compute_seconds ? "bandwidth" : "compute";
    }
    /// `bandwidth-bound (DDR roofline 12.3 ms, 95.1 % of it achieved; busiest unit matvec 4.5 ms)`,
    /// with `; busiest link 3.2 ms` for a system.
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

/// `run` as a phase over `tokens` tokens; `link_seconds`, a system's busiest link's busy time.
Phase phase_of(const sim::RunResult& run, const card::CardConfig& config, std::size_t tokens,
               double link_seconds = 0);

/// The busy time of `system`'s busiest link.
double busiest_link_seconds(const sim::system::SystemResult& system);

/// The phase `Phase::encode` wrote.
Phase parse_phase(const std::string& text);

} // namespace cardsim::cli
