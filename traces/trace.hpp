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

/// The newest format version this library reads and writes (FORMAT.md section 8): version 3, a
/// system trace (its `card`, `link` and `message` lines); it reads every earlier one
/// (`oldest_format_version` on). A trace of one card is written as version 2 (`version_of`), so its
/// bytes are those of every cardsim before systems.
inline constexpr int format_version = 3;

/// The version a trace of one card is written as: 2 (`split=`, no cards).
inline constexpr int one_card_format_version = 2;

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
/// The most cards a system trace may hold.
inline constexpr std::uint32_t max_cards = 1024;

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

/// One direction of a link of a system (FORMAT.md section 5, `link` lines): from card `from` to
/// card `to` (two different cards of the system) over `ports` parallel port links (1 or more).
struct LinkSpec {
    std::uint32_t from = 0, to = 0, ports = 1;
    friend bool operator==(const LinkSpec&, const LinkSpec&) = default;
};

/// One message over a link of a system (FORMAT.md, `message` lines): the kernel cycles its link's
/// wire was sending it, [start, end) with end > start, and its payload bytes. A link's messages
/// leave in order: each starts at or after the end of the one before it on the same link.
struct Message {
    std::uint32_t from = 0, to = 0;
    std::uint64_t start = 0, end = 0, bytes = 0;
    std::uint64_t duration() const { return end - start; }
    friend bool operator==(const Message&, const Message&) = default;
};

/// The header of a trace: what was run, on which card config, at which knob point and clock.
/// A system trace (several cards, format version 3) also lists each card's program digest (its
/// `card` lines; `program` is then the system's digest, `system_digest`) and the system's links.
struct Header {
    std::uint64_t program = 0; ///< xxh64 of the program file
    std::uint64_t config = 0;  ///< digest of the card config, from the program header
    numerics::EngineNumerics knob{};
    Mode mode = Mode::Full;
    double clock_mhz = 300.0;                    ///< kernel clock the cycles count; > 0
    std::optional<std::uint32_t> ddr_channels{}; ///< entries of every `ddr` field; 1..64
    std::map<std::string, std::string> meta{};   ///< producer facts; keys are names, values any bytes
    std::vector<std::uint64_t> cards{}; ///< a system's cards' program digests, card 0 first; empty: one card
    std::vector<LinkSpec> links{};      ///< a system's links (none without cards)
    friend bool operator==(const Header&, const Header&) = default;
};

/// The cards a trace's run had: 1, or its `card` lines (2 to max_cards).
std::uint32_t card_count(const Header& h);

/// The format version `h` is written as: format_version (3) for a system, else 2.
int version_of(const Header& h);

/// The program digest of a system of cards: xxh64 (seed 0) of the cards' program digests, each as
/// 8 little-endian bytes, card 0 first (FORMAT.md section 5).
std::uint64_t system_digest(std::span<const std::uint64_t> card_programs);

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
    std::optional<std::uint32_t> card{};   ///< which card ran it: present in a system trace only (version 3)

    /// The cycle the command processor reached it: start - its waits (start without a split).
    std::uint64_t ready() const { return start - (split ? split->waited() : 0); }
    /// end − start.
    std::uint64_t duration() const { return end - start; }
    friend bool operator==(const Record&, const Record&) = default;
};

/// A whole trace: the header and the records in strictly increasing index order (a system's: in
/// strictly increasing (card, index) order), and a system's link messages (none for one card), in
/// the order of the header's links and by start within a link.
struct Trace {
    Header header{};
    std::vector<Record> records{};
    std::vector<Message> messages{};
    friend bool operator==(const Trace&, const Trace&) = default;
};

/// Card `k`'s part of a system trace as a trace of one card: the header with card `k`'s program
/// digest and no cards or links, card `k`'s records without their card, no messages (the
/// per-card view `trace diff` and the exports use). Throws cardsim::Error for a card the trace lacks.
Trace card_trace(const Trace& system, std::uint32_t k);

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
/// `previous`, if any, on card `previous_card` of a system), as a sentence, or nothing. In a system
/// trace every record names a card of the system, in non-decreasing card order, and its index is
/// compared with `previous` only on the same card; in a trace of one card no record names a card.
std::optional<std::string> check_record(const Header& header, const Record& record,
                                        std::optional<std::uint64_t> previous,
                                        std::optional<std::uint32_t> previous_card = std::nullopt);

/// The first rule of FORMAT.md the message breaks under `header` (after `previous`, if any), as a
/// sentence, or nothing: it is over a link of the header, end > start, and it follows the previous
/// message in the header's link order, on the same link at or after its end.
std::optional<std::string> check_message(const Header& header, const Message& message,
                                         const Message* previous);

} // namespace cardsim::traces
