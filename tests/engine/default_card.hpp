#pragma once
// The default card's capabilities for shim tests: derived from the embedded configs/d5005.toml.

#include "engine/card/card_config.hpp"
#include "engine/shim/capabilities.hpp"

namespace cardsim::test {

/// The capabilities of the default D5005 card config.
inline shim::Capabilities default_card() {
    return shim::capabilities(card::default_card_config());
}

} // namespace cardsim::test
