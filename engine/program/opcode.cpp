#include "engine/program/opcode.hpp"

#include <array>

namespace cardsim::program {
namespace {

constexpr auto R = Access::Read, W = Access::Write, RW = Access::ReadWrite;
constexpr auto F = ParamKind::F64;

// Operand, dimension and parameter slots, one group per opcode.
constexpr OperandSpec copy_ops[] = {{"src", R}, {"dst", W}};
constexpr OperandSpec embed_ops[] = {{"table", R}, {"ids", R}, {"out", W}};
constexpr std::string_view rows_width[] = {"rows", "width"};
constexpr OperandSpec norm_ops[] = {{"x", R}, {"w", R, true}, {"out", W}};
constexpr std::string_view norm_dims[] = {"rows", "width", "group"};
constexpr ParamSpec eps[] = {{"eps", F}};
constexpr OperandSpec layernorm_ops[] = {{"x", R}, {"w", R}, {"b", R, true}, {"out", W}};
constexpr OperandSpec matvec_ops[] = {{"x", R},    {"w", R},          {"b", R, true},
                                      {"out", RW}, {"out2", W, true}, {"out3", W, true}};
constexpr std::string_view matvec_dims[] = {"rows", "n", "k", "n1", "n2"};
constexpr OperandSpec rotate_ops[] = {{"x", RW}, {"positions", R}};
constexpr std::string_view rotate_dims[] = {"rows", "heads", "head_dim", "rotary_dim"};
constexpr ParamSpec theta[] = {{"theta", F}};
constexpr std::string_view rope_dims[] = {"rows", "heads", "head_dim"};
constexpr OperandSpec append_ops[] = {{"x", R}, {"positions", R}, {"cache", RW}};
constexpr std::string_view append_dims[] = {"rows", "kv_heads", "head_dim", "max_positions"};
constexpr OperandSpec attend_ops[] = {{"q", R},      {"positions", R},   {"keys", R},
                                      {"values", R}, {"sinks", R, true}, {"out", W}};
constexpr std::string_view attend_dims[] = {"rows",     "heads",         "kv_heads",
                                            "head_dim", "max_positions", "window"};
constexpr ParamSpec attend_params[] = {{"scale", F}, {"softcap", F}};
constexpr OperandSpec self_attention_ops[] = {{"qkv", R}, {"seq_starts", R}, {"out", W}};
constexpr std::string_view self_attention_dims[] = {"rows", "seqs", "heads", "head_dim", "window"};
constexpr OperandSpec conv_ops[] = {{"x", R}, {"w", R}, {"window", RW}, {"out", W}};
constexpr std::string_view conv_dims[] = {"rows", "channels", "kernel"};
constexpr OperandSpec unary_ops[] = {{"x", R}, {"out", W}};
constexpr OperandSpec l2norm_ops[] = {{"x", R}, {"out", W}};
constexpr ParamSpec l2norm_params[] = {{"eps", F}, {"scale", F}};
constexpr OperandSpec gates_ops[] = {{"b", R}, {"a", R}, {"a_log", R}, {"dt_bias", R}, {"beta", W}, {"g", W}};
constexpr std::string_view gates_dims[] = {"rows", "heads"};
constexpr OperandSpec delta_ops[] = {{"q", R}, {"k", R},      {"v", R},  {"beta", R},
                                     {"g", R}, {"state", RW}, {"out", W}};
constexpr std::string_view delta_dims[] = {"rows", "key_heads", "value_heads", "dk", "dv"};
constexpr OperandSpec gated_norm_ops[] = {{"x", R}, {"z", R}, {"w", R}, {"out", W}};
constexpr OperandSpec sigmoid_gate_ops[] = {{"x", R}, {"gate", R}, {"out", W}};
constexpr OperandSpec silu_mul_ops[] = {{"gate", R}, {"up", R}, {"out", W}};
constexpr OperandSpec add_ops[] = {{"a", R}, {"b", R}, {"out", W}};
constexpr OperandSpec add_type_ops[] = {{"h", RW}, {"table", R}, {"qtype", R}, {"seq_starts", R}};
constexpr std::string_view add_type_dims[] = {"rows", "seqs", "width"};
constexpr OperandSpec gather_ops[] = {{"h", R}, {"marker_rows", R}, {"out", W}};
constexpr std::string_view gather_dims[] = {"markers", "width"};
constexpr OperandSpec act_ops[] = {
    {"h", R}, {"logits", R}, {"seq_starts", R}, {"marker_starts", R}, {"out", W}};
constexpr std::string_view act_dims[] = {"seqs", "markers", "width"};

constexpr std::array<OpcodeSpec, opcode_count> specs{{
    {Opcode::Copy, "Copy", Unit::Dma, copy_ops, {}, {}},
    {Opcode::Embed, "Embed", Unit::Embed, embed_ops, rows_width, {}},
    {Opcode::RmsNorm, "RmsNorm", Unit::Norm, norm_ops, norm_dims, eps},
    {Opcode::LayerNorm, "LayerNorm", Unit::LayerNorm, layernorm_ops, rows_width, eps},
    {Opcode::Matvec, "Matvec", Unit::Matvec, matvec_ops, matvec_dims, {}},
    {Opcode::Rotate, "Rotate", Unit::Rotation, rotate_ops, rotate_dims, theta},
    {Opcode::Rope, "Rope", Unit::Rope, rotate_ops, rope_dims, theta},
    {Opcode::CacheAppend, "CacheAppend", Unit::CacheAppend, append_ops, append_dims, {}},
    {Opcode::Attend, "Attend", Unit::Attention, attend_ops, attend_dims, attend_params},
    {Opcode::SelfAttention,
     "SelfAttention",
     Unit::AttentionWindow,
     self_attention_ops,
     self_attention_dims,
     {}},
    {Opcode::Conv, "Conv", Unit::Conv, conv_ops, conv_dims, {}},
    {Opcode::Silu, "Silu", Unit::SigmoidGate, unary_ops, rows_width, {}},
    {Opcode::L2Norm, "L2Norm", Unit::L2Norm, l2norm_ops, norm_dims, l2norm_params},
    {Opcode::Gates, "Gates", Unit::Gates, gates_ops, gates_dims, {}},
    {Opcode::DeltaStep, "DeltaStep", Unit::Delta, delta_ops, delta_dims, {}},
    {Opcode::GatedNorm, "GatedNorm", Unit::GatedNorm, gated_norm_ops, norm_dims, eps},
    {Opcode::SigmoidGate, "SigmoidGate", Unit::SigmoidGate, sigmoid_gate_ops, rows_width, {}},
    {Opcode::SiluMul, "SiluMul", Unit::SiluMul, silu_mul_ops, rows_width, {}},
    {Opcode::Add, "Add", Unit::Add, add_ops, rows_width, {}},
    {Opcode::ArgMax, "ArgMax", Unit::Argmax, unary_ops, rows_width, {}},
    {Opcode::Gelu, "Gelu", Unit::Gelu, unary_ops, rows_width, {}},
    {Opcode::GeGlu, "GeGlu", Unit::Geglu, unary_ops, rows_width, {}},
    {Opcode::AddType, "AddType", Unit::AddType, add_type_ops, add_type_dims, {}},
    {Opcode::GatherMarkers, "GatherMarkers", Unit::GatherMarkers, gather_ops, gather_dims, {}},
    {Opcode::ActFeatures, "ActFeatures", Unit::ActFeatures, act_ops, act_dims, {}},
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
