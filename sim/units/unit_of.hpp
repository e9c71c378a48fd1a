#pragma once
// The common shape of a unit kind that runs the opcodes of some slot structs: `runs` answers from
// their list, and the unit file states only its work, its traffic (if not whole operands) and its
// compute, reading every command through its named slots.

#include "engine/program/slots.hpp"
#include "sim/units/unit.hpp"

namespace cardsim::sim::units {

/// A unit kind running the opcodes of `S...` (program::slots structs).
template <class... S>
class UnitOf : public Unit {
public:
    using Unit::Unit;
    bool runs(program::Opcode op) const override { return ((op == S::opcode) || ...); }
};

/// `rows · width`: the work of a unit that handles one element a lane per cycle.
template <class S>
std::uint64_t rows_times_width(const program::Command& c) {
    auto d = program::args<S>(c).dims;
    return d.rows * d.width;
}

/// The step's slots when `c`, a stateful command of `S`, takes them (its `slots` operand is
/// present: a program lowered with slots), else none (each row's sequence follows from its index).
template <class S>
std::span<const std::uint32_t> slots_of(const program::Command& c, const Step& step) {
    if (c.operands.at(program::at(S::Operand::slots)).region == program::Region::None) return {};
    return step.slots;
}

} // namespace cardsim::sim::units
