#include "sim/units/unit_set.hpp"

#include "engine/error.hpp"
#include "sim/units/kinds.hpp"

#include <fmt/core.h>

namespace cardsim::sim::units {

UnitSet UnitSet::standard(const card::CardConfig& config) {
    UnitSet s;
    for (auto make : {matvec_unit,    attention_unit,      conv_unit,
                      gates_unit,     delta_unit,          sigmoid_gate_unit,
                      norm_unit,      rotation_unit,       cache_append_unit,
                      add_unit,       embed_unit,          argmax_unit,
                      silu_mul_unit,  l2norm_unit,         gated_norm_unit,
                      dma_unit,       gelu_unit,           geglu_unit,
                      layernorm_unit, rope_unit,           attention_window_unit,
                      add_type_unit,  gather_markers_unit, act_features_unit,
                      router_unit,    network_unit})
        s.set(make(config));
    return s;
}

void UnitSet::set(std::shared_ptr<const Unit> unit) {
    if (!unit) throw Error("registering a unit: no implementation given");
    units_[static_cast<std::size_t>(unit->kind())] = std::move(unit);
}

const Unit& UnitSet::operator[](card::UnitKind kind) const {
    auto& u = units_[static_cast<std::size_t>(kind)];
    if (!u) throw Error(fmt::format("no implementation of the {} unit is registered", card::name(kind)));
    return *u;
}

std::shared_ptr<const Unit> UnitSet::shared(card::UnitKind kind) const {
    return units_[static_cast<std::size_t>(kind)];
}

} // namespace cardsim::sim::units
