#include "traces/config_keys.hpp"

#include "engine/error.hpp"
#include "traces/lexical.hpp"

#include <fmt/core.h>

#include <set>

namespace cardsim::traces {
namespace {

/// The `key = value` lines of a canonical config text as a map from key to value.
std::map<std::string, std::string> canonical_keys(const card::CardConfig& config) {
    std::map<std::string, std::string> out;
    auto text = card::canonical_text(config);
    std::size_t at = 0;
    while (at < text.size()) {
        auto end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string_view line(text.data() + at, end - at);
        if (auto eq = line.find(" = "); eq != std::string_view::npos)
            out.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 3)));
        at = end + 1;
    }
    return out;
}

/// This build's default card: its digest and its keys.
struct DefaultCard {
    std::uint64_t digest;
    std::map<std::string, std::string> keys;
};

const DefaultCard& default_card() {
    static const DefaultCard d = [] {
        auto c = card::default_card_config();
        return DefaultCard{card::digest(c), canonical_keys(c)};
    }();
    return d;
}

} // namespace

bool is_config_meta(std::string_view meta_key) {
    return meta_key == config_default_key || meta_key.starts_with(config_key_prefix);
}

void record_config(Header& header, const card::CardConfig& config) {
    auto& base = default_card();
    for (auto& [key, value] : canonical_keys(config)) {
        auto d = base.keys.find(key);
        if (d == base.keys.end() || d->second != value)
            header.meta[std::string(config_key_prefix) + key] = value;
    }
    header.meta[std::string(config_default_key)] = hex16(base.digest);
}

RecordedConfigRead recorded_config(const Header& header) {
    RecordedConfig rc;
    bool any = false;
    for (auto& [k, v] : header.meta)
        if (k.starts_with(config_key_prefix)) {
            rc.keys.emplace(k.substr(config_key_prefix.size()), v);
            any = true;
        }
    auto base = header.meta.find(std::string(config_default_key));
    if (base == header.meta.end()) {
        if (!any) return {};
        return {std::nullopt, fmt::format("it records config keys (meta config.{} ...) but no {} line, "
                                          "expected the digest of the default card they are relative to",
                                          rc.keys.begin()->first, config_default_key)};
    }
    auto digest = parse_hex(base->second, 16);
    if (!digest)
        return {std::nullopt, fmt::format("meta {} is `{}`, expected 16 lowercase hex digits",
                                          config_default_key, escape(base->second))};
    rc.base = *digest;
    return {std::move(rc), std::nullopt};
}

std::optional<std::string> check_recorded_config(const RecordedConfig& recorded,
                                                 std::uint64_t config_digest) {
    auto& base = default_card();
    if (recorded.base != base.digest)
        return fmt::format("its config keys are relative to another default card (digest {}; this build's "
                           "is {}), so they are not checked against its config digest",
                           hex16(recorded.base), hex16(base.digest));
    std::string text;
    for (auto& [k, v] : recorded.keys)
        text += fmt::format("{} = {}\n", k, v);
    try {
        auto config = card::parse_card_config(text, "the trace's config keys");
        if (card::digest(config) != config_digest)
            return fmt::format("its config keys over the default card give the config digest {}, not the "
                               "header's {}: they do not describe its config",
                               card::digest_hex(config), hex16(config_digest));
    } catch (const Error& e) {
        return fmt::format("its config keys do not read as a card config: {}", e.what());
    }
    return std::nullopt;
}

std::vector<ConfigKeyDifference> config_differences(const RecordedConfig& a, const RecordedConfig& b) {
    auto& base = default_card();
    std::set<std::string> keys;
    for (auto& [k, v] : a.keys)
        keys.insert(k);
    for (auto& [k, v] : b.keys)
        keys.insert(k);
    auto value = [&](const RecordedConfig& side, const std::string& key) -> std::pair<std::string, bool> {
        if (auto it = side.keys.find(key); it != side.keys.end()) return {it->second, false};
        if (side.base == base.digest)
            if (auto d = base.keys.find(key); d != base.keys.end()) return {d->second, true};
        return {"default", true};
    };
    std::vector<ConfigKeyDifference> out;
    for (auto& k : keys) {
        auto [va, da] = value(a, k);
        auto [vb, db] = value(b, k);
        if (va != vb) out.push_back({k, va, vb, da, db});
    }
    return out;
}

} // namespace cardsim::traces
