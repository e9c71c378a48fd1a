#pragma once
// Whether a card config can be built: its resources against the device, its kernel clock against
// the Fmax estimate, its peak power against the board's envelope, with the shim's habit of saying
// why in a sentence ("the card needs 6,912 DSP blocks; the Stratix 10 SX 2800 has 5,760").

#include "engine/card/card_config.hpp"
#include "engine/fit/clock.hpp"
#include "engine/fit/power.hpp"
#include "engine/fit/resources.hpp"

#include <string>
#include <vector>

namespace cardsim::fit {

/// The fit of one config.
struct FitReport {
    ResourceTable table;
    ClockEstimate clock;
    PowerEstimate peak; ///< at the config's kernel clock, everything busy
    double board_watts = 0;
    double kernel_mhz = 0;
    std::vector<std::string> problems; ///< one sentence per budget the config exceeds
    bool fits() const { return problems.empty(); }
};

/// The fit of `config` at its knob point and kernel clock.
FitReport check_fit(const card::CardConfig& config);

/// One line: `fit: yes (2,106 of 5,760 DSP blocks, ...; Fmax ~313 MHz for 300 MHz; peak 104 W of
/// 215 W)` or `fit: no: <the first problem>` (and how many more).
std::string verdict_line(const FitReport& r);

/// The resource table per unit kind and in total against the device, the Fmax and the power, and
/// the verdict with every problem, as `cardsim fit` prints it.
std::string describe(const FitReport& r, const std::string& device_name);

/// `n` with thousands separators (`6,912`).
std::string thousands(std::uint64_t n);

} // namespace cardsim::fit
