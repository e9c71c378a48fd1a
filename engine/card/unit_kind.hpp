#pragma once
// The kinds of unit a card may have: the names the card config and the shim use.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace cardsim::card {

/// One kind of unit. The first sixteen are the default card's; the rest are optional units a
/// config may add (absent, count 0, on the D5005 default).
enum class UnitKind {
    Matvec,
    Attention,
    Conv,
    Gates,
    Delta,
    SigmoidGate,
    Norm,
    Rotation,
    CacheAppend,
    Add,
    Embed,
    Argmax,
    SiluMul,
    L2Norm,
    GatedNorm,
    Dma,
    Gelu,
    Geglu,
    LayerNorm,
    Rope,
    AttentionWindow,
    AddType,
    GatherMarkers,
    ActFeatures,
    Router, ///< routes rows to experts and combines their outputs: only with `capabilities.experts`
    /// The network unit: sends and receives over the card's QSFP ports. Not in `[units]`: a card
    /// has one when it is in a system of several (`[system]`, `[link]`), none on its own.
    Network,
};

/// How many unit kinds there are.
inline constexpr std::size_t unit_kind_count = 26;

/// How many of them the config's `[units]` lists (all but the network unit).
inline constexpr std::size_t config_unit_kind_count = 25;

/// Every unit kind the config lists, in declaration order (the config's order).
inline constexpr std::array<UnitKind, config_unit_kind_count> all_unit_kinds{
    UnitKind::Matvec,    UnitKind::Attention,     UnitKind::Conv,
    UnitKind::Gates,     UnitKind::Delta,         UnitKind::SigmoidGate,
    UnitKind::Norm,      UnitKind::Rotation,      UnitKind::CacheAppend,
    UnitKind::Add,       UnitKind::Embed,         UnitKind::Argmax,
    UnitKind::SiluMul,   UnitKind::L2Norm,        UnitKind::GatedNorm,
    UnitKind::Dma,       UnitKind::Gelu,          UnitKind::Geglu,
    UnitKind::LayerNorm, UnitKind::Rope,          UnitKind::AttentionWindow,
    UnitKind::AddType,   UnitKind::GatherMarkers, UnitKind::ActFeatures,
    UnitKind::Router,
};

/// The config spelling of a unit kind (`matvec`, `sigmoid_gate`, `attention_window`, ...).
std::string_view name(UnitKind kind);

/// The unit kind spelled `text`, if there is one.
std::optional<UnitKind> parse_unit_kind(std::string_view text);

/// Whether a kind is one of the optional units (GELU, GeGLU, LayerNorm, RoPE, windowed attention,
/// token-type add, marker gather, activation features, the experts' router) rather than one of the
/// default card's.
bool is_optional(UnitKind kind);

} // namespace cardsim::card
