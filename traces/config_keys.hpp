#pragma once
// The card config a trace was run on, by key, in its header's meta lines (traces/FORMAT.md section
// 5, "Recorded config keys"): `config.KEY=VALUE` for every key whose value differs from the built-in
// default card, and `config_default=H`, the digest of the default they are relative to.

#include "engine/card/card_config.hpp"
#include "traces/trace.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::traces {

/// The meta key prefix of a recorded config key (`config.ddr.channels`).
inline constexpr std::string_view config_key_prefix = "config.";
/// The meta key of the digest of the default card the recorded keys are relative to.
inline constexpr std::string_view config_default_key = "config_default";

/// The config keys a header records: the digest of the default card they are relative to, and
/// each key (dotted, without the `config.` prefix) that differs from it, with its value in the
/// config's canonical TOML spelling (`2`, `"closed"`, `true`). A key not listed has the default's
/// value.
struct RecordedConfig {
    std::uint64_t base = 0;
    std::map<std::string, std::string> keys;
};

/// Adds to `header.meta` the keys of `config` that differ from the built-in default card, and
/// the default's digest.
void record_config(Header& header, const card::CardConfig& config);

/// What a header's meta lines say of its config: the recorded keys, or why they cannot be used.
struct RecordedConfigRead {
    std::optional<RecordedConfig> config; ///< nothing when the header records no keys or a problem
    std::optional<std::string> problem;   ///< a malformed record, as a sentence
};

/// The config keys `header` records. Nothing when it records none (a trace written before they
/// were recorded, or by a harness that does not); a problem when a `config.*` key comes without a
/// `config_default` line or `config_default` is not 16 lowercase hex digits.
RecordedConfigRead recorded_config(const Header& header);

/// Whether the recorded keys, applied over this build's default card, give the header's config
/// digest: nothing when they do, else the reason (another default card, a key or value this
/// build does not know, a different digest), as a sentence.
std::optional<std::string> check_recorded_config(const RecordedConfig& recorded, std::uint64_t config_digest);

/// One config key whose value differs between two headers. A side's value is its recorded one,
/// or, when it records none for the key, the default card's; `a_default` / `b_default` say which.
struct ConfigKeyDifference {
    std::string key;
    std::string a, b;
    bool a_default = false, b_default = false;
};

/// The keys whose values differ between the recorded configs `a` and `b`, sorted by key. A key
/// recorded on one side only takes the default card's value on the other: this build's default
/// value when that side's base is this build's default card, else `default` (the value is not
/// known here).
std::vector<ConfigKeyDifference> config_differences(const RecordedConfig& a, const RecordedConfig& b);

/// Whether `meta_key` is one of the recorded-config keys (`config.*` or `config_default`).
bool is_config_meta(std::string_view meta_key);

} // namespace cardsim::traces
