#include "models/model.hpp"

#include "models/tensors.hpp"

namespace cardsim::models {

Model load_model(const std::filesystem::path& dir, bool shapes_only) {
    if (shapes_only || !Checkpoint::has_weights(dir)) {
        Checkpoint c = Checkpoint::open_config(dir);
        ModelSpec spec = parse_config(c.config(), c.config_path());
        std::vector<TensorInfo> tensors;
        for (auto& t : expected_tensors(spec)) {
            TensorInfo info;
            info.name = t.name;
            info.dtype = Dtype::BF16;
            info.shape = t.shape;
            tensors.push_back(std::move(info));
        }
        c.declare(std::move(tensors));
        return Model{std::move(c), std::move(spec)};
    }
    Checkpoint c = Checkpoint::open(dir);
    ModelSpec spec = recognise(c);
    return Model{std::move(c), std::move(spec)};
}

BuiltGraph build_graph(const Model& model) {
    return build_graph(model.checkpoint, model.spec);
}

} // namespace cardsim::models
