#include "cli/shim_verdict.hpp"

#include "engine/error.hpp"
#include "engine/shim/check.hpp"

#include <fmt/core.h>

namespace cardsim::cli {

void require_card_runs(const graph::Graph& g, const card::CardConfig& config,
                       const std::filesystem::path& dir) {
    auto verdict = shim::check_model(g, shim::capabilities(config));
    if (verdict.runs()) return;
    std::string why = fmt::format("{}: the card refuses this model:", dir.string());
    for (auto& r : verdict.refusals)
        why += fmt::format("\n  {}", r.text());
    throw Refusal(why);
}

} // namespace cardsim::cli
