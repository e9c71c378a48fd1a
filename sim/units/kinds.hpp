#pragma once
// The C++ model of every unit kind, one factory per file of this folder (matvec.cpp makes the
// matvec, ...). A new kind adds its file, its factory here and its line in `UnitSet::standard`.

#include "engine/card/card_config.hpp"
#include "sim/units/unit.hpp"

#include <memory>

namespace cardsim::sim::units {

std::shared_ptr<const Unit> matvec_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> attention_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> conv_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> gates_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> delta_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> sigmoid_gate_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> norm_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> rotation_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> cache_append_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> add_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> embed_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> argmax_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> silu_mul_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> l2norm_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> gated_norm_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> dma_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> gelu_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> geglu_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> layernorm_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> rope_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> attention_window_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> add_type_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> gather_markers_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> act_features_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> router_unit(const card::CardConfig& config);
std::shared_ptr<const Unit> network_unit(const card::CardConfig& config);

} // namespace cardsim::sim::units
