#pragma once
// Compares two traces (traces/FORMAT.md section 7): a summary first (total cycles, phases, units,
// data, header and config keys), then each command's own cycles (its duration and its named waits)
// within a tolerance, not the starts that move because earlier commands moved.

#include "traces/config_keys.hpp"
#include "traces/sites.hpp"
#include "traces/trace.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::traces {

/// One named part of a command's time that a trace may carry per command, in cycles: a wait (for
/// its dependencies, for its unit) or a DDR stall category.
struct WaitPart {
    std::string name;
    std::uint64_t cycles = 0;
    /// Part of the command's own cycles (its duration). The waits before its start (for its
    /// dependencies, its unit, the issue) are not: they move when earlier commands move, as its
    /// start does, so they are compared and shown but never report a command.
    bool own = true;
};

/// How the diff reads a record's named waits.
using WaitFields = std::vector<WaitPart> (*)(const Record&);

/// The named waits a record carries: every part of its `split=` field (format version 2), zeros
/// included, by its name (`deps`, `unit`, `issue`, `ddr.queueing`, ... `latency`), the first
/// three not `own`; none for a record without one (every version 1 record).
std::vector<WaitPart> record_waits(const Record& record);

/// What to compare and how much to list.
struct DiffOptions {
    /// Per cent by which each command's duration and named waits, and the total cycles, may move.
    double cycles_tol_pct = 0;
    /// When set, each command's start and end are compared too, within this per cent (the
    /// comparison of every position, cascaded shifts included).
    std::optional<double> start_tol_pct{};
    /// How many commands (and shape mismatches, and position deviations) the reports list; the
    /// counts always cover all of them. `all` lists every one.
    std::size_t top = 10;
    bool all = false;
    /// The layer and copy of each command, from the program one of the traces ran; when given its
    /// digest must be A's or B's program.
    std::optional<ProgramSites> sites{};
    WaitFields waits = record_waits;
};

/// A header field that differs between the traces (program, config, knob, clock_mhz,
/// ddr_channels), with both sides spelt as in the file.
struct HeaderMismatch {
    std::string field;
    std::string a, b;
};

/// A paired command whose unit, opcode, bytes read or written, pc or DDR bytes differ.
struct ShapeMismatch {
    std::uint64_t index = 0;
    std::string field; ///< `unit`, `opcode`, `read`, `written`, `pc`, `ddr[C].read`, `ddr[C].written`
                       ///< (or `ddr.read`, `ddr.written`: all channels, when the channel counts differ)
    std::string a, b;
};

/// The first differing element of a command whose both sides carry data: the block (operand),
/// the element index within it, and both sides' bit patterns. An element absent on one side (its
/// block is shorter or missing) has no bits there.
struct ElementDifference {
    std::uint64_t operand = 0;
    std::uint64_t element = 0;
    Encoding encoding = Encoding::Hex; ///< the encoding the element is read in (hex: a byte)
    std::optional<std::uint32_t> bits_a, bits_b;
};

/// The first paired command (lowest index) whose digests differ.
struct DataDivergence {
    std::uint64_t index = 0;
    std::string unit, opcode;
    std::uint64_t digest_a = 0, digest_b = 0;
    std::optional<ElementDifference> element; ///< when both sides carry the bytes
};

/// The run's cycles: each side's latest end.
struct TotalCycles {
    std::uint64_t a = 0, b = 0;
    bool over = false; ///< B moved from A by more than the tolerance
};

/// A phase of the run: the prefill (the steps that ran the prompt, when the trace says how many),
/// each decode step, or each step. Its cycles run from the previous phase's last end (0 for the
/// first) to its own last end, so the phases' cycles add up to the total.
struct PhaseCycles {
    std::string name;                            ///< `prefill`, `decode N`, `step N`, `run`
    std::uint64_t first_step = 0, last_step = 0; ///< the steps it covers, counted from 0
    std::uint64_t cycles_a = 0, cycles_b = 0;
    std::uint64_t commands_a = 0, commands_b = 0;
};

/// A named wait summed over commands (a unit's), or one command's, on both sides; a side that
/// does not carry it has nothing.
struct WaitChange {
    std::string name;
    std::optional<std::uint64_t> a, b;
    bool over = false; ///< one command's own part, on both sides, moved by more than the tolerance
    bool own = true;   ///< part of the command's duration (WaitPart::own)
};

/// One unit's totals on both sides (trace show's busy cycles: overlapping commands count once).
struct UnitChange {
    std::string unit;
    std::uint64_t commands_a = 0, commands_b = 0;
    std::uint64_t busy_a = 0, busy_b = 0;
    std::uint64_t read_a = 0, read_b = 0, written_a = 0, written_b = 0;
    std::vector<WaitChange> waits; ///< sums of each named wait, by name
};

/// A paired command whose own cycles moved: its duration, and its named waits where both sides
/// carry them. Its start is not looked at (that moves with every earlier command).
struct DurationChange {
    std::uint64_t index = 0;
    std::optional<std::uint64_t> pc;
    std::string unit, opcode;
    std::string phase;          ///< the name of its phase
    CommandSite site{};         ///< from the program, when one is given
    std::uint64_t a = 0, b = 0; ///< durations
    bool over = false;          ///< the duration moved by more than the tolerance
    std::vector<WaitChange> waits;
    /// The largest move of its duration and waits, in cycles (the order of the listing).
    std::uint64_t magnitude() const;
};

/// A paired command whose start or end moved by more than the start tolerance.
struct PositionChange {
    std::uint64_t index = 0;
    std::string unit, opcode;
    std::uint64_t start_a = 0, end_a = 0, start_b = 0, end_b = 0;
    bool start = false, end = false; ///< which values deviate
};

/// Everything `diff` found. The traces agree when `agree()`.
struct DiffReport {
    DiffOptions options;
    std::uint64_t commands_a = 0, commands_b = 0, paired = 0;
    TotalCycles total;
    double clock_mhz_a = 0, clock_mhz_b = 0;
    std::vector<PhaseCycles> phases;
    std::vector<UnitChange> units; ///< largest change in busy cycles first
    std::vector<HeaderMismatch> header;
    std::vector<ConfigKeyDifference> config; ///< the config keys that differ, when both record them
    std::vector<std::string> notes;          ///< differences that do not count (mode, meta, config records)
    std::vector<std::uint64_t> only_in_a, only_in_b;
    std::vector<ShapeMismatch> shapes;
    std::optional<DataDivergence> first_data;
    std::uint64_t data_divergent = 0; ///< paired commands whose digests differ
    std::optional<std::string>
        data_uncomparable;      ///< why data could not be compared (one side has no digests)
    bool data_compared = false; ///< both sides carry digests
    /// The paired commands whose duration or a wait moved by more than the tolerance, the largest
    /// move first (ties: lower index first).
    std::vector<DurationChange> durations;
    std::uint64_t durations_changed = 0;   ///< paired commands whose duration or a wait moved at all
    std::vector<PositionChange> positions; ///< with a start tolerance: in index order

    /// True when nothing counted differs.
    bool agree() const;
    /// The one-line verdict: `traces agree: ...` or `traces differ: ...`.
    std::string verdict() const;
    /// How many of `n` listed items the options let a report show.
    std::size_t listed(std::size_t n) const { return options.all ? n : std::min(n, options.top); }
};

/// Compares B with the reference A. A value deviates when |B - A| * 100 > tolerance * A. Throws
/// cardsim::Error when a tolerance is negative or not finite, the sites are of a program that
/// neither trace ran, or either trace is of a system of cards (diff_system compares those).
DiffReport diff(const Trace& a, const Trace& b, const DiffOptions& options);

/// The strict comparison: durations, waits and the total within `cycles_tol_pct`, and every start
/// and end within it too (what the regression traces and `trace bless` use).
DiffReport diff(const Trace& a, const Trace& b, double cycles_tol_pct);

/// The report as `cardsim trace diff` prints it: the verdict, the sides and tolerances, the total,
/// the units (largest change first), the phases, the data verdict, the header and config keys,
/// then the commands over the tolerance (the largest changes first, as many as the options list),
/// positions, shapes, missing and extra commands and notes. `name_a` and `name_b` name the sides.
std::string to_text(const DiffReport& report, std::string_view name_a = "A", std::string_view name_b = "B");

/// The data verdict as the text report prints it: bit-exact, not compared (and why), or the first
/// divergent command with its operand, element and both bit patterns (and the float values).
std::string data_text(const DiffReport& report);

/// Whether `b` deviates from the reference `a` by more than `pct` per cent of `a`.
bool deviates(std::uint64_t a, std::uint64_t b, double pct);

/// `b` against `a` as a signed per cent with two decimals (`+10.00%`), or `from 0` when `a` is 0.
std::string change(std::uint64_t a, std::uint64_t b);

} // namespace cardsim::traces
