#include "cli/card_options.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
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

card::CardConfig load_card_any_system(const po::variables_map& vm, std::span<const card::Override> extra) {
    std::optional<std::filesystem::path> file;
    if (vm.count("config")) file = vm["config"].as<std::string>();
    std::vector<card::Override> overrides;
    if (vm.count("set"))
        for (const auto& s : vm["set"].as<std::vector<std::string>>())
            overrides.push_back(card::parse_override(s));
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    return card::load_card_config(file, overrides);
}

card::CardConfig load_card(const po::variables_map& vm, std::span<const card::Override> extra) {
    auto config = load_card_any_system(vm, extra);
    // A command without --plan runs one card: a system of several is refused, never ignored.
    if (config.system.cards > 1 && !vm.count("plan"))
        throw Error(fmt::format(
            "system.cards = {}: this command runs one card; a system of several cards "
            "runs under --plan pp, tp, ep or tp×pp, which check, compile, run and serve take (docs/cards.md)",
            config.system.cards));
    // Nor is a card-to-card exchange without a plan that exchanges anything.
    if (config.system.exchange != card::Exchange::Exact && !vm.count("plan"))
        throw Error(fmt::format("system.exchange = {}: this command runs one card, which exchanges no "
                                "partial sums; the exchange is for --plan tp (docs/cards.md)",
                                card::name(config.system.exchange)));
    // Nor a topology or link of its own: one card has no link.
    if (!vm.count("plan")) {
        static const auto base = card::default_card_config(); // parsed once a process
        if (config.system.topology != base.system.topology)
            throw Error(fmt::format("system.topology = {}: this command runs one card, which has no links; "
                                    "the topology joins the cards of --plan (docs/cards.md)",
                                    card::name(config.system.topology)));
        const auto& l = config.link;
        const auto& d = base.link;
        for (auto [differs, key] :
             {std::pair{l.gbps != d.gbps, "gbps"},
              {l.latency_ns != d.latency_ns, "latency_ns"},
              {l.ports != d.ports, "ports"},
              {l.frame_payload_bytes != d.frame_payload_bytes, "frame_payload_bytes"},
              {l.frame_overhead_bytes != d.frame_overhead_bytes, "frame_overhead_bytes"},
              {l.switch_latency_ns != d.switch_latency_ns, "switch_latency_ns"}})
            if (differs)
                throw Error(fmt::format("link.{}: this command runs one card, which has no links; the link "
                                        "keys time the messages between the cards of --plan (docs/cards.md)",
                                        key));
    }
    return config;
}

void refuse_unread_sets(const po::variables_map& vm, std::span<const card::Override> extra,
                        std::string_view command, std::span<const std::string_view> read,
                        std::string_view why) {
    std::vector<card::Override> sets(extra.begin(), extra.end());
    if (vm.count("set"))
        for (const auto& s : vm["set"].as<std::vector<std::string>>())
            sets.push_back(card::parse_override(s));
    for (const auto& o : sets) {
        if (std::any_of(read.begin(), read.end(), [&](std::string_view r) { return o.path.starts_with(r); }))
            continue;
        throw Error(
            fmt::format("{}: {} reads {}, so nothing would read it (drop it)", o.where(), command, why));
    }
}

po::options_description knob_options() {
    po::options_description o("numerics");
    o.add_options()("knob", po::value<std::vector<std::string>>()->composing()->value_name("K=V"),
                    "numerics knob k=v (scaling, activations, state, cache, attention); the same as "
                    "--set numerics.k=v");
    return o;
}

std::vector<card::Override> knob_overrides(const po::variables_map& vm) {
    std::vector<card::Override> knobs;
    if (vm.count("knob"))
        for (auto& k : vm["knob"].as<std::vector<std::string>>()) {
            if (k.find('=') == std::string::npos || k.front() == '=')
                throw Error(fmt::format("--knob {}: expected key=value (e.g. --knob scaling=sub32)", k));
            auto o = card::parse_override(k);
            o.path = "numerics." + o.path;
            o.given = "--knob " + k;
            knobs.push_back(o);
        }
    return knobs;
}

} // namespace cardsim::cli
