#pragma once
// One unit kind of the card, stated in one place: how much work a command is for it (its compute
// cycles follow from the unit's width), which bytes of each operand the command moves (its memory
// traffic), and what it computes on those bytes (through engine/kernels, the arithmetic the golden
// executor shares). sim/card's UnitModule is the one timing loop every unit instance runs; it asks
// the unit kind's `Unit` for these three things and nothing else. Each kind lives in its own file
// beside this one; `UnitSet::standard` registers them, and another implementation of a kind (an RTL
// model, a unit with a fault injected) replaces it with one `UnitSet::set`.

#include "engine/card/card_config.hpp"
#include "engine/program/program.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace cardsim::sim::units {

/// A byte range of an operand that a command really moves: `bytes` bytes from `offset` into it.
struct Span {
    std::uint64_t offset = 0, bytes = 0;
    friend bool operator==(const Span&, const Span&) = default;
};

/// What a unit's timing may know of the step beside the command: each token row's position and,
/// for a program with slots, its store sequence (the io positions and slots the host wrote), and
/// the step's routing: per router (a Moe op's number, dims `router`), each row's chosen experts
/// (rows × top_k). Timing never depends on data, so this is all it gets: a full run's routing is
/// what its route commands chose (recorded as each one computes, before the expert matvecs that
/// depend on it start), a timing-only run's comes with its inputs (a routing model or trace).
struct Step {
    std::span<const std::uint32_t> positions;
    std::span<const std::uint32_t> slots;                ///< empty without slots
    std::span<const std::vector<std::uint32_t>> routing; ///< per router; empty without experts
};

/// An operand whose reads wait for another operand's: they issue `cycles` kernel cycles after
/// operand `after`'s reads complete (an indirect address: the expert matvec's weight streams wait
/// for the expert table's entries, those for the chosen indices).
struct IssueAfter {
    std::size_t after = 0;
    std::uint64_t cycles = 0;
};

/// The bytes of every operand of a command, in slot order (absent operands empty): card memory in
/// place, or copies where operands overlap. Read operands hold their data; written ones are filled.
using Operands = std::span<const std::span<std::byte>>;

/// One unit kind's behaviour. Implementations are immutable once made (a unit's `compute` may run
/// for any instance of its kind).
class Unit {
public:
    explicit Unit(card::UnitKind kind) : kind_(kind) {}
    virtual ~Unit() = default;

    /// The kind this implements.
    card::UnitKind kind() const { return kind_; }
    /// Whether the unit runs commands of opcode `op`.
    virtual bool runs(program::Opcode op) const = 0;
    /// The work of `c` in the measure of the unit's width (configs/d5005.toml documents each
    /// unit's measure), at the card's knob point; the compute cycles are ceil(work / lanes), at
    /// least 1, with the lanes the config gives the kind (`CardConfig::lanes`).
    virtual std::uint64_t work(const program::Command& c, const Step& step) const = 0;
    /// The parts of operand `k` of `c` the command moves. The whole operand, unless the unit reads
    /// or writes only part of it (an embed's rows, a cache's attended positions).
    virtual std::vector<Span> traffic(const program::Command& c, std::size_t k, const Step& step) const;
    /// When operand `k`'s reads of `c` wait for another operand's (an indirect address), or nothing:
    /// every read issues at the command's start.
    virtual std::optional<IssueAfter> issue_after(const program::Command& c, std::size_t k) const;
    /// Computes `c`'s results on its operands' bytes (full runs only). Throws cardsim::Error for
    /// operands the kernels cannot take.
    virtual void compute(const program::Command& c, Operands operands) const = 0;
    /// The clock cycles a measuring implementation (the RTL co-simulation, sim/rtl) took for the
    /// command its last `compute` ran; 0 for the C++ models, which measure nothing.
    virtual std::uint64_t measured_cycles() const { return 0; }

private:
    card::UnitKind kind_;
};

/// The compute cycles of `work` on a unit `width` wide: ceil(work / width), at least 1.
std::uint64_t compute_cycles(std::uint64_t work, std::uint32_t width);

// ---- helpers the unit files share ----

/// An operand's bytes as f32 (operands are f32-aligned in card memory and in copies).
std::span<float> f32s(std::span<std::byte> b);
/// An operand's bytes as u32 (token ids, positions, sequence starts).
std::span<const std::uint32_t> u32s(std::span<std::byte> b);

} // namespace cardsim::sim::units
