#pragma once
// `--plan pp`: how check, compile and run split a model over the cards of `[system]`.

#include "engine/card/card_config.hpp"
#include "engine/lower/plan.hpp"

#include <boost/program_options.hpp>

namespace cardsim::cli {

/// `--plan one|pp`.
boost::program_options::options_description plan_options();

/// The plan the parsed options ask for, checked against the config's card count: `pp` needs
/// `system.cards` of at least 2 and more than one card needs `pp` (cardsim::Error otherwise, saying
/// which to set).
lower::Plan plan_of(const boost::program_options::variables_map& vm, const card::CardConfig& config);

} // namespace cardsim::cli
