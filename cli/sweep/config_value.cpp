#include "cli/sweep/config_value.hpp"

namespace cardsim::cli::sweep {

ConfigValues::ConfigValues(const card::CardConfig& config)
    : table_(toml::parse(card::canonical_text(config))) {}

std::optional<Value> ConfigValues::get(std::string_view path) const {
    auto node = table_.at_path(path);
    if (auto i = node.as_integer()) return double(i->get());
    if (auto d = node.as_floating_point()) return d->get();
    if (auto s = node.as_string()) return s->get();
    if (auto b = node.as_boolean()) return b->get();
    return std::nullopt;
}

} // namespace cardsim::cli::sweep
