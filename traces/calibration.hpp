#pragma once
// Calibrating the card's unit timing from measured cycles: for each unit kind with measured
// commands in a trace (an RTL co-simulation's, a hardware capture's), the latency and width that
// make the model's per-command cycles, latency + ceil(work / width), fit the measured ones, and how
// far the config's and the fitted values are from them.

#include "engine/card/card_config.hpp"
#include "traces/trace.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cardsim::traces {

/// How far a model's per-command cycles are from the measured ones over a unit kind's commands:
/// the mean and the largest |model - measured| / measured.
struct Residual {
    double mean = 0, max = 0;
};

/// One unit kind's fit: its measured commands, the config's latency and width with their residual,
/// and the fitted ones with theirs.
struct KindFit {
    card::UnitKind kind{};
    std::size_t commands = 0;
    bool spread = false; ///< the commands' work differs, so latency and width are told apart
    std::uint32_t config_latency = 0, config_width = 0;
    Residual before;
    std::uint32_t latency = 0, width = 0;
    Residual after;
};

/// The model's cycles for a command of `work` on a unit of `latency` and `width`.
std::uint64_t model_cycles(std::uint64_t work, std::uint32_t latency, std::uint32_t width);

/// Fits every unit kind with commands in `t`'s `measured` meta (FORMAT.md section 5), starting
/// from `config`: least squares of measured = latency + work / width, then the integer width nearest
/// 1 / slope and the latency that centres the residuals. When every command of a kind has the same
/// work, the config's latency is kept and only the width fitted. Throws cardsim::Error when the trace
/// has no measured command, names an unknown unit, or the fit gives no positive width.
std::vector<KindFit> calibrate(const Trace& t, const card::CardConfig& config);

} // namespace cardsim::traces
