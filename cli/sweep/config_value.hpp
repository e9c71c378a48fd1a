#pragma once
// The values of a card config's keys by dotted path, for constraint expressions that read keys
// the sweep does not vary (`skip_if = "ddr.channels * units.matvec.width > 4096"`).

#include "cli/sweep/expr.hpp"
#include "engine/card/card_config.hpp"

#include <toml++/toml.h>

#include <optional>
#include <string_view>

namespace cardsim::cli::sweep {

/// Every key of one card config (its canonical TOML), looked up by dotted path.
class ConfigValues {
public:
    explicit ConfigValues(const card::CardConfig& config);
    /// The value at `path` (integers and floats as numbers), or none when the config has no
    /// such key (or it names a table).
    std::optional<Value> get(std::string_view path) const;

private:
    toml::table table_;
};

} // namespace cardsim::cli::sweep
