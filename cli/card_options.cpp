#include "cli/card_options.hpp"

#include <optional>
#include <string>
#include <vector>

namespace cardsim::cli {

namespace po = boost::program_options;

po::options_description card_options() {
    po::options_description o("card config");
    o.add_options()("config", po::value<std::string>()->value_name("FILE"),
                    "card config (TOML) merged over the built-in D5005 default")(
        "set", po::value<std::vector<std::string>>()->composing()->value_name("PATH=VALUE"),
        "override one config key, e.g. --set ddr.channels=2 (repeatable)");
    return o;
}

card::CardConfig load_card(const po::variables_map& vm, std::span<const card::Override> extra) {
    std::optional<std::filesystem::path> file;
    if (vm.count("config")) file = vm["config"].as<std::string>();
    std::vector<card::Override> overrides;
    if (vm.count("set"))
        for (const auto& s : vm["set"].as<std::vector<std::string>>())
            overrides.push_back(card::parse_override(s));
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    return card::load_card_config(file, overrides);
}

} // namespace cardsim::cli
