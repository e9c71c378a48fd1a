#include "models/build.hpp"

#include "engine/error.hpp"
#include "models/tensors.hpp"

#include <fmt/format.h>

namespace cardsim::models {

std::map<std::string, graph::W> bind_tensors(const Checkpoint& checkpoint, const ModelSpec& spec) {
    std::map<std::string, graph::W> out;
    // A config implying far more tensors than there are (a corrupt layer or expert count) fails
    // before they are listed; otherwise the first missing tensor is named below.
    if (const std::size_t n = expected_tensor_count(spec); n > 2 * checkpoint.tensor_count() + 1024)
        throw Error(fmt::format("{}: config.json makes a {} of {} tensors, but the checkpoint holds {}",
                                checkpoint.dir().string(), describe(spec), n, checkpoint.tensor_count()));
    for (const auto& t : expected_tensors(spec)) {
        auto w = checkpoint.find(t.name);
        if (!w)
            throw Error(
                fmt::format("{}: a {} checkpoint needs tensor `{}` of shape [{}], which it does not hold",
                            checkpoint.dir().string(), describe(spec), t.name, fmt::join(t.shape, ", ")));
        auto shape = checkpoint.shape(*w);
        if (!std::equal(shape.begin(), shape.end(), t.shape.begin(), t.shape.end()))
            throw Error(fmt::format("{}: tensor `{}` has shape [{}] but config.json makes it [{}]",
                                    checkpoint.file_of(*w), t.name, fmt::join(shape, ", "),
                                    fmt::join(t.shape, ", ")));
        out.emplace(t.name, *w);
    }
    return out;
}

BuiltGraph build_graph(const Checkpoint& checkpoint, const ModelSpec& spec) {
    const auto tensors = bind_tensors(checkpoint, spec);
    BuiltGraph b = std::holds_alternative<DecoderSpec>(spec)
                       ? build_decoder(std::get<DecoderSpec>(spec), tensors)
                       : build_encoder(std::get<EncoderSpec>(spec), tensors);
    if (auto problem = graph::check(b.graph))
        throw std::logic_error(fmt::format("the {} graph fails its check: {}", describe(spec), *problem));
    return b;
}

std::optional<std::string> shard_refusal(const ModelSpec& spec) {
    if (std::holds_alternative<DecoderSpec>(spec)) return std::nullopt;
    return fmt::format(
        "--plan tp (and ep) splits a decoder's heads and MLP over the cards, and this model is "
        "not a decoder: {}",
        describe(spec));
}

BuiltGraph build_shard(const Checkpoint& checkpoint, const ModelSpec& spec, const Shard& shard) {
    if (auto why = shard_refusal(spec)) throw Error(*why);
    const auto tensors = bind_tensors(checkpoint, spec);
    BuiltGraph b = build_decoder_shard(std::get<DecoderSpec>(spec), tensors, shard);
    if (auto problem = graph::check(b.graph))
        throw std::logic_error(fmt::format("card {}'s graph of the {} fails its check: {}", shard.card,
                                           describe(spec), *problem));
    return b;
}

} // namespace cardsim::models
