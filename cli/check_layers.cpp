#include "cli/check_layers.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <set>
#include <sstream>

namespace cardsim::cli {

std::vector<graph::Probe> layer_probes(const graph::Graph& g, const std::string& spec) {
    const std::size_t layers = graph::layer_count(g);
    std::set<std::size_t> want;
    std::string text = spec;
    for (auto& c : text)
        if (c == ',') c = ' ';
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
        if (word == "all") {
            for (std::size_t l = 0; l < layers; ++l)
                want.insert(l);
            continue;
        }
        std::size_t used = 0, v = 0;
        try {
            v = std::stoul(word, &used);
        } catch (...) {
            used = 0;
        }
        if (used != word.size() || word[0] == '-' || word[0] == '+')
            throw Error(
                fmt::format("--check-layers: `{}` is not a layer index (expected `all` or indices, e.g. "
                            "0,3,7)",
                            word));
        if (v >= layers)
            throw Error(
                layers ? fmt::format("--check-layers: the model has no layer {} (its layers are 0 .. {})", v,
                                     layers - 1)
                       : fmt::format("--check-layers: the model has no layers, so no layer {}", v));
        want.insert(v);
    }
    if (want.empty()) throw Error("--check-layers: no layer given (expected `all` or indices, e.g. 0,3,7)");
    std::vector<graph::Probe> probes;
    for (auto l : want)
        probes.push_back(graph::layer_output(g, l));
    return probes;
}

} // namespace cardsim::cli
