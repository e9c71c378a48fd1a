#pragma once
// The matvec unit co-simulated from its RTL (rtl/matvec.sv, Verilated): an implementation of the
// matvec kind that runs every Matvec command through the RTL, holds each result to the C++ kernel
// bit for bit (a difference is a cardsim::Error naming the token row, the output element and both
// bit patterns, which the card turns into a bus error naming the command), and reports the RTL's
// clock cycles per command. Its timing in the card stays the C++ model's; swap it in with
// `UnitSet::set`.

#include "engine/card/card_config.hpp"
#include "engine/program/program.hpp"
#include "sim/units/unit.hpp"

#include <cstdint>
#include <memory>
#include <string_view>

namespace cardsim::sim::rtl {

/// Which build of the RTL to co-simulate: the datapath, or the test-only broken one (its window sum
/// truncates instead of rounding to nearest even; tests check the co-simulation catches it).
enum class RtlVariant { Datapath, Broken };

/// Whether this cardsim was built with Verilator (the RTL models exist).
bool rtl_available();

/// The Verilator version the RTL models were built with (`5.006 2023-01-22`), or `none` in a build
/// without Verilator.
std::string_view rtl_verilator_version();

/// The RTL's width: weight codes a beat (each word's MACs a cycle), the WIDTH it was built with.
std::uint32_t rtl_matvec_width();

/// The RTL matvec for a card of `config` (its weight format and knob point). Throws cardsim::Error
/// when this build has no RTL.
std::shared_ptr<const units::Unit> rtl_matvec_unit(const card::CardConfig& config,
                                                   RtlVariant variant = RtlVariant::Datapath);

} // namespace cardsim::sim::rtl
