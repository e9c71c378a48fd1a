// `cardsim config [--config C] [--set k=v] [--knob k=v]`: the card config those options give, as
// canonical TOML (every key, `dotted.key = value`). `cardsim config --reference`: the reference of
// every key (type, default, range, documentation) as Markdown, which docs/config.md is.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "engine/card/config_reference.hpp"
#include "engine/error.hpp"

#include <fmt/core.h>

#include <cstdio>

namespace cardsim::cli {
namespace {

int run_config(std::span<const std::string> args) {
    boost::program_options::options_description opts("options");
    opts.add_options()("reference", "print the reference of every key as Markdown (docs/config.md)");
    opts.add(card_options());
    opts.add(knob_options());
    auto vm = parse("config", "[--config C] [--set k=v] [--knob k=v] | --reference", args, opts);
    if (vm.count("reference")) {
        // The reference documents the keys of the default config: a card option given with it would be
        // ignored, so it is refused, naming it.
        for (const auto& [name, value] : vm)
            if (name != "reference" && !value.defaulted())
                throw Error(fmt::format("cardsim config --reference: --{} does nothing there: the reference "
                                        "documents every key of the default config, whatever the card "
                                        "options set (drop --{}, or drop --reference to print the card "
                                        "config it gives)",
                                        name, name));
        const auto reference = card::config_reference(card::default_card_config_text());
        fmt::print("{}", reference.markdown);
        for (auto& key : reference.undocumented)
            fmt::print(stderr, "config --reference: `{}` has no documentation in configs/d5005.toml\n", key);
        return reference.undocumented.empty() ? Ok : Negative;
    }
    fmt::print("{}", card::canonical_text(load_card_any_system(vm, knob_overrides(vm))));
    return Ok;
}

const Register registered_config{
    {"config", "print the card config the options give, or the reference of every key", run_config}};

} // namespace
} // namespace cardsim::cli
