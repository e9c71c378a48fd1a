#pragma once
// Loading a checkpoint directory: open it, recognise it, build its graph.

#include "models/build.hpp"
#include "models/checkpoint.hpp"
#include "models/recognise.hpp"
#include "models/spec.hpp"

#include <filesystem>

namespace cardsim::models {

/// An opened checkpoint and what it was recognised as.
struct Model {
    Checkpoint checkpoint;
    ModelSpec spec;
};

/// Opens and recognises the checkpoint directory `dir` (Checkpoint::open, then recognise); throws
/// cardsim::Error naming the file and what was expected.
Model load_model(const std::filesystem::path& dir);

/// The graph of `model` (build_graph over its checkpoint and spec).
BuiltGraph build_graph(const Model& model);

} // namespace cardsim::models
