#pragma once
// A trace as a value: the header and the per-command records of one run (traces/FORMAT.md).

#include "engine/numerics/knob.hpp"
#include "traces/time_split.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::traces {

/// The format version this library writes (FORMAT.md section 8); it reads this one and every
/// earlier one (`oldest_format_version` on).
inline constexpr int format_version = 2;

/// The oldest format version this library reads: version 1, which has no `split=` field.
inline constexpr int oldest_format_version = 1;

/// The meta key saying how many steps, from the first, ran the prompt (FORMAT.md section 5): the
/// diff names them the prefill and the later steps decode steps.
inline constexpr std::string_view prefill_steps_meta = "prefill_steps";

/// The meta key saying where the trace's cycles come from (FORMAT.md section 5): `simulated`, `rtl`
/// or `hardware`; absent: simulated.
inline constexpr std::string_view source_meta = "source";
/// The meta key listing the commands a measuring source counted (FORMAT.md section 5): one
/// `INDEX:WORK:CYCLES` per command, separated by spaces.
inline constexpr std::string_view measured_meta = "measured";
/// The most DDR channels a trace may report.
inline constexpr std::uint32_t max_ddr_channels = 64;

/// Who produced a trace and what it holds: a simulation with real data, a timing-only simulation
/// (no digests), or a capture from the real card.
enum class Mode { Full, TimingOnly, Hardware };

/// Where a trace's cycles come from: the C++ models of a simulation, an RTL co-simulation (its
/// measured commands carry `measured=`), or counters of the real card.
enum class Source { Simulated, Rtl, Hardware };
/// The file spelling of a source (`simulated`, `rtl`, `hardware`).
std::string_view name(Source s);
/// How a data block spells its bytes, and what one element of it is (1, 2 or 4 bytes).
enum class Encoding { Hex, F16, F32 };

/// The file spelling of a mode (`full`, `timing-only`, `hardware`).
std::string_view name(Mode m);

/// The file spelling of an encoding (`hex`, `f16`, `f32`).
std::string_view name(Encoding e);

/// The bytes of one element in an encoding: 1 for hex, 2 for f16, 4 for f32.
std::size_t element_size(Encoding e);

/// The header of a trace: what was run, on which card config, at which knob point and clock.
struct Header {
    std::uint64_t program = 0; ///< xxh64 of the program file
    std::uint64_t config = 0;  ///< digest of the card config, from the program header
    numerics::EngineNumerics knob{};
    Mode mode = Mode::Full;
    double clock_mhz = 300.0;                    ///< kernel clock the cycles count; > 0
    std::optional<std::uint32_t> ddr_channels{}; ///< entries of every `ddr` field; 1..64
    std::map<std::string, std::string> meta{};   ///< producer facts; keys are names, values any bytes
    friend bool operator==(const Header&, const Header&) = default;
};

/// The source a header's `source` meta names (absent: Simulated); nothing for an unknown value.
std::optional<Source> source_of(const Header& h);

/// One command's measured cycles: its index, the unit's work for it (in the measure of the unit's
/// width, configs/d5005.toml) and the cycles the measuring source counted.
struct Measured {
    std::uint64_t index = 0, work = 0, cycles = 0;
    friend bool operator==(const Measured&, const Measured&) = default;
};

/// The commands the header's `measured` meta lists (empty when absent). Throws cardsim::Error naming
/// the first malformed entry.
std::vector<Measured> measured_of(const Header& h);
/// Records `m` as the header's `measured` meta (and nothing when empty).
void record_measured(Header& h, std::span<const Measured> m);

/// The bytes one command moved through one DDR channel.
struct ChannelBytes {
    std::uint64_t read = 0;
    std::uint64_t written = 0;
    friend bool operator==(const ChannelBytes&, const ChannelBytes&) = default;
};

/// The bytes one write operand of a command held after it completed, and how the file spells
/// them. A block's size is a whole number of elements of its encoding.
struct DataBlock {
    std::uint64_t operand = 0; ///< position among the command's write operands
    Encoding encoding = Encoding::Hex;
    std::vector<std::uint8_t> bytes{};
    friend bool operator==(const DataBlock&, const DataBlock&) = default;
};

/// One executed command. Rules (checked by `check_record`): end >= start; `digest` present
/// unless the mode is timing-only; `ddr`, when not empty, has `ddr_channels` entries; `data`,
/// when not empty, is in strictly increasing operand order, every block non-empty, and the
/// blocks' bytes concatenated are `written` bytes whose xxh64 is `digest`; `split`, when present,
/// has its waits (deps, unit, issue, link) at most `start` and its other parts summing to end - start.
struct Record {
    std::uint64_t index = 0;               ///< position in the run's issue order
    std::string unit{};                    ///< a name: [A-Za-z0-9_.-]+
    std::string opcode{};                  ///< a name: [A-Za-z0-9_.-]+
    std::uint64_t start = 0;               ///< first busy cycle
    std::uint64_t end = 0;                 ///< first cycle after the command finished
    std::uint64_t read = 0;                ///< bytes of the read operands
    std::uint64_t written = 0;             ///< bytes of the write operands (what the digest covers)
    std::optional<std::uint64_t> digest{}; ///< xxh64 of the written bytes; absent in timing-only
    std::optional<std::uint64_t> pc{};     ///< position in the program's command list, if recorded
    std::vector<ChannelBytes> ddr{};       ///< per DDR channel traffic, empty when not recorded
    std::vector<DataBlock> data{};         ///< the written bytes, empty when not carried
    std::optional<TimeSplit> split{};      ///< where its time went (version 2), if recorded

    /// The cycle the command processor reached it: start - its waits (start without a split).
    std::uint64_t ready() const { return start - (split ? split->waited() : 0); }
    /// end − start.
    std::uint64_t duration() const { return end - start; }
    friend bool operator==(const Record&, const Record&) = default;
};

/// A whole trace: the header and the records in strictly increasing index order.
struct Trace {
    Header header{};
    std::vector<Record> records{};
    friend bool operator==(const Trace&, const Trace&) = default;
};

/// One write operand as a producer hands it over: its bytes after the command and the encoding
/// its data lines should use.
struct WrittenOperand {
    std::span<const std::uint8_t> bytes{};
    Encoding encoding = Encoding::Hex;
};

/// Fills `record.written` and `record.digest` from the command's write operands (in program
/// order), and, when `carry_data`, its data blocks (one per non-empty operand). This is how a
/// producer builds a record that keeps the rules of `Record`.
void set_written(Record& record, std::span<const WrittenOperand> operands, bool carry_data);

/// True when `s` is a non-empty run of [A-Za-z0-9_.-] (unit, opcode and meta key names).
bool is_name(std::string_view s);

/// The first rule of FORMAT.md the header breaks, as a sentence, or nothing.
std::optional<std::string> check_header(const Header& header);

/// The first rule of FORMAT.md the record breaks under `header` (after a record of index
/// `previous`, if any), as a sentence, or nothing.
std::optional<std::string> check_record(const Header& header, const Record& record,
                                        std::optional<std::uint64_t> previous);

} // namespace cardsim::traces
