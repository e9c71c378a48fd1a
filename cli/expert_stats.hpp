#pragma once
// What a run's routing did to each Moe layer: the experts a step touched, how evenly its rows
// spread over them, and the expert bytes streamed (the summary's `experts` lines).

#include "engine/card/card_config.hpp"
#include "engine/program/program.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cardsim::cli {

/// One Moe layer (router) over a run's steps, each figure the mean over the steps.
struct ExpertLayerStats {
    std::size_t router = 0, experts = 0, top_k = 0, rows = 0;
    double distinct = 0;  ///< experts touched a step
    double max_rows = 0;  ///< rows that chose the step's most chosen expert
    double imbalance = 0; ///< that over the mean rows per touched expert (1: even)
    double bytes = 0;     ///< expert bytes streamed a step: each touched expert's table entries and matrices
    /// Expert parallel: the expert bytes a step of the card streaming the most (0 when one card
    /// holds all the layer's experts); `bytes` over the cards is the even share.
    double busiest_card_bytes = 0;
    std::size_t cards = 1;        ///< the cards the layer's experts are split over
    std::size_t microbatches = 1; ///< the groups a decode step ran in (each streams what it touched)
};

/// The stats of each router of program `p` (its Route and ExpertMatvec commands) over `routing`
/// (per simulated step, per router: rows × top_k chosen experts), the matrices in `config`'s weight
/// format. A decode step is `micro` simulated steps (a pipeline's microbatches, each streaming the
/// experts its rows touched): the figures are per decode step, its rows every microbatch's.
std::vector<ExpertLayerStats>
expert_stats(const program::Program& p, const card::CardConfig& config,
             const std::vector<std::vector<std::vector<std::uint32_t>>>& routing, std::size_t micro = 1);

/// The expert bytes a decode step of the card streaming the most, over all the Moe layers it holds
/// (mean over the steps), and the cards holding a share of some layer's experts.
struct ExpertCardLoad {
    double busiest_card_bytes = 0;
    std::size_t cards = 0;
};

/// Fills each layer's `busiest_card_bytes` and `cards` in `stats` where `programs` (one a card of a
/// system) split its experts by index (ExpertMatvec commands holding fewer than the routed
/// experts), over `routing` as `expert_stats` takes it; returns the busiest card's load over all
/// its layers (a pipeline's stages hold different layers: the layers' busiest cards differ).
ExpertCardLoad expert_card_load(std::vector<ExpertLayerStats>& stats,
                                const std::vector<const program::Program*>& programs,
                                const card::CardConfig& config,
                                const std::vector<std::vector<std::vector<std::uint32_t>>>& routing,
                                std::size_t micro = 1);

/// The summary's lines: `experts: ...` and one line a layer (none without experts).
std::string expert_lines(const std::vector<ExpertLayerStats>& stats);

} // namespace cardsim::cli
