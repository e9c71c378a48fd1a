#pragma once
// Every opcode's operand, dimension and parameter slots by name. Each opcode has one X-macro list
// of each kind; the opcode table (`spec`), the slot enums and the typed views below are all
// generated from those lists, so a slot has one name everywhere and its index cannot drift from
// it. Writers (lowering) fill a command through `make<S>` with designated initializers; readers
// (the units, the disassembler) take `args<S>(command)`; both name every slot, and naming a slot
// of another opcode does not compile.

#include "engine/error.hpp"
#include "engine/program/program.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

// ---- the slot lists: X(name, access, optional) operands, X(name) dims, X(name, kind) params ----
// A stateful opcode's last operand is `slots` (program::slots_operand): the io input naming each
// token row's store sequence; the recurrent ones (Conv, DeltaStep) take the io positions just
// before it (program::start_positions_operand: a row at position 0 starts from a zero store).
// Absent, the file leaves them out (program.hpp, program::slot_tail).

#define CARDSIM_COPY_OPERANDS(X) X(src, Read, false) X(dst, Write, false)
#define CARDSIM_COPY_DIMS(X)
#define CARDSIM_COPY_PARAMS(X)

#define CARDSIM_EMBED_OPERANDS(X) X(table, Read, false) X(ids, Read, false) X(out, Write, false)
#define CARDSIM_EMBED_DIMS(X) X(rows) X(width)
#define CARDSIM_EMBED_PARAMS(X)

#define CARDSIM_RMSNORM_OPERANDS(X) X(x, Read, false) X(w, Read, true) X(out, Write, false)
#define CARDSIM_RMSNORM_DIMS(X) X(rows) X(width) X(group)
#define CARDSIM_RMSNORM_PARAMS(X) X(eps, F64)

#define CARDSIM_LAYERNORM_OPERANDS(X)                                                                        \
    X(x, Read, false) X(w, Read, false) X(b, Read, true) X(out, Write, false)
#define CARDSIM_LAYERNORM_DIMS(X) X(rows) X(width)
#define CARDSIM_LAYERNORM_PARAMS(X) X(eps, F64)

#define CARDSIM_MATVEC_OPERANDS(X)                                                                           \
    X(x, Read, false)                                                                                        \
    X(w, Read, false) X(b, Read, true) X(out, ReadWrite, false) X(out2, Write, true) X(out3, Write, true)
#define CARDSIM_MATVEC_DIMS(X) X(rows) X(n) X(k) X(n1) X(n2)
#define CARDSIM_MATVEC_PARAMS(X)

#define CARDSIM_ROTATE_OPERANDS(X) X(x, ReadWrite, false) X(positions, Read, false)
#define CARDSIM_ROTATE_DIMS(X) X(rows) X(heads) X(head_dim) X(rotary_dim)
#define CARDSIM_ROTATE_PARAMS(X) X(theta, F64)

#define CARDSIM_ROPE_OPERANDS(X) X(x, ReadWrite, false) X(positions, Read, false)
#define CARDSIM_ROPE_DIMS(X) X(rows) X(heads) X(head_dim)
#define CARDSIM_ROPE_PARAMS(X) X(theta, F64)

#define CARDSIM_CACHEAPPEND_OPERANDS(X)                                                                      \
    X(x, Read, false) X(positions, Read, false) X(cache, ReadWrite, false) X(slots, Read, true)
#define CARDSIM_CACHEAPPEND_DIMS(X) X(rows) X(kv_heads) X(head_dim) X(max_positions)
#define CARDSIM_CACHEAPPEND_PARAMS(X)

#define CARDSIM_ATTEND_OPERANDS(X)                                                                           \
    X(q, Read, false)                                                                                        \
    X(positions, Read, false)                                                                                \
    X(keys, Read, false) X(values, Read, false) X(sinks, Read, true) X(out, Write, false) X(slots, Read, true)
#define CARDSIM_ATTEND_DIMS(X) X(rows) X(heads) X(kv_heads) X(head_dim) X(max_positions) X(window)
#define CARDSIM_ATTEND_PARAMS(X) X(scale, F64) X(softcap, F64)

#define CARDSIM_SELFATTENTION_OPERANDS(X) X(qkv, Read, false) X(seq_starts, Read, false) X(out, Write, false)
#define CARDSIM_SELFATTENTION_DIMS(X) X(rows) X(seqs) X(heads) X(head_dim) X(window)
#define CARDSIM_SELFATTENTION_PARAMS(X)

#define CARDSIM_CONV_OPERANDS(X)                                                                             \
    X(x, Read, false)                                                                                        \
    X(w, Read, false)                                                                                        \
    X(window, ReadWrite, false) X(out, Write, false) X(positions, Read, true) X(slots, Read, true)
#define CARDSIM_CONV_DIMS(X) X(rows) X(channels) X(kernel)
#define CARDSIM_CONV_PARAMS(X)

#define CARDSIM_UNARY_OPERANDS(X) X(x, Read, false) X(out, Write, false)
#define CARDSIM_ROWS_WIDTH(X) X(rows) X(width)
#define CARDSIM_NO_PARAMS(X)

#define CARDSIM_L2NORM_OPERANDS(X) X(x, Read, false) X(out, Write, false)
#define CARDSIM_L2NORM_DIMS(X) X(rows) X(width) X(group)
#define CARDSIM_L2NORM_PARAMS(X) X(eps, F64) X(scale, F64)

#define CARDSIM_GATES_OPERANDS(X)                                                                            \
    X(b, Read, false)                                                                                        \
    X(a, Read, false) X(a_log, Read, false) X(dt_bias, Read, false) X(beta, Write, false) X(g, Write, false)
#define CARDSIM_GATES_DIMS(X) X(rows) X(heads)
#define CARDSIM_GATES_PARAMS(X)

// clang-format off
#define CARDSIM_DELTASTEP_OPERANDS(X)                                                                        \
    X(q, Read, false)                                                                                        \
    X(k, Read, false)                                                                                        \
    X(v, Read, false)                                                                                        \
    X(beta, Read, false)                                                                                     \
    X(g, Read, false)                                                                                        \
    X(state, ReadWrite, false)                                                                               \
    X(out, Write, false)                                                                                     \
    X(positions, Read, true)                                                                                 \
    X(slots, Read, true)
// clang-format on
#define CARDSIM_DELTASTEP_DIMS(X) X(rows) X(key_heads) X(value_heads) X(dk) X(dv)
#define CARDSIM_DELTASTEP_PARAMS(X)

#define CARDSIM_GATEDNORM_OPERANDS(X)                                                                        \
    X(x, Read, false) X(z, Read, false) X(w, Read, false) X(out, Write, false)
#define CARDSIM_GATEDNORM_DIMS(X) X(rows) X(width) X(group)
#define CARDSIM_GATEDNORM_PARAMS(X) X(eps, F64)

#define CARDSIM_SIGMOIDGATE_OPERANDS(X) X(x, Read, false) X(gate, Read, false) X(out, Write, false)
#define CARDSIM_SILUMUL_OPERANDS(X) X(gate, Read, false) X(up, Read, false) X(out, Write, false)
#define CARDSIM_ADD_OPERANDS(X) X(a, Read, false) X(b, Read, false) X(out, Write, false)

#define CARDSIM_ADDTYPE_OPERANDS(X)                                                                          \
    X(h, ReadWrite, false) X(table, Read, false) X(qtype, Read, false) X(seq_starts, Read, false)
#define CARDSIM_ADDTYPE_DIMS(X) X(rows) X(seqs) X(width)

#define CARDSIM_GATHERMARKERS_OPERANDS(X) X(h, Read, false) X(marker_rows, Read, false) X(out, Write, false)
#define CARDSIM_GATHERMARKERS_DIMS(X) X(markers) X(width)

#define CARDSIM_ACTFEATURES_OPERANDS(X)                                                                      \
    X(h, Read, false)                                                                                        \
    X(logits, Read, false) X(seq_starts, Read, false) X(marker_starts, Read, false) X(out, Write, false)
#define CARDSIM_ACTFEATURES_DIMS(X) X(seqs) X(markers) X(width)

// The experts (graph::Moe): the router unit's route and combine, the matvec unit's expert matvec.
// `router` numbers the step's routes (a Moe op's route and its expert matvecs share it): the
// routing a run records or a timing-only run is given (units::Step::routing) is per router.
#define CARDSIM_ROUTE_OPERANDS(X) X(logits, Read, false) X(experts, Write, false) X(weights, Write, false)
#define CARDSIM_ROUTE_DIMS(X) X(rows) X(experts) X(top_k) X(all) X(router)

// clang-format off
#define CARDSIM_EXPERTMATVEC_OPERANDS(X)                                                                     \
    X(x, Read, false)                                                                                        \
    X(choice, Read, false)                                                                                   \
    X(table, Read, false)                                                                                    \
    X(experts, Read, false)                                                                                  \
    X(out, Write, false)                                                                                     \
    X(out2, Write, true)                                                                                     \
    X(bias, Read, true)
// clang-format on
// `stride`: the bytes from one expert's matrix to the next in `experts` (the table's entries are
// e · stride, as lowering lays them out: timing takes an expert's address from it, never from data).
// The card holds `experts` of the router's `routed` experts, `first` .. first + experts (all of them
// on one card; a share under expert parallelism): a slot choosing another card's expert is +0.
// `bias` (gpt-oss; `units.matvec.bias`): n f32 an expert, in the table's order, added to its outputs.
#define CARDSIM_EXPERTMATVEC_DIMS(X)                                                                         \
    X(rows) X(top_k) X(experts) X(n) X(k) X(n1) X(per_slot) X(stride) X(router) X(first) X(routed)

#define CARDSIM_COMBINE_OPERANDS(X)                                                                          \
    X(weights, Read, false)                                                                                  \
    X(outs, Read, false) X(shared, Read, true) X(gate, Read, true) X(out, Write, false)
#define CARDSIM_COMBINE_DIMS(X) X(rows) X(top_k) X(width)

// ---- what one opcode's slots generate ----

#define CARDSIM_SLOT_NAME3(n, a, o) n,
#define CARDSIM_SLOT_NAME2(n, k) n,
#define CARDSIM_SLOT_NAME1(n) n,
#define CARDSIM_SLOT_ONE3(n, a, o) +1
#define CARDSIM_SLOT_ONE2(n, k) +1
#define CARDSIM_SLOT_ONE1(n) +1
#define CARDSIM_OPERAND_SPEC(n, a, o) ::cardsim::program::OperandSpec{#n, ::cardsim::program::Access::a, o},
#define CARDSIM_DIM_SPEC(n) std::string_view{#n},
#define CARDSIM_PARAM_SPEC(n, k) ::cardsim::program::ParamSpec{#n, ::cardsim::program::ParamKind::k},
#define CARDSIM_OPERAND_MEMBER(n, a, o) T n{};
#define CARDSIM_DIM_MEMBER(n) std::uint64_t n = 0;
#define CARDSIM_PARAM_TYPE_F64 double
#define CARDSIM_PARAM_TYPE_U64 std::uint64_t
#define CARDSIM_PARAM_MEMBER(n, k) CARDSIM_PARAM_TYPE_##k n = 0;
#define CARDSIM_OPERAND_READ(n, a, o) e.n = v[i++];
#define CARDSIM_DIM_READ(n) d.n = v[i++];
#define CARDSIM_PARAM_READ(n, k)                                                                             \
    p.n = ::cardsim::program::detail::param_value<CARDSIM_PARAM_TYPE_##k>(v[i++]);
#define CARDSIM_OPERAND_LIST(n, a, o) e.n,
#define CARDSIM_DIM_LIST(n) d.n,
#define CARDSIM_PARAM_LIST(n, k) ::cardsim::program::detail::param_bits(p.n),

/// The slots of opcode `OP`: enums `Operand`, `Dim`, `Param` (slot indices), the spec arrays the
/// opcode table points at, and the aggregates `Each<T>` (one T per operand), `Dims` and `Params`
/// with their conversions from and to a command's lists.
#define CARDSIM_SLOTS(OP, OPERANDS, DIMS, PARAMS)                                                            \
    struct OP {                                                                                              \
        static constexpr ::cardsim::program::Opcode opcode = ::cardsim::program::Opcode::OP;                 \
        static constexpr std::string_view name = #OP;                                                        \
        enum class Operand : std::uint8_t { OPERANDS(CARDSIM_SLOT_NAME3) };                                  \
        enum class Dim : std::uint8_t { DIMS(CARDSIM_SLOT_NAME1) };                                          \
        enum class Param : std::uint8_t { PARAMS(CARDSIM_SLOT_NAME2) };                                      \
        static constexpr std::size_t operand_count = 0 OPERANDS(CARDSIM_SLOT_ONE3);                          \
        static constexpr std::size_t dim_count = 0 DIMS(CARDSIM_SLOT_ONE1);                                  \
        static constexpr std::size_t param_count = 0 PARAMS(CARDSIM_SLOT_ONE2);                              \
        static constexpr std::array<::cardsim::program::OperandSpec, operand_count> operand_slots{           \
            {OPERANDS(CARDSIM_OPERAND_SPEC)}};                                                               \
        static constexpr std::array<std::string_view, dim_count> dim_slots{{DIMS(CARDSIM_DIM_SPEC)}};        \
        static constexpr std::array<::cardsim::program::ParamSpec, param_count> param_slots{                 \
            {PARAMS(CARDSIM_PARAM_SPEC)}};                                                                   \
        template <class T>                                                                                   \
        struct Each {                                                                                        \
            OPERANDS(CARDSIM_OPERAND_MEMBER)                                                                 \
        };                                                                                                   \
        struct Dims {                                                                                        \
            DIMS(CARDSIM_DIM_MEMBER)                                                                         \
        };                                                                                                   \
        struct Params {                                                                                      \
            PARAMS(CARDSIM_PARAM_MEMBER)                                                                     \
        };                                                                                                   \
        template <class T>                                                                                   \
        static Each<T> each([[maybe_unused]] std::span<const T> v) {                                         \
            Each<T> e;                                                                                       \
            [[maybe_unused]] std::size_t i = 0;                                                              \
            OPERANDS(CARDSIM_OPERAND_READ)                                                                   \
            return e;                                                                                        \
        }                                                                                                    \
        static Dims dims_of([[maybe_unused]] std::span<const std::uint64_t> v) {                             \
            Dims d;                                                                                          \
            [[maybe_unused]] std::size_t i = 0;                                                              \
            DIMS(CARDSIM_DIM_READ)                                                                           \
            return d;                                                                                        \
        }                                                                                                    \
        static Params params_of([[maybe_unused]] std::span<const std::uint64_t> v) {                         \
            Params p;                                                                                        \
            [[maybe_unused]] std::size_t i = 0;                                                              \
            PARAMS(CARDSIM_PARAM_READ)                                                                       \
            return p;                                                                                        \
        }                                                                                                    \
        template <class T>                                                                                   \
        static std::vector<T> list([[maybe_unused]] const Each<T>& e) {                                      \
            return {OPERANDS(CARDSIM_OPERAND_LIST)};                                                         \
        }                                                                                                    \
        static std::vector<std::uint64_t> list([[maybe_unused]] const Dims& d) {                             \
            return {DIMS(CARDSIM_DIM_LIST)};                                                                 \
        }                                                                                                    \
        static std::vector<std::uint64_t> list([[maybe_unused]] const Params& p) {                           \
            return {PARAMS(CARDSIM_PARAM_LIST)};                                                             \
        }                                                                                                    \
    };

namespace cardsim::program {

namespace detail {
/// A parameter's value from its stored 64 bits, by its kind's type.
template <class T>
T param_value(std::uint64_t bits) {
    if constexpr (std::is_same_v<T, double>)
        return bits_f64(bits);
    else
        return bits;
}
/// A parameter's stored 64 bits.
inline std::uint64_t param_bits(double v) {
    return f64_bits(v);
}
inline std::uint64_t param_bits(std::uint64_t v) {
    return v;
}
} // namespace detail

#define CARDSIM_SEND_OPERANDS(X) X(x, Read, false)
#define CARDSIM_RECV_OPERANDS(X) X(out, Write, false)
#define CARDSIM_RECVADD_OPERANDS(X) X(out, ReadWrite, false)
#define CARDSIM_PEER_DIMS(X) X(peer)
#define CARDSIM_SUMPARTIALS_OPERANDS(X) X(x, Read, false) X(others, Read, false) X(out, Write, false)
#define CARDSIM_SUMPARTIALS_DIMS(X) X(elements) X(parts)
// YaRN: pair i of each head turns by `freqs[i]` (rotary_dim / 2 f32, computed by lowering), cos and
// sin times `scale`.
#define CARDSIM_ROTATESCALED_OPERANDS(X)                                                                     \
    X(x, ReadWrite, false) X(positions, Read, false) X(freqs, Read, false)
#define CARDSIM_ROTATESCALED_PARAMS(X) X(scale, F64)
#define CARDSIM_SWIGLUCLAMP_PARAMS(X) X(limit, F64) X(alpha, F64)

/// The slots of every opcode, one struct each, named as the opcode.
namespace slots {
CARDSIM_SLOTS(Copy, CARDSIM_COPY_OPERANDS, CARDSIM_COPY_DIMS, CARDSIM_COPY_PARAMS)
CARDSIM_SLOTS(Embed, CARDSIM_EMBED_OPERANDS, CARDSIM_EMBED_DIMS, CARDSIM_EMBED_PARAMS)
CARDSIM_SLOTS(RmsNorm, CARDSIM_RMSNORM_OPERANDS, CARDSIM_RMSNORM_DIMS, CARDSIM_RMSNORM_PARAMS)
CARDSIM_SLOTS(LayerNorm, CARDSIM_LAYERNORM_OPERANDS, CARDSIM_LAYERNORM_DIMS, CARDSIM_LAYERNORM_PARAMS)
CARDSIM_SLOTS(Matvec, CARDSIM_MATVEC_OPERANDS, CARDSIM_MATVEC_DIMS, CARDSIM_MATVEC_PARAMS)
CARDSIM_SLOTS(Rotate, CARDSIM_ROTATE_OPERANDS, CARDSIM_ROTATE_DIMS, CARDSIM_ROTATE_PARAMS)
CARDSIM_SLOTS(Rope, CARDSIM_ROPE_OPERANDS, CARDSIM_ROPE_DIMS, CARDSIM_ROPE_PARAMS)
CARDSIM_SLOTS(CacheAppend, CARDSIM_CACHEAPPEND_OPERANDS, CARDSIM_CACHEAPPEND_DIMS, CARDSIM_CACHEAPPEND_PARAMS)
CARDSIM_SLOTS(Attend, CARDSIM_ATTEND_OPERANDS, CARDSIM_ATTEND_DIMS, CARDSIM_ATTEND_PARAMS)
CARDSIM_SLOTS(SelfAttention, CARDSIM_SELFATTENTION_OPERANDS, CARDSIM_SELFATTENTION_DIMS,
              CARDSIM_SELFATTENTION_PARAMS)
CARDSIM_SLOTS(Conv, CARDSIM_CONV_OPERANDS, CARDSIM_CONV_DIMS, CARDSIM_CONV_PARAMS)
CARDSIM_SLOTS(Silu, CARDSIM_UNARY_OPERANDS, CARDSIM_ROWS_WIDTH, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(L2Norm, CARDSIM_L2NORM_OPERANDS, CARDSIM_L2NORM_DIMS, CARDSIM_L2NORM_PARAMS)
CARDSIM_SLOTS(Gates, CARDSIM_GATES_OPERANDS, CARDSIM_GATES_DIMS, CARDSIM_GATES_PARAMS)
CARDSIM_SLOTS(DeltaStep, CARDSIM_DELTASTEP_OPERANDS, CARDSIM_DELTASTEP_DIMS, CARDSIM_DELTASTEP_PARAMS)
CARDSIM_SLOTS(GatedNorm, CARDSIM_GATEDNORM_OPERANDS, CARDSIM_GATEDNORM_DIMS, CARDSIM_GATEDNORM_PARAMS)
CARDSIM_SLOTS(SigmoidGate, CARDSIM_SIGMOIDGATE_OPERANDS, CARDSIM_ROWS_WIDTH, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(SiluMul, CARDSIM_SILUMUL_OPERANDS, CARDSIM_ROWS_WIDTH, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(Add, CARDSIM_ADD_OPERANDS, CARDSIM_ROWS_WIDTH, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(ArgMax, CARDSIM_UNARY_OPERANDS, CARDSIM_ROWS_WIDTH, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(Gelu, CARDSIM_UNARY_OPERANDS, CARDSIM_ROWS_WIDTH, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(GeGlu, CARDSIM_UNARY_OPERANDS, CARDSIM_ROWS_WIDTH, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(AddType, CARDSIM_ADDTYPE_OPERANDS, CARDSIM_ADDTYPE_DIMS, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(GatherMarkers, CARDSIM_GATHERMARKERS_OPERANDS, CARDSIM_GATHERMARKERS_DIMS, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(ActFeatures, CARDSIM_ACTFEATURES_OPERANDS, CARDSIM_ACTFEATURES_DIMS, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(Route, CARDSIM_ROUTE_OPERANDS, CARDSIM_ROUTE_DIMS, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(ExpertMatvec, CARDSIM_EXPERTMATVEC_OPERANDS, CARDSIM_EXPERTMATVEC_DIMS, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(Combine, CARDSIM_COMBINE_OPERANDS, CARDSIM_COMBINE_DIMS, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(Send, CARDSIM_SEND_OPERANDS, CARDSIM_PEER_DIMS, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(Recv, CARDSIM_RECV_OPERANDS, CARDSIM_PEER_DIMS, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(RecvAdd, CARDSIM_RECVADD_OPERANDS, CARDSIM_PEER_DIMS, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(SumPartials, CARDSIM_SUMPARTIALS_OPERANDS, CARDSIM_SUMPARTIALS_DIMS, CARDSIM_NO_PARAMS)
CARDSIM_SLOTS(RotateScaled, CARDSIM_ROTATESCALED_OPERANDS, CARDSIM_ROTATE_DIMS, CARDSIM_ROTATESCALED_PARAMS)
CARDSIM_SLOTS(SwigluClamp, CARDSIM_SILUMUL_OPERANDS, CARDSIM_ROWS_WIDTH, CARDSIM_SWIGLUCLAMP_PARAMS)
} // namespace slots

/// Calls `f(slots::X{})` with the slots struct of opcode `op` and returns what it returns.
template <class F>
decltype(auto) with_slots(Opcode op, F&& f) {
    switch (op) {
    case Opcode::Copy:
        return f(slots::Copy{});
    case Opcode::Embed:
        return f(slots::Embed{});
    case Opcode::RmsNorm:
        return f(slots::RmsNorm{});
    case Opcode::LayerNorm:
        return f(slots::LayerNorm{});
    case Opcode::Matvec:
        return f(slots::Matvec{});
    case Opcode::Rotate:
        return f(slots::Rotate{});
    case Opcode::Rope:
        return f(slots::Rope{});
    case Opcode::CacheAppend:
        return f(slots::CacheAppend{});
    case Opcode::Attend:
        return f(slots::Attend{});
    case Opcode::SelfAttention:
        return f(slots::SelfAttention{});
    case Opcode::Conv:
        return f(slots::Conv{});
    case Opcode::Silu:
        return f(slots::Silu{});
    case Opcode::L2Norm:
        return f(slots::L2Norm{});
    case Opcode::Gates:
        return f(slots::Gates{});
    case Opcode::DeltaStep:
        return f(slots::DeltaStep{});
    case Opcode::GatedNorm:
        return f(slots::GatedNorm{});
    case Opcode::SigmoidGate:
        return f(slots::SigmoidGate{});
    case Opcode::SiluMul:
        return f(slots::SiluMul{});
    case Opcode::Add:
        return f(slots::Add{});
    case Opcode::ArgMax:
        return f(slots::ArgMax{});
    case Opcode::Gelu:
        return f(slots::Gelu{});
    case Opcode::GeGlu:
        return f(slots::GeGlu{});
    case Opcode::AddType:
        return f(slots::AddType{});
    case Opcode::GatherMarkers:
        return f(slots::GatherMarkers{});
    case Opcode::ActFeatures:
        return f(slots::ActFeatures{});
    case Opcode::Route:
        return f(slots::Route{});
    case Opcode::ExpertMatvec:
        return f(slots::ExpertMatvec{});
    case Opcode::Combine:
        return f(slots::Combine{});
    case Opcode::Send:
        return f(slots::Send{});
    case Opcode::Recv:
        return f(slots::Recv{});
    case Opcode::RecvAdd:
        return f(slots::RecvAdd{});
    case Opcode::SumPartials:
        return f(slots::SumPartials{});
    case Opcode::RotateScaled:
        return f(slots::RotateScaled{});
    case Opcode::SwigluClamp:
        return f(slots::SwigluClamp{});
    }
    throw Error("an opcode outside the table");
}

/// The index of a slot in its command list (`c.operands[at(Matvec::Operand::out)]`).
template <class E>
requires std::is_enum_v<E>
constexpr std::size_t at(E slot) {
    return static_cast<std::size_t>(slot);
}

/// A command of opcode `S` read by slot name: `args<slots::Matvec>(c).dims.n`.
template <class S>
struct Args {
    typename S::template Each<Operand> operands;
    typename S::Dims dims;
    typename S::Params params;
};

/// The slots of command `c`, which must be of `S`'s opcode with the table's counts (every decoded
/// or lowered command is); throws cardsim::Error otherwise.
template <class S>
Args<S> args(const Command& c) {
    if (c.opcode != S::opcode || c.operands.size() != S::operand_count || c.dims.size() != S::dim_count ||
        c.params.size() != S::param_count)
        throw Error(std::string("a command read as ") + std::string(S::name) + " is a " +
                    std::string(spec(c.opcode).name) + " or has other slot counts");
    return {S::each(std::span<const Operand>(c.operands)), S::dims_of(c.dims), S::params_of(c.params)};
}

/// The operands of a command of `S`, as `T` each (`each<slots::Matvec>(spans).out`).
template <class S, class T>
typename S::template Each<T> each(std::span<const T> operands) {
    if (operands.size() != S::operand_count)
        throw Error(std::string("a ") + std::string(S::name) + " command has " +
                    std::to_string(S::operand_count) + " operands, given " + std::to_string(operands.size()));
    return S::each(operands);
}

/// Fills `c` (opcode `S`) from named slots; a present operand takes the access its slot has.
template <class S>
void fill(Command& c, const typename S::template Each<Operand>& operands, const typename S::Dims& dims,
          const typename S::Params& params = {}) {
    c.opcode = S::opcode;
    c.operands = S::list(operands);
    for (std::size_t i = 0; i < c.operands.size(); ++i)
        if (c.operands[i].region != Region::None) c.operands[i].access = S::operand_slots[i].access;
    c.dims = S::list(dims);
    c.params = S::list(params);
}

} // namespace cardsim::program
