#include "cli/plan_option.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <string>

namespace cardsim::cli {

namespace po = boost::program_options;

po::options_description plan_options() {
    po::options_description o("system of cards");
    o.add_options()("plan", po::value<std::string>()->value_name("PLAN"),
                    "split the model over the system.cards cards: pp (layers split across the cards, "
                    "activations handed card to card); tp (each layer's heads and MLP columns split "
                    "across the cards, an all-reduce a block, system.exchange); one (a single card, "
                    "the default)");
    return o;
}

lower::Plan plan_of(const po::variables_map& vm, const card::CardConfig& config) {
    const auto plan = vm.count("plan") ? lower::parse_plan(vm["plan"].as<std::string>()) : lower::Plan::One;
    const auto cards = config.system.cards;
    if (plan != lower::Plan::One && cards < 2)
        throw Error(fmt::format("--plan {} splits a model over system.cards cards, and system.cards = {}: "
                                "pass e.g. --set system.cards=2",
                                lower::name(plan), cards));
    if (plan == lower::Plan::One && cards > 1)
        throw Error(fmt::format("system.cards = {}: a system of several cards needs a plan that splits the "
                                "model over them: pass --plan pp or --plan tp",
                                cards));
    if (plan != lower::Plan::Tensor && config.system.exchange != card::Exchange::Exact)
        throw Error(fmt::format("system.exchange = {}: only a tensor-parallel plan (--plan tp) exchanges "
                                "partial sums between cards",
                                card::name(config.system.exchange)));
    return plan;
}

std::vector<models::BuiltGraph> tensor_shards(const models::Model& model, const card::CardConfig& config) {
    std::vector<models::BuiltGraph> out;
    for (std::size_t k = 0; k < config.system.cards; ++k)
        out.push_back(models::build_shard(model.checkpoint, model.spec,
                                          models::Shard{k, config.system.cards,
                                                        config.system.exchange == card::Exchange::Exact
                                                            ? graph::Exchange::Exact
                                                            : graph::Exchange::F32,
                                                        config.weights.block_size}));
    return out;
}

std::vector<const graph::Graph*> graphs_of(const std::vector<models::BuiltGraph>& shards) {
    std::vector<const graph::Graph*> out;
    for (auto& b : shards)
        out.push_back(&b.graph);
    return out;
}

} // namespace cardsim::cli
