// `cardsim ddr`: the card's DDR4 model on its own. `ddr replay TRACE` plays a memory trace
// (DRAMSim3, DRAMSys .stl or cardsim format) through the model and prints a summary; `ddr gen
// PATTERN` writes the standard patterns as traces in any of the formats.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "cli/ddr_trace_options.hpp"
#include "cli/output_paths.hpp"
#include "engine/error.hpp"
#include "sim/memory/replay.hpp"
#include "sim/memory/trace_format.hpp"
#include "sim/memory/trace_patterns.hpp"

#include <boost/any.hpp>
#include <fmt/core.h>

#include <array>
#include <charconv>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::cli {
namespace {

namespace po = boost::program_options;
namespace mem = cardsim::sim::memory;

/// A byte count or address: decimal or 0x-hex, with an optional K, M, G (binary) suffix.
std::uint64_t parse_bytes(const std::string& option, const std::string& text) {
    std::string_view s = text;
    std::uint64_t scale = 1;
    if (!s.empty()) {
        switch (s.back()) {
        case 'K':
        case 'k':
            scale = 1ull << 10;
            break;
        case 'M':
        case 'm':
            scale = 1ull << 20;
            break;
        case 'G':
        case 'g':
            scale = 1ull << 30;
            break;
        default:
            break;
        }
        if (scale != 1) s.remove_suffix(1);
    }
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s.remove_prefix(2);
        base = 16;
    }
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size() ||
        (v != 0 && v > ~std::uint64_t{0} / scale))
        throw Error(fmt::format("--{} {}: expected a byte count such as 4096, 0x1000, 64K, 256M or 1G",
                                option, text));
    return v * scale;
}

/// `R:W`, e.g. 2:1.
std::pair<std::uint32_t, std::uint32_t> parse_ratio(const std::string& text) {
    auto colon = text.find(':');
    std::uint32_t r = 0, w = 0;
    auto ok = [](std::string_view s, std::uint32_t& v) {
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        return !s.empty() && ec == std::errc{} && p == s.data() + s.size();
    };
    if (colon == std::string::npos || !ok(std::string_view(text).substr(0, colon), r) ||
        !ok(std::string_view(text).substr(colon + 1), w) || r + w == 0)
        throw Error(fmt::format("--ratio {}: expected READS:WRITES such as 2:1 or 1:0", text));
    return {r, w};
}

mem::TraceFormat format_option(const std::string& text) {
    auto f = mem::parse_trace_format(text);
    if (!f) throw Error(fmt::format("--format {}: expected dramsim3, dramsys or cardsim", text));
    return *f;
}

/// The trace context of a card config and the options: clocks, request size, address range.
mem::TraceContext context_of(const card::CardConfig& card, const po::variables_map& vm) {
    const std::uint32_t player_mhz = vm.count("player-mhz") ? vm["player-mhz"].as<std::uint32_t>() : 0;
    if (vm.count("player-mhz") && player_mhz == 0) throw Error("--player-mhz: expected a clock above 0 MHz");
    mem::TraceContext ctx = trace_context(card, player_mhz);
    if (vm.count("request-bytes")) ctx.request_bytes = vm["request-bytes"].as<std::uint32_t>();
    if (ctx.request_bytes == 0) throw Error("--request-bytes: expected at least 1 byte");
    return ctx;
}

/// `--name VALUE` as the user gave it, for a message.
std::string option_text(const po::variables_map& vm, const char* name) {
    const auto& v = vm[name].value();
    if (const auto* s = boost::any_cast<std::string>(&v)) return fmt::format("--{} {}", name, *s);
    if (const auto* n = boost::any_cast<std::uint32_t>(&v)) return fmt::format("--{} {}", name, *n);
    if (const auto* n = boost::any_cast<std::uint64_t>(&v)) return fmt::format("--{} {}", name, *n);
    return fmt::format("--{}", name);
}

/// `--request-bytes` where the trace format does not read it: a cardsim trace carries each
/// request's length. `action`: what to do instead ("write" or "replay").
void refuse_request_bytes(const po::variables_map& vm, mem::TraceFormat format, const char* action) {
    if (format == mem::TraceFormat::Cardsim && vm.count("request-bytes"))
        throw Error(fmt::format("{}: a cardsim trace carries each request's length, so it does nothing "
                                "here (it sizes DRAMSim3 requests and DRAMSys requests without a length); "
                                "leave it out, or {} a --format dramsim3 or dramsys trace",
                                option_text(vm, "request-bytes"), action));
}

/// What a trace format's times count, for a message on `--player-mhz`.
const char* times_of(mem::TraceFormat format) {
    return format == mem::TraceFormat::Cardsim ? "picoseconds" : "cycles of the memory clock";
}

po::options_description trace_clock_options() {
    po::options_description o("trace clocks");
    o.add_options()(
        "request-bytes", po::value<std::uint32_t>()->value_name("B"),
        "bytes of a DRAMSim3 request, and of a DRAMSys request without (LEN) (default: one burst, 64)")(
        "player-mhz", po::value<std::uint32_t>()->value_name("MHZ"),
        "clock of DRAMSys .stl timestamps (default: the memory clock, 1200)");
    return o;
}

int replay(std::span<const std::string> args) {
    po::options_description o("ddr replay");
    o.add_options()("trace", po::value<std::string>()->required(), "the memory trace")(
        "format", po::value<std::string>()->default_value("auto"),
        "dramsim3 | dramsys | cardsim | auto (detect)")("channels",
                                                        po::value<std::uint32_t>()->value_name("N"),
                                                        "DDR channels (same as --set ddr.channels=N)")(
        "pace", po::value<std::string>()->default_value("closed"),
        "closed: as fast as the model accepts; timed: at the trace's timestamps")(
        "outstanding", po::value<std::uint32_t>()->default_value(64),
        "requests in flight at most (0 = unbounded)")(
        "blocking", "hand each request over as the card's units do (blocking TLM transport: served with what "
                    "the controller holds when it arrives) instead of queued (the controller reorders over "
                    "every request in flight)")(
        "user-port",
        "time the requests through the card's user port (ddr.port_bits at clock.kernel_mhz), as the "
        "card's units reach the channels: what a card run's export needs to replay to its time; "
        "without it the trace drives the controllers at the EMIF's own interface, as DRAMSys and "
        "DRAMSim3 are driven");
    o.add(card_options());
    o.add(trace_clock_options());
    o.add(ddr_trace_options());
    const char* const positional[] = {"trace"};
    auto vm = parse("ddr replay", "TRACE [options]", args, o, positional);
    if (vm.count("channels") && vm.count("set"))
        for (const auto& s : vm["set"].as<std::vector<std::string>>())
            if (card::parse_override(s).path == "ddr.channels")
                throw Error(fmt::format("{} and --set {} both give the channel count; give one of them",
                                        option_text(vm, "channels"), s));
    std::vector<card::Override> extra;
    if (vm.count("channels"))
        extra.push_back({"ddr.channels", std::to_string(vm["channels"].as<std::uint32_t>())});
    const card::CardConfig card = load_card(vm, extra);
    // The port's width and clock time nothing at the EMIF's own interface: refused there, not
    // ignored, however they were given (--set, a --config file, a table).
    if (!vm.count("user-port")) {
        const auto& d = card::default_card_config();
        for (const auto& [differs, key, value] :
             {std::tuple{card.ddr.port_bits != d.ddr.port_bits, "ddr.port_bits",
                         fmt::format("{}", card.ddr.port_bits)},
              std::tuple{card.clock.kernel_mhz != d.clock.kernel_mhz, "clock.kernel_mhz",
                         fmt::format("{}", card.clock.kernel_mhz)}})
            if (differs)
                throw Error(fmt::format("{} = {}: it sets the card's user port, and this replay drives the "
                                        "controllers at the EMIF's own interface, without it (give "
                                        "--user-port, or leave {} at its default)",
                                        key, value, key));
    }
    // The replay times the DDR alone: the units, the SRAM, the links, the numerics and the fit
    // estimates are read by nothing here.
    constexpr std::array<std::string_view, 2> replay_reads{"ddr.", "clock.kernel_mhz"};
    refuse_unread_sets(vm, extra, "ddr replay", replay_reads,
                       "the [ddr] keys alone (and, with --user-port, clock.kernel_mhz)");
    const std::string path = vm["trace"].as<std::string>();
    Outputs outputs; // checked before any work; a partial export removed if the replay fails
    if (vm.count("ddr-trace")) outputs.file("--ddr-trace", vm["ddr-trace"].as<std::string>());
    const std::string fmt_text = vm["format"].as<std::string>();
    const mem::TraceFormat format =
        fmt_text == "auto" ? mem::detect_trace_format(path) : format_option(fmt_text);
    mem::PlayerOptions options;
    const std::string pace = vm["pace"].as<std::string>();
    if (pace == "closed")
        options.pacing = mem::Pacing::Closed;
    else if (pace == "timed")
        options.pacing = mem::Pacing::Timed;
    else
        throw Error(fmt::format("--pace {}: expected closed or timed", pace));
    options.outstanding = vm["outstanding"].as<std::uint32_t>();
    options.blocking = vm.count("blocking") > 0;
    // --request-bytes sizes the requests of DRAMSim3 lines and of DRAMSys lines without a length
    // (an export has its own, --ddr-trace-bytes). --player-mhz is the clock of DRAMSys cycles: of
    // the trace's times, which only timed pacing reads, and of a DRAMSys export's.
    refuse_request_bytes(vm, format, "replay");
    const auto export_request = ddr_trace_request(vm, card);
    const bool exports_dramsys = export_request && export_request->spec.format == mem::TraceFormat::DramSys;
    if (vm.count("player-mhz") && !exports_dramsys) {
        if (format != mem::TraceFormat::DramSys)
            throw Error(fmt::format("{}: {} trace times are {}, so it does nothing here (it is the clock "
                                    "of DRAMSys cycles); leave it out, or replay a --format dramsys trace "
                                    "or export one with --ddr-trace-format dramsys",
                                    option_text(vm, "player-mhz"), mem::name(format), times_of(format)));
        if (options.pacing == mem::Pacing::Closed)
            throw Error(fmt::format("{}: closed pacing sends each request as the model accepts it, never "
                                    "at the trace's times, so it does nothing here; leave it out, or "
                                    "replay with --pace timed",
                                    option_text(vm, "player-mhz")));
    }

    const mem::TraceContext context = context_of(card, vm);
    {
        // The whole trace is read once first, here on the host's stack: a malformed line is an
        // error before any simulation, and it is never thrown inside the player's SystemC thread
        // (whose stack switches AddressSanitizer cannot follow: google/sanitizers#189).
        mem::TraceReader check(path, format, context);
        mem::MemRequest r;
        while (check.next(r)) {
        }
    }
    mem::TraceReader reader(path, format, context);
    mem::ReplayHarness harness(card.ddr);
    const bool user_port = vm.count("user-port") > 0;
    if (user_port) harness.memory().set_user_port(mem::user_port_lane(card.ddr, card.clock.kernel_mhz));
    // Re-export: what the memory receives, at the cycle it arrives, in another format or split.
    std::optional<mem::TraceExporter> exporter;
    if (export_request) {
        if (std::filesystem::weakly_canonical(export_request->path) ==
            std::filesystem::weakly_canonical(path))
            throw Error(
                fmt::format("--ddr-trace {}: the trace being replayed; write the export elsewhere", path));
        exporter.emplace(export_request->path, export_request->spec, card.ddr, context);
        harness.memory().set_observer(&*exporter);
    }
    const mem::ReplayResult result = harness.run(reader, options);
    harness.memory().set_observer(nullptr);
    if (exporter) exporter->close();
    outputs.keep();
    fmt::print("trace           {} ({}, {} lines)\n", path, mem::name(format), reader.line());
    fmt::print("card            {} (config {}), {} x DDR4-{} channels, {} scheduler, {} pacing, {} "
               "outstanding{}{}\n",
               card.name, card::digest_hex(card), card.ddr.channels, card.ddr.speed_mts,
               card::name(card.ddr.controller.scheduler), pace,
               options.outstanding ? std::to_string(options.outstanding) : std::string("unbounded"),
               options.blocking ? ", blocking" : "",
               user_port
                   ? fmt::format(", {}-bit user port at {:g} MHz", card.ddr.port_bits, card.clock.kernel_mhz)
                   : std::string());
    fmt::print("{}", mem::format_summary(result, card.ddr));
    if (exporter) fmt::print("{}", ddr_trace_text(*exporter, card.ddr, result.channels));
    return Ok;
}

int gen(std::span<const std::string> args) {
    po::options_description o("ddr gen");
    o.add_options()("pattern", po::value<std::string>()->required(), "sequential | random | streams | mix")(
        "output,o", po::value<std::string>()->required()->value_name("FILE"), "the trace to write")(
        "format", po::value<std::string>()->default_value("cardsim"), "dramsim3 | dramsys | cardsim")(
        "count", po::value<std::uint64_t>()->default_value(1 << 20),
        "requests")("size", po::value<std::string>()->default_value("64"), "bytes per request")(
        "base", po::value<std::string>()->default_value("0"), "first byte of the region")(
        "span", po::value<std::string>()->default_value("1G"),
        "bytes of the region")("streams", po::value<std::uint32_t>()->default_value(4),
                               "streams: how many")("stride", po::value<std::string>()->default_value("0"),
                                                    "bytes between a stream's requests (0 = size)")(
        "spacing", po::value<std::string>()->default_value("0"),
        "streams: bytes between bases (0 = span / streams)")("ratio", po::value<std::string>(),
                                                             "READS:WRITES (default 1:0; mix 2:1)")(
        "gap", po::value<std::uint64_t>()->default_value(0), "memory cycles between timestamps")(
        "seed", po::value<std::uint64_t>()->default_value(1), "random: seed");
    o.add(card_options());
    o.add(trace_clock_options());
    const char* const positional[] = {"pattern"};
    auto vm = parse("ddr gen", "PATTERN -o FILE [options]", args, o, positional);
    const card::CardConfig card = load_card(vm);
    Outputs outputs; // checked before any work; the partial trace removed if generating fails
    outputs.file("-o", vm["output"].as<std::string>());
    const std::string pattern = vm["pattern"].as<std::string>();
    mem::PatternSpec spec;
    auto kind = mem::parse_pattern(pattern);
    if (!kind) throw Error(fmt::format("ddr gen {}: expected sequential, random, streams or mix", pattern));
    spec.kind = *kind;
    const mem::TraceFormat format = format_option(vm["format"].as<std::string>());
    // Each pattern reads only some of the options: one it does not read is refused, never ignored.
    const auto refuse_for_pattern = [&](const char* option, std::string_view why, std::string_view instead) {
        if (given(vm, option))
            throw Error(fmt::format("{}: {}, so it does nothing to a {} trace; leave it out, or generate {}",
                                    option_text(vm, option), why, pattern, instead));
    };
    if (spec.kind != mem::PatternKind::Random)
        refuse_for_pattern("seed", "only the random pattern draws its addresses from a seed", "random");
    if (spec.kind != mem::PatternKind::Streams) {
        refuse_for_pattern("streams", "only the streams pattern runs several streams", "streams");
        refuse_for_pattern("spacing", "only the streams pattern spaces its streams' bases", "streams");
    }
    if (spec.kind == mem::PatternKind::Random)
        refuse_for_pattern("stride", "the random pattern draws addresses aligned to --size and has no stride",
                           "sequential, streams or mix");
    // Nor does each format read the trace clocks (sim/memory/trace_format.cpp, TraceWriter::write).
    refuse_request_bytes(vm, format, "write");
    if (vm.count("player-mhz") && format != mem::TraceFormat::DramSys)
        throw Error(fmt::format("{}: {} trace times are {}, so it does nothing here (it is the clock of "
                                "DRAMSys cycles); leave it out, or write --format dramsys",
                                option_text(vm, "player-mhz"), mem::name(format), times_of(format)));
    if (vm.count("player-mhz") && vm["gap"].as<std::uint64_t>() == 0)
        throw Error(fmt::format("{}: without --gap every request is at cycle 0 whatever the clock, so it "
                                "does nothing here; leave it out, or space the requests with --gap N",
                                option_text(vm, "player-mhz")));
    spec.count = vm["count"].as<std::uint64_t>();
    const std::uint64_t size = parse_bytes("size", vm["size"].as<std::string>());
    if (size == 0 || size > 0xffffffffu) throw Error("--size: expected 1 .. 4294967295 bytes");
    spec.size = static_cast<std::uint32_t>(size);
    spec.base = parse_bytes("base", vm["base"].as<std::string>());
    spec.span = parse_bytes("span", vm["span"].as<std::string>());
    spec.streams = vm["streams"].as<std::uint32_t>();
    spec.stride = parse_bytes("stride", vm["stride"].as<std::string>());
    spec.spacing = parse_bytes("spacing", vm["spacing"].as<std::string>());
    std::tie(spec.reads, spec.writes) =
        parse_ratio(vm.count("ratio") ? vm["ratio"].as<std::string>()
                                      : (spec.kind == mem::PatternKind::Mix ? "2:1" : "1:0"));
    spec.gap_cycles = vm["gap"].as<std::uint64_t>();
    spec.seed = vm["seed"].as<std::uint64_t>();
    if (spec.base > card.ddr.total_bytes() || spec.span > card.ddr.total_bytes() - spec.base)
        throw Error(fmt::format("--base 0x{:x} --span {} runs past the end of the card's {} bytes of DDR",
                                spec.base, spec.span, card.ddr.total_bytes()));
    const std::string out = vm["output"].as<std::string>();
    mem::PatternGenerator generator(spec, mem::MemoryClock(card.ddr.speed_mts));
    mem::TraceWriter writer(out, format, context_of(card, vm));
    mem::MemRequest r;
    std::uint64_t n = 0;
    while (generator.next(r)) {
        writer.write(r);
        ++n;
    }
    writer.close();
    outputs.keep();
    fmt::print("wrote {} {} requests to {} ({} format)\n", n, pattern, out, mem::name(format));
    return Ok;
}

int run_ddr(std::span<const std::string> args) {
    if (!args.empty() && args[0] == "replay") return replay(args.subspan(1));
    if (!args.empty() && args[0] == "gen") return gen(args.subspan(1));
    const bool help = !args.empty() && (args[0] == "--help" || args[0] == "-h");
    fmt::print(
        help ? stdout : stderr,
        "usage: cardsim ddr replay TRACE [--config C] [--set k=v] [--format dramsim3|dramsys|cardsim]\n"
        "                              [--channels N] [--pace closed|timed] [--outstanding N] [--blocking]\n"
        "                              [--user-port]\n"
        "                              [--ddr-trace FILE --ddr-trace-format F --ddr-trace-channel N|all]\n"
        "       cardsim ddr gen PATTERN -o FILE [--format F] [--count N] [--size B] [--span B] ...\n"
        "       (cardsim ddr replay --help, cardsim ddr gen --help for every option)\n");
    if (help) return Ok;
    if (args.empty()) return BadInput;
    throw Error(fmt::format("cardsim ddr: unknown action `{}`; expected replay or gen", args[0]));
}

const Register registered_ddr{
    {"ddr", "the DDR4 model on its own: replay memory traces, generate patterns", run_ddr}};

} // namespace
} // namespace cardsim::cli
