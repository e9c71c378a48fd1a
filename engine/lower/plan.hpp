#pragma once
// Plans that split one model over several cards: each card's part and its lowering.

#include "engine/lower/lower.hpp"
#include "engine/lower/stage.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::lower {

/// How a model is split over the cards of a system: groups of `tensor` cards split every layer's
/// heads and MLP columns (tensor parallel, Megatron-style), and `stages` such groups split the
/// layers (pipeline parallel). One card is 1 × 1; `pp` is 1 × N, `tp` is N × 1. With `experts`
/// (`ep`, expert parallel) a group splits each Moe layer's experts by index instead of refusing them.
struct Plan {
    std::size_t tensor = 1, stages = 1;
    bool experts = false;
    std::size_t cards() const { return tensor * stages; }
    bool one() const { return cards() == 1; }
    bool operator==(const Plan&) const = default;
};

/// The plan spelled `text` for a system of `cards` cards: `one`, `pp` (1 × cards), `tp` (cards × 1),
/// `tp×pp` (or `tpxpp`: groups of 2, cards / 2 stages) or `tpT×ppP` (T × P, T · P = cards); `ep`,
/// `ep×pp` and `epT×ppP` alike with experts split by index. Anything else, or a split that does not
/// make `cards`, is a cardsim::Error saying what is accepted.
Plan parse_plan(std::string_view text, std::size_t cards);
/// Whether `text` spells a plan (`one`, `pp`, `tp`, `tp×pp`, `tpT×ppP`, or `ep` for `tp`), whatever
/// the card count.
bool spells_plan(std::string_view text);
/// The plan's spelling: `one`, `pp`, `tp`, `ep`, `tpTxppP` or `epTxppP` (ASCII, as a sweep's CSV
/// carries it).
std::string name(const Plan& plan);

/// Where plan `p` puts stage `stage`'s rank `rank`: stage s takes cards s·T .. s·T + T − 1, in rank
/// order on even stages and reversed on odd ones, so that on a ring of 2 × P cards each rank's
/// stages and each group's ranks are neighbours.
std::uint32_t card_of(const Plan& p, std::size_t stage, std::size_t rank);

/// Pipeline parallel over `cards` cards: the graph cut at layer boundaries (where the residual
/// stream alone crosses) so that each card's weights are as near an equal share of the whole as
/// whole layers allow; the embedding goes with the first card, the head with the last. A cut is
/// made only where every value crossing it is an activation of token rows; with more cards than
/// cut points, cardsim::Error saying how many layers the model has.
std::vector<Stage> pipeline_stages(const graph::Graph& g, const graph::WeightSource& weights,
                                   std::size_t cards);

/// Every card's part of plan `p`, in card order: `graphs[r]` is tensor rank r's graph
/// (models::build_shard; one graph when `p.tensor` is 1), cut into `p.stages` stages where rank 0's
/// graph balances (pipeline_stages; every rank's graph has the same ops, else cardsim::Error).
std::vector<Stage> system_stages(std::span<const graph::Graph* const> graphs,
                                 const graph::WeightSource& weights, const Plan& p);

/// Lowers each card of `stages` (options' probes must be empty) with its rank's graph of
/// `graphs`: each program holds its card's weights, caches and states only, receives and sends
/// the values crossing its cuts, and runs its group's collectives round the group's ring. A card
/// whose program does not fit its DDR is a cardsim::Refusal naming the card (none with
/// `refuse_over_capacity` false: what `check` shows).
std::vector<Compiled> lower_system(std::span<const graph::Graph* const> graphs,
                                   const graph::WeightSource& weights, const Target& target,
                                   const Options& options, const std::vector<Stage>& stages,
                                   bool refuse_over_capacity = true);

/// lower_system of pipeline `stages` of the one graph `g`.
std::vector<Compiled> lower_stages(const graph::Graph& g, const graph::WeightSource& weights,
                                   const Target& target, const Options& options,
                                   const std::vector<Stage>& stages);

/// Tensor parallel: lower_system of card k's graph `cards[k]` (models::build_shard) as rank k of
/// one group of all the cards.
std::vector<Compiled> lower_shards(std::span<const graph::Graph* const> cards,
                                   const graph::WeightSource& weights, const Target& target,
                                   const Options& options, bool refuse_over_capacity = true);

/// What each card of `stages` takes of its DDR, whether or not it fits (shapes only).
std::vector<Capacity> stage_capacity(const graph::Graph& g, const graph::WeightSource& weights,
                                     const Target& target, Options options, const std::vector<Stage>& stages);

} // namespace cardsim::lower
