#include "engine/card/card_config.hpp"

#include "engine/card/address_map.hpp"
#include "engine/card/config_fields.hpp"
#include "engine/card/config_reader.hpp"
#include "engine/error.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <sstream>

namespace cardsim::embedded {
extern const std::string_view default_card_config;
} // namespace cardsim::embedded

namespace cardsim::card {
namespace {

/// The name under which the built-in default appears in errors.
constexpr std::string_view builtin_source = "configs/d5005.toml (built in)";

/// Parses TOML text, turning a syntax error into a cardsim::Error naming the source and line.
toml::table parse_toml(std::string_view text, std::string_view source) {
    try {
        return toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        throw Error(fmt::format("{}:{}:{}: not valid TOML: {}", source, e.source().begin.line,
                                e.source().begin.column, e.description()));
    }
}

/// The TOML of one override: `path = value`, the value taken as TOML or else as a bare string.
toml::table override_table(const Override& o) {
    const std::string source = o.where();
    try {
        return toml::parse(o.path + " = " + o.value, source);
    } catch (const toml::parse_error&) {
    }
    std::string quoted = "\"";
    for (char ch : o.value) {
        if (ch == '"' || ch == '\\') quoted += '\\';
        quoted += ch;
    }
    quoted += '"';
    try {
        return toml::parse(o.path + " = " + quoted, source);
    } catch (const toml::parse_error&) {
        throw Error(
            fmt::format("{}: `{}` is not a dotted key path (expected e.g. ddr.channels=2)", source, o.path));
    }
}

/// Checks the combinations no single key's range can: the DDR geometry, the address map, the
/// interleave granule, refresh, tCK, the weight blocks; and a key that the rest of the config
/// leaves unread, set to other than its default (`defaults`), which would do nothing. Errors name
/// the key and where it was set.
void validate(const CardConfig& c, const CardConfig& defaults, const Origins& origins) {
    auto fail = [&](std::string_view key, const std::string& what) -> void {
        throw Error(fmt::format("{}: `{}`: {}", origins.where(key), key, what));
    };
    const auto& d = c.ddr;
    const auto& g = d.geometry;
    if (!std::has_single_bit(g.bank_groups)) fail("ddr.geometry.bank_groups", "expected a power of two");
    if (!std::has_single_bit(g.banks_per_group))
        fail("ddr.geometry.banks_per_group", "expected a power of two");
    if (g.banks() > 64)
        fail("ddr.geometry.banks_per_group",
             fmt::format("{} banks in all ({} groups x {}); expected at most 64", g.banks(), g.bank_groups,
                         g.banks_per_group));
    if (!std::has_single_bit(g.ranks)) fail("ddr.geometry.ranks", "expected a power of two");
    if (g.channel_banks() > 64)
        fail("ddr.geometry.ranks",
             fmt::format("{} ranks of {} banks; expected at most 64 banks per channel", g.ranks, g.banks()));
    const std::uint32_t burst = d.burst_bytes();
    if (!std::has_single_bit(g.row_bytes) || g.row_bytes < burst)
        fail("ddr.geometry.row_bytes",
             fmt::format("{} is not a power of two of at least one {}-byte burst", g.row_bytes, burst));
    const std::uint64_t bank_bytes = std::uint64_t{g.row_bytes} * g.channel_banks();
    if (d.channel_bytes() % bank_bytes != 0 || !std::has_single_bit(d.channel_bytes() / bank_bytes))
        fail("ddr.capacity_mib",
             fmt::format("{} MiB over {} banks of {}-byte rows is not a power-of-two number "
                         "of rows per bank",
                         d.capacity_mib, g.channel_banks(), g.row_bytes));
    if (d.channel_bytes() / bank_bytes > (std::uint64_t{1} << 32))
        fail("ddr.capacity_mib", "more than 2^32 rows per bank");
    try {
        (void)AddressMap::build(d);
    } catch (const Error& e) {
        fail("ddr.controller.address_map", fmt::format("\"{}\": {}", d.controller.address_map, e.what()));
    }
    if (d.interleave_bytes % burst != 0)
        fail("ddr.interleave_bytes",
             fmt::format("{} is not a multiple of the {}-byte burst", d.interleave_bytes, burst));
    if (d.timing.trefi <= d.timing.trfc)
        fail("ddr.timing.trefi",
             fmt::format("{} cycles is not more than trfc ({} cycles)", d.timing.trefi, d.timing.trfc));
    const auto& ctl = d.controller;
    // (FCFS reads no watermark: see below.)
    if (ctl.scheduler != SchedulerKind::Fcfs && ctl.write_queue > 0 &&
        ctl.write_high_watermark > ctl.write_queue) {
        // Named where the user set one of the two: the queue, when only it was given.
        const bool queue_only =
            origins.where("ddr.controller.write_high_watermark").starts_with(builtin_source) &&
            !origins.where("ddr.controller.write_queue").starts_with(builtin_source);
        if (queue_only)
            fail("ddr.controller.write_queue",
                 fmt::format("{} bursts is less than the write high watermark ({}); raise the queue or set "
                             "write_high_watermark to at most {}",
                             ctl.write_queue, ctl.write_high_watermark, ctl.write_queue));
        fail("ddr.controller.write_high_watermark", fmt::format("{} is more than the write queue ({} bursts)",
                                                                ctl.write_high_watermark, ctl.write_queue));
    }
    if (ctl.write_queue > 0 && ctl.write_high_watermark == 0)
        fail("ddr.controller.write_high_watermark",
             "0: a write batch starts once this many writes are queued; expected at least 1");
    if (ctl.write_low_watermark >= ctl.write_high_watermark && ctl.write_high_watermark > 0)
        fail("ddr.controller.write_low_watermark",
             fmt::format("{} is not below the high watermark ({}): a batch drains the write queue down to "
                         "it, so it must be lower",
                         ctl.write_low_watermark, ctl.write_high_watermark));
    if (auto tck = origins.derived("ddr.timing.tck_ps"); tck && std::abs(*tck - d.tck_ps()) > 0.5)
        fail("ddr.timing.tck_ps",
             fmt::format("{} ps disagrees with speed_mts {} (tCK {:.3f} ps)", *tck, d.speed_mts, d.tck_ps()));
    if (c.units[UnitKind::Dma].count == 0)
        fail("units.dma.count", "0: every program copies its outputs to the io region with the DMA unit, "
                                "expected 1..1024");
    const auto& w = c.weights;
    if (!std::has_single_bit(w.block_size)) fail("weights.block_size", "expected a power of two");
    if (w.group_size && *w.group_size % w.block_size != 0)
        fail("weights.group_size",
             fmt::format("{} is not a multiple of block_size {}", *w.group_size, w.block_size));
    if (w.group_size)
        fail("weights.group_size",
             fmt::format("{}: the matvec sums each output's whole row exactly, so the only group size is "
                         "\"row\"",
                         *w.group_size));
    // Features the shim knows but no command carries: refused rather than granted by `check` and
    // then missing from `run`.
    if (c.units.matvec.scale)
        fail("units.matvec.scale", "true: the matvec command has no scale operand, and no model the engine "
                                   "recognises scales a matvec's output; expected false");
    if (c.units.embed.scale)
        fail("units.embed.scale", "true: the embed command has no scale operand (an embedding scale, as "
                                  "Gemma-2's, is refused); expected false");
    if (c.capabilities.relu)
        fail("capabilities.relu", "true: the card has no ReLU command, and no model the engine recognises "
                                  "applies ReLU; expected false");
    // Keys only some settings read: set otherwise (to other than their default) they would do
    // nothing, so they are refused rather than accepted and ignored.
    const auto unread = [&](bool differs, std::string_view key, std::string_view why) {
        if (differs) fail(key, fmt::format("nothing reads it: {}; leave it out or at its default", why));
    };
    const auto& dc = defaults.ddr.controller;
    if (ctl.scheduler == SchedulerKind::Fcfs) {
        const char* why = "FCFS (ddr.controller.scheduler) serves bursts in arrival order from no per-bank "
                          "queue, so only FR-FCFS reads it";
        unread(ctl.bank_queue_depth != dc.bank_queue_depth, "ddr.controller.bank_queue_depth", why);
        unread(ctl.starvation_limit != dc.starvation_limit, "ddr.controller.starvation_limit", why);
        unread(ctl.stagger_row_switches != dc.stagger_row_switches, "ddr.controller.stagger_row_switches",
               why);
        unread(ctl.write_high_watermark != dc.write_high_watermark, "ddr.controller.write_high_watermark",
               why);
        unread(ctl.write_low_watermark != dc.write_low_watermark, "ddr.controller.write_low_watermark", why);
    } else if (ctl.write_queue == 0) {
        const char* why = "with write_queue = 0 writes are not posted and no write batch is gathered";
        unread(ctl.write_high_watermark != dc.write_high_watermark, "ddr.controller.write_high_watermark",
               why);
        unread(ctl.write_low_watermark != dc.write_low_watermark, "ddr.controller.write_low_watermark", why);
    }
    if (g.ranks == 1)
        unread(d.timing.trtrs != defaults.ddr.timing.trtrs, "ddr.timing.trtrs",
               "a channel of one rank (ddr.geometry.ranks = 1) never switches ranks");
    if (!c.capabilities.experts) {
        const char* why = "the router exists with experts only (capabilities.experts = false)";
        const auto& u = c.units[UnitKind::Router];
        const auto& du = defaults.units[UnitKind::Router];
        unread(u.count != du.count && u.count != 0, "units.router.count", why); // 0: what it reads as
        unread(u.width != du.width, "units.router.width", why);
        unread(u.latency != du.latency, "units.router.latency", why);
        unread(c.units.router != defaults.units.router, "units.router.resolve_latency", why);
        const auto &f = c.fit[UnitKind::Router], &df = defaults.fit[UnitKind::Router];
        unread(f.dsp_per_lane != df.dsp_per_lane, "fit.units.router.dsp_per_lane", why);
        unread(f.alm_per_lane != df.alm_per_lane, "fit.units.router.alm_per_lane", why);
        unread(f.alm_fixed != df.alm_fixed, "fit.units.router.alm_fixed", why);
        unread(f.m20k_fixed != df.m20k_fixed, "fit.units.router.m20k_fixed", why);
        unread(f.reduction != df.reduction, "fit.units.router.reduction", why);
    }
    if (c.fit.clock.full_mhz > c.fit.clock.base_mhz)
        fail(
            "fit.clock.full_mhz",
            fmt::format("{} MHz is above base_mhz ({} MHz): Fmax would rise as the device fills; expected at "
                        "most base_mhz",
                        c.fit.clock.full_mhz, c.fit.clock.base_mhz));
}

/// The default, then `text` (when given) merged over it, then the overrides; then validation.
CardConfig build_config(std::optional<std::string_view> text, std::string_view source,
                        std::span<const Override> overrides) {
    CardConfig config;
    Origins origins;
    {
        toml::table defaults = parse_toml(embedded::default_card_config, builtin_source);
        Reader reader(defaults, builtin_source, /*complete=*/true, origins);
        describe(reader, config);
        reader.finish();
    }
    const CardConfig defaults = config;
    if (text) {
        toml::table file = parse_toml(*text, source);
        Reader reader(file, source, /*complete=*/false, origins);
        describe(reader, config);
        reader.finish();
    }
    for (const auto& o : overrides) {
        toml::table t = override_table(o);
        const std::string where = o.where();
        Reader reader(t, where, /*complete=*/false, origins);
        describe(reader, config);
        reader.finish();
    }
    validate(config, defaults, origins);
    // The router exists with experts only: a card without them has none, whatever its section says.
    if (!config.capabilities.experts) config.units[UnitKind::Router].count = 0;
    return config;
}

} // namespace

std::string_view name(PagePolicy policy) {
    return policy == PagePolicy::Open ? "open" : "closed";
}
std::string_view name(SchedulerKind kind) {
    return kind == SchedulerKind::FrFcfs ? "frfcfs" : "fcfs";
}
std::string_view name(Topology topology) {
    return topology == Topology::Ring ? "ring" : topology == Topology::Pairs ? "pairs" : "switch";
}
std::string_view name(Exchange exchange) {
    return exchange == Exchange::Exact ? "exact" : "f32";
}
std::string_view name(ScaleKind kind) {
    return kind == ScaleKind::E8M0 ? "e8m0" : "f16";
}

Override parse_override(std::string_view text) {
    auto eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0)
        throw Error(fmt::format("--set {}: expected path=value (e.g. --set ddr.channels=2)", text));
    auto trim = [](std::string_view s) {
        while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
            s.remove_prefix(1);
        while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
            s.remove_suffix(1);
        return std::string(s);
    };
    return {trim(text.substr(0, eq)), trim(text.substr(eq + 1))};
}

std::string_view default_card_config_text() {
    return embedded::default_card_config;
}

CardConfig default_card_config() {
    return build_config(std::nullopt, {}, {});
}

CardConfig parse_card_config(std::string_view text, std::string_view source,
                             std::span<const Override> overrides) {
    return build_config(text, source, overrides);
}

/// The largest card config file read (the default is 20 KB).
constexpr std::uintmax_t max_config_bytes = 1 << 20;

CardConfig load_card_config(const std::optional<std::filesystem::path>& file,
                            std::span<const Override> overrides) {
    if (!file) return build_config(std::nullopt, {}, overrides);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*file, ec))
        throw Error(fmt::format("cannot read card config `{}`: {}", file->string(),
                                std::filesystem::is_directory(*file, ec)
                                    ? "it is a directory, expected a TOML file"
                                : std::filesystem::exists(*file, ec)
                                    ? "it is not a regular file (a device or a pipe), expected a TOML file"
                                    : "no such file"));
    if (auto size = std::filesystem::file_size(*file, ec); ec || size > max_config_bytes)
        throw Error(fmt::format("cannot read card config `{}`: {} bytes, a card config is at most {}",
                                file->string(), ec ? 0 : size, max_config_bytes));
    std::ifstream in(*file, std::ios::binary);
    if (!in) throw Error(fmt::format("cannot read card config `{}`: no such readable file", file->string()));
    std::ostringstream text;
    text << in.rdbuf();
    return parse_card_config(text.str(), file->string(), overrides);
}

std::string canonical_text(const CardConfig& config) {
    Writer writer;
    describe(writer, config);
    return writer.str();
}

std::uint64_t digest(const CardConfig& config) {
    Writer writer;
    writer.for_digest = true;
    describe(writer, config);
    const std::string text = writer.str();
    return XXH64(text.data(), text.size(), 0);
}

std::string digest_hex(const CardConfig& config) {
    return fmt::format("{:016x}", digest(config));
}

} // namespace cardsim::card
