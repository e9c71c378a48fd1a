// Fuzz target: a card config (TOML) and `--set` overrides. The input's first line holds the
// overrides, separated by `;` (`ddr.channels=2;sram.bytes=1`); the rest is the TOML text.
#include "engine/card/card_config.hpp"
#include "fuzz/support.hpp"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto in = cardsim::fuzz::text(data, size);
    auto nl = in.find('\n');
    auto sets = in.substr(0, nl),
         toml = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
    return cardsim::fuzz::refusing([&] {
        std::vector<cardsim::card::Override> overrides;
        for (std::size_t at = 0; at < sets.size();) {
            auto end = std::min(sets.find(';', at), sets.size());
            if (end > at) overrides.push_back(cardsim::card::parse_override(sets.substr(at, end - at)));
            at = end + 1;
        }
        auto config = cardsim::card::parse_card_config(toml, "fuzz.toml", overrides);
        (void)cardsim::card::digest(config);
    });
}
