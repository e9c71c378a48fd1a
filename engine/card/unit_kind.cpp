#include "engine/card/unit_kind.hpp"

namespace cardsim::card {
namespace {

/// The spellings, indexed by the enum's value.
constexpr std::array<std::string_view, unit_kind_count> unit_names{
    "matvec",    "attention",      "conv",
    "gates",     "delta",          "sigmoid_gate",
    "norm",      "rotation",       "cache_append",
    "add",       "embed",          "argmax",
    "silu_mul",  "l2norm",         "gated_norm",
    "dma",       "gelu",           "geglu",
    "layernorm", "rope",           "attention_window",
    "add_type",  "gather_markers", "act_features",
    "router",    "network",
};

} // namespace

std::string_view name(UnitKind kind) {
    return unit_names[static_cast<std::size_t>(kind)];
}

std::optional<UnitKind> parse_unit_kind(std::string_view text) {
    for (auto kind : all_unit_kinds)
        if (name(kind) == text) return kind;
    if (text == name(UnitKind::Network)) return UnitKind::Network;
    return std::nullopt;
}

bool is_optional(UnitKind kind) {
    return static_cast<std::size_t>(kind) >= static_cast<std::size_t>(UnitKind::Gelu) &&
           kind != UnitKind::Network;
}

} // namespace cardsim::card
