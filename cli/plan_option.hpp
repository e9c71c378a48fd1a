#pragma once
// `--plan pp|tp`: how check, compile and run split a model over the cards of `[system]`.

#include "engine/card/card_config.hpp"
#include "engine/lower/plan.hpp"
#include "models/model.hpp"

#include <vector>

#include <boost/program_options.hpp>

namespace cardsim::cli {

/// `--plan one|pp|tp`.
boost::program_options::options_description plan_options();

/// The plan the parsed options ask for, checked against the config's card count: `pp` needs
/// `system.cards` of at least 2 and more than one card needs `pp` (cardsim::Error otherwise, saying
/// which to set).
lower::Plan plan_of(const boost::program_options::variables_map& vm, const card::CardConfig& config);

/// Each card's graph of `model` under tensor parallel over `config.system.cards` cards, joined as
/// `system.exchange` says, split on the weights' scale blocks (models::build_shard; what no split
/// keeps exact is a cardsim::Refusal).
std::vector<models::BuiltGraph> tensor_shards(const models::Model& model, const card::CardConfig& config);

/// Pointers to the graphs of `shards`, in card order.
std::vector<const graph::Graph*> graphs_of(const std::vector<models::BuiltGraph>& shards);

} // namespace cardsim::cli
