#include "models/model.hpp"

namespace cardsim::models {

Model load_model(const std::filesystem::path& dir) {
    Checkpoint c = Checkpoint::open(dir);
    ModelSpec spec = recognise(c);
    return Model{std::move(c), std::move(spec)};
}

BuiltGraph build_graph(const Model& model) {
    return build_graph(model.checkpoint, model.spec);
}

} // namespace cardsim::models
