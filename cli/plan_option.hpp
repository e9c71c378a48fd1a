#pragma once
// `--plan pp|tp|ep|tp×pp`: how check, compile and run split a model over the cards of `[system]`,
// and each card's part lowered.

#include "engine/card/card_config.hpp"
#include "engine/lower/plan.hpp"
#include "models/model.hpp"

#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace cardsim::cli {

/// `--plan one|pp|tp|ep|tp×pp|tpT×ppP|ep×pp|epT×ppP`.
boost::program_options::options_description plan_options();

/// The plan the parsed options ask for, checked against the config's card count: a plan needs
/// `system.cards` of at least 2, more than one card needs a plan, and `system.exchange` other than
/// exact needs tensor parallel (cardsim::Error otherwise, saying which to set).
lower::Plan plan_of(const boost::program_options::variables_map& vm, const card::CardConfig& config);

/// Each rank's graph of `model` under tensor parallel over `ranks` cards, joined as
/// `system.exchange` says, split on the weights' scale blocks, each Moe layer's experts split by
/// index when `experts` (models::build_shard; what no split keeps exact is a cardsim::Refusal).
std::vector<models::BuiltGraph> tensor_shards(const models::Model& model, const card::CardConfig& config,
                                              std::size_t ranks, bool experts = false);

/// Pointers to the graphs of `shards`, in card order.
std::vector<const graph::Graph*> graphs_of(const std::vector<models::BuiltGraph>& shards);

/// A plan's parts before lowering: each tensor rank's graph (`shards`, none when the plan splits
/// no heads), the graph each rank runs (`graphs`: the whole graph or the shards), every card's
/// stage in card order, and each card's part in words.
struct PlanParts {
    std::vector<models::BuiltGraph> shards;
    std::vector<const graph::Graph*> graphs;
    std::vector<lower::Stage> stages;
    std::vector<std::string> parts;
    /// The graph card `k` runs.
    const graph::Graph& graph_of(std::size_t k) const { return *graphs[stages[k].rank]; }
};

/// The parts of plan `plan` (not one card) of `model`, whose whole graph is `whole` (tensor ranks'
/// graphs by tensor_shards, cut into stages by lower::system_stages).
PlanParts plan_parts(const lower::Plan& plan, const models::Model& model, const graph::Graph& whole,
                     const card::CardConfig& config);

/// Makes the io of `last` (the program of a tensor-parallel plan's last card, whose values are its
/// rank's graph's) name the whole graph `whole`'s values, by role: its outputs (logits, next, act)
/// are the whole graph's, which the golden executor and the reference compute.
void name_whole_graph_outputs(program::Loaded& last, const graph::Graph& whole);

/// A plan's cards, lowered: each card's program (card order), its part of the model in words,
/// its stage, and (under tensor parallel) each rank's graph.
struct PlannedCards {
    std::vector<lower::Compiled> cards;
    std::vector<std::string> parts;
    std::vector<lower::Stage> stages;
    std::vector<models::BuiltGraph> shards;
};

/// Lowers `model` (its whole graph `whole`) for plan `plan` (not one card) with `options`: tensor
/// ranks' graphs (tensor_shards), cut into stages (lower::system_stages), each card lowered
/// (lower::lower_system; a card over its DDR is a cardsim::Refusal naming it unless
/// `refuse_over_capacity` is false, as `check` shows it).
/// The groups a pipeline steps a decode step's `seqs` sequences in when the run names none: the
/// largest divisor of the sequences up to the plan's stages (1 without a pipeline, or for an
/// encoder). `run` steps them so, and `check` budgets what it lowers.
std::size_t default_microbatches(const lower::Plan& plan, std::size_t seqs, bool decoder);
/// The microbatches a step of `seqs` sequences runs in under `plan`: `given` (--microbatches: a
/// divisor of the sequences, above 1 only under a pipeline; else a cardsim::Error saying so) or
/// `default_microbatches`. `run` and `check` take them alike.
std::size_t microbatches_of(const lower::Plan& plan, std::size_t seqs, bool decoder,
                            std::optional<std::size_t> given);

PlannedCards lower_plan(const lower::Plan& plan, const models::Model& model, const graph::Graph& whole,
                        const card::CardConfig& config, const lower::Options& options,
                        bool refuse_over_capacity = true);

} // namespace cardsim::cli
