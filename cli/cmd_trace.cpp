// `cardsim trace show|diff|bless`: look at, compare and bless trace files (traces/FORMAT.md).

#include "cli/command.hpp"
#include "cli/diff_options.hpp"
#include "cli/output_paths.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "traces/bless.hpp"
#include "traces/csv.hpp"
#include "traces/diff.hpp"
#include "traces/diff_export.hpp"
#include "traces/lexical.hpp"
#include "traces/perfetto.hpp"
#include "traces/reader.hpp"
#include "traces/sites.hpp"
#include "traces/summary.hpp"
#include "traces/system_diff.hpp"
#include "traces/vcd.hpp"

#include <fmt/core.h>

#include <array>

namespace cardsim::cli {
namespace {

namespace po = boost::program_options;
using namespace cardsim::traces;

constexpr std::string_view verbs_help =
    "usage: cardsim trace <verb> ...   (cardsim trace <verb> --help)\n\n"
    "verbs:\n"
    "  show FILE [--meta] [--csv OUT] [--perfetto OUT] [--vcd OUT]\n"
    "                                           summary of a trace (--meta: meta values whole), or exports\n"
    "  diff A B [--cycles-tol PCT] [--start-tol PCT] [--top N|--all] [--format text|csv|json]\n"
    "           [--program PROG]                compare B with the reference A, summary first\n"
    "  bless NEW GOLDEN                         replace GOLDEN by NEW, showing "
    "the diff\n";

/// `trace show FILE [--meta] [--csv OUT] [--perfetto OUT] [--vcd OUT]`.
int show(std::span<const std::string> args) {
    po::options_description opts("options");
    opts.add_options()("file", po::value<std::string>()->required(), "the trace file")(
        "csv", po::value<std::string>(), "write the per-command table as CSV to this file")(
        "perfetto", po::value<std::string>(), "write Perfetto / Chrome trace JSON to this file")(
        "vcd", po::value<std::string>(),
        "write a VCD of unit busy signals and DDR channel activity to this file")(
        "meta",
        "show every meta value whole (a card's TOML line by line, a run's JSON laid out), not summarised");
    constexpr std::array<const char*, 1> pos{"file"};
    auto vm = parse("trace show", "FILE [--meta] [--csv OUT] [--perfetto OUT] [--vcd OUT]", args, opts, pos);
    auto file = vm["file"].as<std::string>();
    if (vm.count("meta") && (vm.count("csv") || vm.count("perfetto") || vm.count("vcd")))
        throw Error("trace show --meta lays out the summary, which an export (--csv, --perfetto, --vcd) "
                    "replaces: drop --meta, or show the summary on its own");
    Outputs outputs; // checked before the trace is read; none left new if the command fails
    for (const char* o : {"csv", "perfetto", "vcd"})
        if (vm.count(o)) outputs.file(fmt::format("--{}", o), vm[o].as<std::string>());
    auto trace = read_trace(file);
    // Every export is written and staged before any is renamed into place: a failure leaves each
    // destination as it was.
    std::vector<io::AtomicFile> files;
    std::vector<std::string> said;
    const auto stage = [&](const char* option, const std::string& text, std::string what) {
        io::AtomicFile f(vm[option].as<std::string>());
        f.write(text);
        f.stage();
        files.push_back(std::move(f));
        said.push_back(fmt::format("wrote {} ({})\n", vm[option].as<std::string>(), what));
    };
    if (vm.count("csv")) stage("csv", to_csv(trace), fmt::format("{} rows", trace.records.size()));
    if (vm.count("perfetto"))
        stage("perfetto", to_perfetto(trace), fmt::format("{} slices", trace.records.size()));
    if (vm.count("vcd")) stage("vcd", to_vcd(trace), fmt::format("{} units", summarise(trace).units.size()));
    for (auto& f : files)
        f.publish();
    outputs.keep();
    for (auto& line : said)
        fmt::print("{}", line);
    if (files.empty()) fmt::print("{}", to_text(summarise(trace), trace.header, file, vm.count("meta") > 0));
    return Ok;
}

/// `trace diff A B [--cycles-tol PCT] [--start-tol PCT] [--top N | --all] [--format F] [--program P]`.
int diff_verb(std::span<const std::string> args) {
    po::options_description opts("options");
    opts.add_options()("a", po::value<std::string>()->required(), "the reference trace")(
        "b", po::value<std::string>()->required(),
        "the trace under test")("format", po::value<std::string>()->default_value("text"),
                                "text | csv | json (traces/FORMAT.md 7.1)");
    add_diff_options(opts);
    constexpr std::array<const char*, 2> pos{"a", "b"};
    auto vm = parse("trace diff",
                    "A B [--cycles-tol PCT] [--start-tol PCT] [--top N | --all] [--format text|csv|json] "
                    "[--program PROG]",
                    args, opts, pos);
    auto a_path = vm["a"].as<std::string>(), b_path = vm["b"].as<std::string>();
    auto format = vm["format"].as<std::string>();
    if (format != "text" && format != "csv" && format != "json")
        throw Error(fmt::format("cardsim trace diff: --format is `{}`, expected text, csv or json", format));
    auto a = read_trace(a_path), b = read_trace(b_path);
    auto o = diff_options(vm, "trace diff", a, a_path, b, b_path);
    // One report printed in the asked format: one card's, or a system's card by card and its links.
    auto print = [&](const auto& report) {
        if (format == "json")
            fmt::print("{}", to_json(report, a_path, b_path));
        else if (format == "csv")
            fmt::print("{}", to_csv(report, a_path, b_path));
        else
            fmt::print("{}", to_text(report, a_path, b_path));
        return report.agree() ? Ok : Negative;
    };
    // A one-card trace against a system's is refused by diff_system.
    return is_system(a, b) ? print(diff_system(a, b, o)) : print(traces::diff(a, b, o));
}

/// `trace bless NEW GOLDEN`.
int bless_verb(std::span<const std::string> args) {
    po::options_description opts("options");
    opts.add_options()("new", po::value<std::string>()->required(), "the trace of the new run")(
        "golden", po::value<std::string>()->required(), "the golden trace it replaces");
    constexpr std::array<const char*, 2> pos{"new", "golden"};
    auto vm = parse("trace bless", "NEW GOLDEN", args, opts, pos);
    auto blessing = prepare_bless(vm["new"].as<std::string>(), vm["golden"].as<std::string>());
    fmt::print("{}", blessing.changes);
    apply(blessing);
    if (!blessing.identical)
        fmt::print("blessed: {} now holds {}\n", blessing.golden.string(), blessing.fresh.string());
    return Ok;
}

int run_trace(std::span<const std::string> args) {
    if (args.empty()) {
        fmt::print(stderr, "{}", verbs_help);
        return BadInput;
    }
    auto verb = args[0];
    auto rest = args.subspan(1);
    if (verb == "show") return show(rest);
    if (verb == "diff") return diff_verb(rest);
    if (verb == "bless") return bless_verb(rest);
    if (verb == "--help" || verb == "-h" || verb == "help") {
        fmt::print("{}", verbs_help);
        return Ok;
    }
    throw Error(fmt::format("cardsim trace: unknown verb `{}`, expected show | diff | bless", verb));
}

static Register registered_trace{
    {"trace", "show, diff (exit 1 when they differ) and bless trace files", run_trace}};

} // namespace
} // namespace cardsim::cli
