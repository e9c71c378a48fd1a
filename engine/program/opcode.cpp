#include "engine/program/opcode.hpp"

#include "engine/program/slots.hpp"

#include <array>

namespace cardsim::program {
namespace {

/// The table row of opcode `S`: its default unit and the slots its X-macro lists name.
template <class S>
constexpr OpcodeSpec row(Unit unit) {
    return {S::opcode, S::name, unit, S::operand_slots, S::dim_slots, S::param_slots};
}

constexpr std::array<OpcodeSpec, opcode_count> specs{{
    row<slots::Copy>(Unit::Dma),
    row<slots::Embed>(Unit::Embed),
    row<slots::RmsNorm>(Unit::Norm),
    row<slots::LayerNorm>(Unit::LayerNorm),
    row<slots::Matvec>(Unit::Matvec),
    row<slots::Rotate>(Unit::Rotation),
    row<slots::Rope>(Unit::Rope),
    row<slots::CacheAppend>(Unit::CacheAppend),
    row<slots::Attend>(Unit::Attention),
    row<slots::SelfAttention>(Unit::AttentionWindow),
    row<slots::Conv>(Unit::Conv),
    row<slots::Silu>(Unit::SigmoidGate),
    row<slots::L2Norm>(Unit::L2Norm),
    row<slots::Gates>(Unit::Gates),
    row<slots::DeltaStep>(Unit::Delta),
    row<slots::GatedNorm>(Unit::GatedNorm),
    row<slots::SigmoidGate>(Unit::SigmoidGate),
    row<slots::SiluMul>(Unit::SiluMul),
    row<slots::Add>(Unit::Add),
    row<slots::ArgMax>(Unit::Argmax),
    row<slots::Gelu>(Unit::Gelu),
    row<slots::GeGlu>(Unit::Geglu),
    row<slots::AddType>(Unit::AddType),
    row<slots::GatherMarkers>(Unit::GatherMarkers),
    row<slots::ActFeatures>(Unit::ActFeatures),
    row<slots::Route>(Unit::Router),
    row<slots::ExpertMatvec>(Unit::Matvec),
    row<slots::Combine>(Unit::Router),
    row<slots::Send>(Unit::Network),
    row<slots::Recv>(Unit::Network),
    row<slots::RecvAdd>(Unit::Network),
    row<slots::SumPartials>(Unit::Add),
    row<slots::RotateScaled>(Unit::Rotation),
    row<slots::SwigluClamp>(Unit::SiluMul),
}};

constexpr bool table_in_order() {
    for (std::size_t i = 0; i < specs.size(); ++i)
        if (static_cast<std::size_t>(specs[i].opcode) != i) return false;
    return true;
}
static_assert(table_in_order(), "specs are indexed by opcode number");

} // namespace

std::string_view name(Access a) {
    switch (a) {
    case Access::Read:
        return "r";
    case Access::Write:
        return "w";
    case Access::ReadWrite:
        return "rw";
    }
    return "?";
}

const OpcodeSpec& spec(Opcode op) {
    return specs.at(static_cast<std::size_t>(op));
}

std::optional<Opcode> opcode_from(std::uint16_t raw) {
    if (raw >= opcode_count) return std::nullopt;
    return static_cast<Opcode>(raw);
}

std::optional<Opcode> opcode_named(std::string_view s) {
    for (auto& sp : specs)
        if (sp.name == s) return sp.opcode;
    return std::nullopt;
}

std::string_view name(Opcode op) {
    return spec(op).name;
}

} // namespace cardsim::program
