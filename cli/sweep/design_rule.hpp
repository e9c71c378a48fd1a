#pragma once
// The card's design rule (docs/design.md, "The rule"): a design sweep run twice over one grid, once
// as a prefill-and-decode run (`prompt_len`, configs/sweeps/design.toml) and once as a served trace
// (`[serve]`, configs/sweeps/design_serve.toml), joined point by point on the axis values and
// ranked. Among the points that fit the chip at a kernel clock that takes a DDR channel's peak (one
// burst a cycle through the unit's port: 300 MHz for DDR4-2400), the rule keeps those within
// `decode_tolerance` of the best decode tokens/s, takes the best serving tokens/s (within `tie_tolerance`
// counts as tied), then the shortest time to first token (likewise), then the fewest DSP blocks, then ALMs.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cardsim::cli::sweep {

/// One point of a design sweep, scored on the three workloads.
struct DesignPoint {
    std::size_t point = 0;                                 ///< its id in the run sweep
    std::vector<std::pair<std::string, std::string>> axes; ///< config axes: dotted path, value
    bool fits = false;              ///< DSP, ALM, M20K, Fmax at its clock and power (`cardsim fit`)
    double decode_tps = 0;          ///< decode tokens/s after the prompt (run sweep)
    double ttft_s = 0;              ///< time to first token of the prompt (run sweep)
    double prefill_tps = 0;         ///< prefill tokens/s (run sweep)
    double serve_tps = 0;           ///< served output tokens/s (serve sweep)
    double tpot_p99_ms = 0;         ///< p99 time per output token while serving
    std::uint64_t dsp = 0, alm = 0; ///< the chip's cost
    double fmax_mhz = 0, watts = 0; ///< Fmax estimate, peak watts
    double kernel_mhz = 0;          ///< the `clock.kernel_mhz` axis value (0: not an axis)
};

/// The rule's two tolerances, as fractions (0.02 = 2 %).
struct DesignRule {
    double decode_tolerance = 0.02; ///< how far below the best decode tokens/s a point may be
    double tie_tolerance = 0.02;    ///< serving tokens/s and TTFT this close to the best count as tied
    /// The least kernel clock, MHz, at which a channel's user port (ddr.port_bits, 512: 64 B a
    /// cycle) carries the channel's DRAM peak (19.2 GB/s / 64 B = 300 MHz). Below it the port bounds
    /// every channel (the timing model charges it), so the card cannot use the DDR it was given.
    /// 0 = no such clause.
    double port_mhz = 0;
};

/// Why a point is out, or that it was chosen, for the table: `chosen`, `does not fit`, `clock under
/// 300 MHz`, `decode
/// -3.1 %`, `serving -12.0 %`, `TTFT +4.2 %`, `more DSP blocks` (tied but dearer).
struct DesignVerdict {
    std::optional<std::size_t> chosen; ///< index into the points (none when no point fits)
    std::vector<std::string> why;      ///< one per point, in the points' order
};

/// Joins the results.csv of a design sweep's run (`run`: a directory or the file) and of its serve
/// twin (`serve`) on their axis values. Both must have the same axis columns; the run's rows need
/// the prefill columns (`prompt_len`) and the serve rows the serving columns (`[serve]`). Only
/// points ok in both are returned, in the run's point order. A mismatch is a cardsim::Error naming
/// the file and what was expected.
std::vector<DesignPoint> join_design_sweeps(const std::filesystem::path& run,
                                            const std::filesystem::path& serve);

/// Applies the rule to `points`.
DesignVerdict choose_design(const std::vector<DesignPoint>& points, const DesignRule& rule = {});

/// The points and the verdict as a Markdown table (point, axes, fits, DSP, ALM, Fmax, watts, decode
/// tokens/s, TTFT, prefill tokens/s, serving tokens/s, p99 TPOT, the rule's word), then the chosen
/// point as `--set` options.
std::string design_table(const std::vector<DesignPoint>& points, const DesignVerdict& verdict,
                         const DesignRule& rule);

} // namespace cardsim::cli::sweep
