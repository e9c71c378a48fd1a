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
/// cardsim::Error naming the file and what was expected. A directory with config.json and no
/// safetensors, or any directory when `shapes_only`, is opened for its config alone: its tensors are
/// the ones the config implies (`expected_tensors`, default prefix, bf16), with no weights
/// (`Checkpoint::shapes_only`): enough to build, check, lower and time the model, not to compute it.
Model load_model(const std::filesystem::path& dir, bool shapes_only = false);

/// The graph of `model` (build_graph over its checkpoint and spec).
BuiltGraph build_graph(const Model& model);

} // namespace cardsim::models
