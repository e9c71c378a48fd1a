#pragma once
// The config spellings of each numerics knob (for the config reference and help texts).

#include <string_view>
#include <vector>

namespace cardsim::numerics {

/// The config spellings of the knob called `key` (`scaling`, `activations`, `state`, `cache`,
/// `attention`), in declaration order; empty for an unknown key. Defined with the names in knob.cpp.
std::vector<std::string_view> knob_spellings(std::string_view key);

} // namespace cardsim::numerics
