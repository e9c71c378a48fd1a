#pragma once
// The power a card config draws: `[fit.power]`'s model, static plus dynamic power of the busy
// resources at the kernel clock plus the DDR's background and per-byte energy.

#include "engine/card/card_config.hpp"
#include "engine/fit/resources.hpp"

#include <array>

namespace cardsim::fit {

/// How busy the card is: per unit kind the fraction of its instances' time it computes, the
/// arena's fraction, and the DDR traffic.
struct Activity {
    std::array<double, card::unit_kind_count> busy{}; ///< 0..1 per kind
    double arena = 0;                                 ///< 0..1
    double ddr_read_bytes_per_second = 0, ddr_write_bytes_per_second = 0;
};

/// The worst case: every unit and the arena busy all the time, every channel reading at its peak
/// (the DRAM's, or its user port's when that is slower).
Activity peak_activity(const card::CardConfig& config);

/// Watts by part.
struct PowerEstimate {
    double static_watts = 0, shell_watts = 0;            ///< always drawn
    double dsp_watts = 0, alm_watts = 0, m20k_watts = 0; ///< dynamic, of the units and the arena
    double ddr_watts = 0;                                ///< background and traffic
    double total() const {
        return static_watts + shell_watts + dsp_watts + alm_watts + m20k_watts + ddr_watts;
    }
};

/// The power of `config` at `clock_mhz` with `activity`: each unit kind's resources times its busy
/// fraction times the per-MHz coefficients, the arena's M20K blocks times its fraction, DDR
/// background per channel plus energy per byte.
PowerEstimate estimate_power(const card::CardConfig& config, double clock_mhz, const Activity& activity);

} // namespace cardsim::fit
