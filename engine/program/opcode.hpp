#pragma once
// The card's units and the opcodes of its command stream, each with the operands, dimensions and
// parameters a command of it carries: the one table the writer, reader, disassembler, lowering and
// the simulator's units agree on.

#include "engine/card/unit_kind.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace cardsim::program {

/// A unit of the card: the kinds a card config names (`engine/card/unit_kind.hpp`).
using Unit = card::UnitKind;
/// How many unit kinds exist.
inline constexpr std::size_t unit_count = card::unit_kind_count;

/// What a command does.
enum class Opcode : std::uint16_t {
    Copy,          ///< DMA `src` to `dst`, the same number of bytes
    Embed,         ///< `out[r] = table[ids[r]]`
    RmsNorm,       ///< graph::RmsNorm; flag ZeroCentred; weight optional
    LayerNorm,     ///< graph::LayerNorm; bias optional
    Matvec,        ///< graph::Gemm, row by row: `out = epilogue(x wᵀ + b)`; a merged matvec splits
                   ///< its `n` outputs of a row into `out` (n1), `out2` (n2) and `out3` (the rest)
    Rotate,        ///< graph::Rotate, in place, positions from `positions`
    Rope,          ///< graph::Rope, in place on fused qkv rows
    CacheAppend,   ///< graph::CacheAppend into the cache at each row's position
    Attend,        ///< graph::AttendCache
    SelfAttention, ///< graph::Attention within each sequence
    Conv,          ///< graph::Conv, flag FusedSilu adds the SiLU
    Silu,          ///< graph::Silu
    L2Norm,        ///< graph::L2Norm
    Gates,         ///< graph::GdnGates
    DeltaStep,     ///< graph::DeltaStep
    GatedNorm,     ///< graph::GatedRmsNorm
    SigmoidGate,   ///< graph::SigmoidGate
    SiluMul,       ///< graph::SiluMul
    Add,           ///< graph::Add
    ArgMax,        ///< graph::ArgMax
    Gelu,          ///< graph::Gelu
    GeGlu,         ///< graph::GeGlu
    AddType,       ///< graph::AddType
    GatherMarkers, ///< graph::GatherMarkers
    ActFeatures,   ///< graph::ActFeatures
    Route,         ///< a Moe op's router: each row's top_k experts of its `experts` logits and their
                   ///< weights (numerics/router.hpp; `all`: not renormalised over the chosen)
    ExpertMatvec,  ///< a Moe op's expert matvec: row r's slot j multiplies x's row r (or, `per_slot`,
                   ///< row r·top_k + j) by the chosen expert's packed matrix, found through the
                   ///< expert table (u64 byte offsets into `experts`, one per expert); each chosen
                   ///< expert streams once; `out`/`out2` split each output row at n1 as Matvec
    Combine,       ///< a Moe op's combine: out = Σ weights · outs (+ sigmoid(gate) · shared), exact
                   ///< (numerics/combine.hpp)
    Send,          ///< the network unit sends `x` to card `peer` (a plan's activations)
    Recv,          ///< the network unit receives the next message from card `peer` into `out`
    RecvAdd,       ///< the network unit receives the next message from card `peer` and adds it, f32 by
                   ///< f32, to `out` (received + held, each rounded once): a ring reduce-scatter's step
    SumPartials,   ///< the add unit joins each output's exact parts from every card of a tensor-
                   ///< parallel plan (numerics/partial_sum.hpp): `x` its own, `others` the rest's
    RotateScaled,  ///< graph::Rotate with YaRN: pair i by `freqs[i]`, cos and sin times `scale`
                   ///< (numerics/rotary.hpp; `units.rotation.yarn`)
    SwigluClamp,   ///< gpt-oss's clamped SwiGLU of `gate` and `up` (numerics/elementwise.hpp;
                   ///< `units.silu_mul.clamp`)
};
inline constexpr std::size_t opcode_count = 34;

/// How a command touches an operand.
enum class Access : std::uint8_t { Read = 1, Write = 2, ReadWrite = 3 };

/// The spelling of an access: `r`, `w`, `rw`.
std::string_view name(Access a);

/// One operand slot of an opcode: its name, how it is touched, and whether it may be absent.
struct OperandSpec {
    std::string_view name;
    Access access = Access::Read;
    bool optional = false;
};

/// The name of the optional last operand of the stateful opcodes (CacheAppend, Attend, Conv,
/// DeltaStep): the io input of u32 per token row naming the store sequence (slot) the row reads and
/// writes. Absent, the row's sequence follows from its index (kernels::sequence_of_row) and a
/// program file leaves the operand out, so a program without slots has the bytes it always had.
inline constexpr std::string_view slots_operand = "slots";

/// What a parameter's 64 bits mean.
enum class ParamKind : std::uint8_t { F64, U64 };

/// One parameter slot: its name and kind.
struct ParamSpec {
    std::string_view name;
    ParamKind kind = ParamKind::F64;
};

/// An opcode's signature: the unit that runs it by default and its operand, dimension and
/// parameter slots, in order. A command of the opcode carries exactly these many of each.
struct OpcodeSpec {
    Opcode opcode;
    std::string_view name;
    Unit unit;
    std::span<const OperandSpec> operands;
    std::span<const std::string_view> dims;
    std::span<const ParamSpec> params;
};

/// The name of the optional operand the recurrent opcodes (Conv, DeltaStep) take just before
/// `slots`: the io positions, u32 per token row. Under slots a row at position 0 starts its
/// sequence: its store (window or state) is read as zeros, so a slot reused by a new sequence
/// carries nothing of the one before (the caches need no such rule: a row reads only positions
/// written by its own sequence).
inline constexpr std::string_view start_positions_operand = "positions";

/// How many operands at the end of opcode `s`'s list address the stores by slot: `slots`, and the
/// `positions` before it when that one is optional too (Conv, DeltaStep); 0 for an opcode without
/// slots. A file leaves them all out when they are absent (a program without slots).
constexpr std::size_t slot_tail(const OpcodeSpec& s) {
    const auto n = s.operands.size();
    if (n == 0 || s.operands[n - 1].name != slots_operand || !s.operands[n - 1].optional) return 0;
    return n >= 2 && s.operands[n - 2].name == start_positions_operand && s.operands[n - 2].optional ? 2 : 1;
}

/// Whether opcode `s`'s last operand is the optional `slots` operand a file leaves out when absent.
constexpr bool omits_absent_slots(const OpcodeSpec& s) {
    return slot_tail(s) > 0;
}

/// The signature of `op`.
const OpcodeSpec& spec(Opcode op);
/// The opcode whose number is `raw`, if it is one.
std::optional<Opcode> opcode_from(std::uint16_t raw);
/// The opcode spelled `s`, if any.
std::optional<Opcode> opcode_named(std::string_view s);
/// The spelling of `op` (`Matvec`).
std::string_view name(Opcode op);

/// Numerics and behaviour flags of a command (bits of `Command::flags`).
namespace flag {
inline constexpr std::uint32_t ZeroCentred = 1u << 0;   ///< RmsNorm multiplies by `1 + w`
inline constexpr std::uint32_t Accumulate = 1u << 1;    ///< Matvec adds into `out`
inline constexpr std::uint32_t EpilogueGelu = 1u << 2;  ///< Matvec applies GELU
inline constexpr std::uint32_t EpilogueRelu = 1u << 3;  ///< Matvec applies ReLU
inline constexpr std::uint32_t FusedSilu = 1u << 4;     ///< Conv applies SiLU to its result
inline constexpr std::uint32_t Transposed = 1u << 5;    ///< Matvec's weight is stored `[k, n]`
inline constexpr std::uint32_t Partial = 1u << 6;       ///< Matvec or Combine writes exact parts (24 B each)
inline constexpr std::uint32_t Defined = (1u << 7) - 1; ///< every flag bit defined so far
} // namespace flag

} // namespace cardsim::program
