#pragma once
// The Fmax a card config can expect: `[fit.clock]`'s model, falling with the device's utilisation
// and limited by the shallowest pipeline for its width.

#include "engine/card/card_config.hpp"
#include "engine/fit/resources.hpp"

#include <string>

namespace cardsim::fit {

/// The estimate and what limits it.
struct ClockEstimate {
    double fmax_mhz = 0;
    double utilisation = 0; ///< the largest of ALM, DSP and M20K use (0..1, may exceed 1)
    std::string limit;      ///< a sentence: what sets the estimate
};

/// The largest fraction of the device's ALMs, DSP blocks or M20K blocks that `t` uses.
double utilisation(const ResourceTable& t);

/// The Fmax estimate for `config` with resource table `t`: `base_mhz` up to the knee, then linear
/// to `full_mhz` at 100 % (and on past it), and no more than `base_mhz · stages / needed` for a
/// reduction unit whose ceil(log2(lanes)) adder levels need more pipeline stages
/// (`levels_per_stage` each) than its `latency` has.
ClockEstimate estimate_clock(const card::CardConfig& config, const ResourceTable& t);

} // namespace cardsim::fit
