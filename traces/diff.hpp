#pragma once
// Compares two traces (traces/FORMAT.md section 7): data bit for bit, cycles within a tolerance.

#include "traces/trace.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::traces {

/// A header field that differs between the traces (program, config, knob, clock_mhz,
/// ddr_channels), with both sides spelt as in the file.
struct HeaderMismatch {
    std::string field;
    std::string a, b;
};

/// A paired command whose unit, opcode, bytes read or written, pc or a DDR channel's bytes differ.
struct ShapeMismatch {
    std::uint64_t index = 0;
    std::string field; ///< `unit`, `opcode`, `read`, `written`, `pc`, `ddr[C].read`, `ddr[C].written`
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

/// A paired command whose start, end or duration deviates over the tolerance.
struct CycleDeviation {
    std::uint64_t index = 0;
    std::string unit, opcode;
    std::uint64_t start_a = 0, end_a = 0, start_b = 0, end_b = 0;
    bool start = false, end = false, duration = false; ///< which values deviate
};

/// Everything `diff` found. The traces agree when `agree()`.
struct DiffReport {
    double cycles_tol_pct = 0;
    std::uint64_t commands_a = 0, commands_b = 0, paired = 0;
    std::vector<HeaderMismatch> header;
    std::vector<std::string> notes; ///< differences that do not count (mode, meta)
    std::vector<std::uint64_t> only_in_a, only_in_b;
    std::vector<ShapeMismatch> shapes;
    std::optional<DataDivergence> first_data;
    std::uint64_t data_divergent = 0; ///< paired commands whose digests differ
    std::optional<std::string>
        data_uncomparable;      ///< why data could not be compared (one side has no digests)
    bool data_compared = false; ///< both sides carry digests
    std::vector<CycleDeviation> cycles;

    /// True when nothing counted differs.
    bool agree() const;
    /// The one-line verdict: `traces agree: ...` or `traces differ: ...`.
    std::string verdict() const;
};

/// Compares B with the reference A; cycle values deviate when |B - A| * 100 > cycles_tol_pct * A.
/// Throws cardsim::Error when the tolerance is negative or not finite.
DiffReport diff(const Trace& a, const Trace& b, double cycles_tol_pct);

/// The report as printed by `cardsim trace diff`: the first data divergence, cycle deviations,
/// shape mismatches, missing and extra commands, header mismatches, notes, and the verdict last.
/// `name_a` and `name_b` name the two sides.
std::string to_text(const DiffReport& report, std::string_view name_a = "A", std::string_view name_b = "B");

/// Whether `b` deviates from the reference `a` by more than `pct` per cent of `a`.
bool deviates(std::uint64_t a, std::uint64_t b, double pct);

} // namespace cardsim::traces
