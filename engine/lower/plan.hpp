#pragma once
// Plans that split one model over several cards: each card's part and its lowering.

#include "engine/lower/lower.hpp"
#include "engine/lower/stage.hpp"

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace cardsim::lower {

/// How a model is split over the cards of a system: not at all (one card), by layers (pipeline),
/// or by heads and columns (tensor parallel, Megatron-style).
enum class Plan { One, Pipeline, Tensor };

/// The plan spelled `text` (`pp`, `tp`, `one`), or a cardsim::Error listing the spellings.
Plan parse_plan(std::string_view text);
/// The spelling of a plan (`one`, `pp`, `tp`).
std::string_view name(Plan plan);

/// Pipeline parallel over `cards` cards: the graph cut at layer boundaries (where the residual
/// stream alone crosses) so that each card's weights are as near an equal share of the whole as
/// whole layers allow; the embedding goes with the first card, the head with the last. A cut is
/// made only where every value crossing it is an activation of token rows; with more cards than
/// cut points, cardsim::Error saying how many layers the model has.
std::vector<Stage> pipeline_stages(const graph::Graph& g, const graph::WeightSource& weights,
                                   std::size_t cards);

/// One lowering a card of `stages` (options' probes must be empty): each program holds its card's
/// weights, caches and states only, and receives and sends the values crossing its cuts. A card
/// whose program does not fit its DDR is a cardsim::Refusal naming the card; with
/// `refuse_over_capacity` false none is refused (what `check` shows).
std::vector<Compiled> lower_stages(const graph::Graph& g, const graph::WeightSource& weights,
                                   const Target& target, const Options& options,
                                   const std::vector<Stage>& stages);

/// Tensor parallel: lowers card k's graph `cards[k]` (models::build_shard) as card k of the plan:
/// its collectives become sends and receives round the ring. Each program holds its card's share
/// of the weights and caches; a card whose program does not fit its DDR is a cardsim::Refusal
/// naming the card (none with `refuse_over_capacity` false).
std::vector<Compiled> lower_shards(std::span<const graph::Graph* const> cards,
                                   const graph::WeightSource& weights, const Target& target,
                                   const Options& options, bool refuse_over_capacity = true);

/// What each card of `stages` takes of its DDR, whether or not it fits (shapes only).
std::vector<Capacity> stage_capacity(const graph::Graph& g, const graph::WeightSource& weights,
                                     const Target& target, Options options, const std::vector<Stage>& stages);

} // namespace cardsim::lower
