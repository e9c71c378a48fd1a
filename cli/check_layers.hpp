#pragma once
// `--check-layers all|0,3,7`: which layers' outputs a run reads back and checks each step.

#include "engine/graph/probe.hpp"

#include <string>
#include <vector>

namespace cardsim::cli {

/// The probes `spec` asks for: `all` (every layer), or layer indices separated by commas or
/// spaces (`0,3,7`); each the layer's output (graph::layer_output), in layer order, without
/// repeats. Throws cardsim::Error naming `--check-layers` for a word that is not a layer index and
/// for a layer the model lacks.
std::vector<graph::Probe> layer_probes(const graph::Graph& g, const std::string& spec);

} // namespace cardsim::cli
