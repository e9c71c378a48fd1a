#pragma once
// The one place `run`, `compile` and `serve` ask the shim whether the card runs a model, so that
// none of them compiles or simulates what `cardsim check` refuses.

#include "engine/card/card_config.hpp"
#include "engine/graph/graph.hpp"

#include <filesystem>

namespace cardsim::cli {

/// Throws cardsim::Refusal listing every refusal (`MODEL_DIR: the card refuses this model:` then
/// one line each) when the card of `config` does not run `g`, the graph of the checkpoint at `dir`.
void require_card_runs(const graph::Graph& g, const card::CardConfig& config,
                       const std::filesystem::path& dir);

} // namespace cardsim::cli
