#pragma once
// The card config's reference (docs/config.md): every key of the field table (config_fields.hpp)
// with its type, default, range and the documentation that configs/d5005.toml gives it.

#include <string>
#include <string_view>
#include <vector>

namespace cardsim::card {

/// The reference of the card config as Markdown, and the keys it found no documentation for.
struct ConfigReference {
    std::string markdown;
    std::vector<std::string> undocumented;
};

/// Builds the reference from the field table and the default config, documenting each key with
/// the comment block of `toml_text` (the default config's text) right above it, or above the run
/// of keys it belongs to (`count`, `width`, `latency` under one comment). A comment block that a
/// blank line separates from the next key is prose of the section it precedes. A key may be
/// documented commented out (`# tck_ps = 833.333`).
ConfigReference config_reference(std::string_view toml_text);

} // namespace cardsim::card
