// `cardsim sweep SPEC -j N -o DIR`: runs every point of a sweep spec's grid (configs/sweeps/*.toml)
// in its own process into DIR/results.csv; `--shard i/N` runs a slice, `--merge` joins slices,
// `--emit slurm|parallel` writes a cluster script, `--list` prints the points.

#include "cli/command.hpp"
#include "cli/output_paths.hpp"
#include "cli/report_sweep.hpp"
#include "cli/sweep/emit.hpp"
#include "cli/sweep/grid.hpp"
#include "cli/sweep/results.hpp"
#include "cli/sweep/runner.hpp"
#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <unistd.h>

namespace cardsim::cli {
namespace {

namespace po = boost::program_options;

/// Exit code of an interrupted sweep (128 + SIGINT, as shells report it).
constexpr int Interrupted = 130;

int run_sweep(std::span<const std::string> args) {
    po::options_description o("options");
    o.add_options()("spec", po::value<std::string>(), "the sweep spec (TOML; see docs/sweeps.md)")(
        "output,o", po::value<std::string>(), "output directory (results.csv, models/, traces/)")(
        "jobs,j", po::value<std::size_t>()->default_value(std::max(1u, std::thread::hardware_concurrency())),
        "points run at once")("shard", po::value<std::string>(),
                              "run slice i of N of the grid (i/N, 0 <= i < N)")(
        "merge", po::value<std::vector<std::string>>()->multitoken(),
        "merge the results of these directories (or CSV files) into -o DIR")(
        "emit", po::value<std::string>(), "write a cluster script into -o DIR: slurm | parallel")(
        "shards", po::value<std::size_t>(),
        "tasks of an --emit script (default: up to 8, one point each at least)")(
        "traces", po::bool_switch(), "write each point's trace to DIR/traces/point-<id>.trace")(
        "report", po::bool_switch(),
        "then write DIR/report.html (with --traces, a run page per point in DIR/report_points/)")(
        "retry-failed", po::bool_switch(), "run again the points whose row in results.csv is not ok")(
        "timeout", po::value<double>()->default_value(0), "kill a point after this many seconds (0: never)")(
        "list", po::bool_switch(), "print the points (of the shard) and exit");
    const char* const positional[] = {"spec"};
    auto vm = parse("sweep",
                    "SPEC -o DIR [-j N] [--shard i/N] [--traces] [--report] [--retry-failed]\n"
                    "       cardsim sweep SPEC --list [--shard i/N]\n"
                    "       cardsim sweep SPEC --emit slurm|parallel -o DIR [--shards N] [-j N]\n"
                    "       cardsim sweep --merge DIR... -o OUT",
                    args, o, positional);
    Outputs outputs; // -o checked before any work (a sweep's folder keeps what it did: it resumes)
    auto output = [&](bool resumes = true) -> std::filesystem::path {
        if (!vm.count("output")) throw Error("cardsim sweep: missing -o DIR (the output directory)");
        std::filesystem::path out = vm["output"].as<std::string>();
        if (out.extension() == ".csv")
            outputs.file("-o", out);
        else
            outputs.folder("-o", out);
        if (resumes) outputs.keep();
        return out;
    };
    // An option given where it does nothing is refused, never ignored.
    const auto refuse = [&](std::string_view mode, std::initializer_list<const char*> names) {
        for (auto* n : names)
            if (given(vm, n))
                throw Error(fmt::format("cardsim sweep {}: --{} does nothing there (drop it)", mode, n));
    };
    if (vm.count("merge")) {
        if (vm.count("spec") || vm.count("emit") || vm.count("shard"))
            throw Error("cardsim sweep --merge: takes only directories (or CSV files) and -o OUT, no SPEC, "
                        "--shard or --emit");
        refuse("--merge", {"jobs", "shards", "traces", "report", "retry-failed", "timeout", "list"});
        std::vector<std::filesystem::path> inputs;
        for (auto& s : vm["merge"].as<std::vector<std::string>>())
            inputs.emplace_back(s);
        auto out = output(false); // a merge that fails leaves no new output
        auto merged = sweep::merge_results(inputs, out);
        outputs.keep();
        fmt::print("merged {} rows from {} results into {}: {} failed\n", merged.rows, inputs.size(),
                   (out.extension() == ".csv" ? out : out / "results.csv").string(), merged.failed);
        return merged.failed ? Negative : Ok;
    }
    if (!vm.count("spec"))
        throw Error("cardsim sweep: missing SPEC (a sweep spec, e.g. configs/sweeps/channels_clock.toml)");
    const auto spec = sweep::load_sweep_spec(vm["spec"].as<std::string>());
    const auto grid = sweep::build_grid(spec);
    std::optional<sweep::Shard> shard;
    if (vm.count("shard")) shard = sweep::parse_shard(vm["shard"].as<std::string>());
    const auto points = shard ? sweep::shard_points(grid.points, *shard) : grid.points;
    const std::string scope = shard ? fmt::format("shard {}/{}: {} of {} points", shard->index, shard->count,
                                                  points.size(), grid.points.size())
                                    : fmt::format("{} points", points.size());
    const std::string grid_text =
        fmt::format("grid of {}, {} skipped by skip_if", grid.full_size, grid.full_size - grid.points.size());

    if (!vm.count("emit")) refuse("without --emit", {"shards"});
    if (vm["list"].as<bool>()) {
        refuse("--list", {"jobs", "traces", "report", "retry-failed", "timeout", "emit", "output"});
        fmt::print("sweep {}: {} ({})\n", spec.name, scope, grid_text);
        for (auto& p : points)
            fmt::print("  point {}: {}\n", p.id, sweep::describe(spec, p));
        return Ok;
    }
    if (vm.count("emit")) {
        if (shard) throw Error("cardsim sweep --emit: writes every shard's task; drop --shard");
        refuse("--emit", {"report"}); // each task writes its shard; a report goes with the merge
        sweep::EmitOptions e;
        e.kind = sweep::parse_emit_kind(vm["emit"].as<std::string>());
        e.shards = vm.count("shards")
                       ? vm["shards"].as<std::size_t>()
                       : std::max<std::size_t>(1, std::min<std::size_t>(8, grid.points.size()));
        e.jobs = vm["jobs"].as<std::size_t>();
        e.traces = vm["traces"].as<bool>();
        e.retry_failed = vm["retry-failed"].as<bool>();
        e.timeout_seconds = vm["timeout"].as<double>();
        if (!vm.count("jobs") || vm["jobs"].defaulted())
            e.jobs = e.kind == sweep::EmitKind::Parallel ? 1 : e.jobs;
        const auto dir = std::filesystem::absolute(output()).lexically_normal();
        auto file = sweep::emit(spec, dir, e);
        fmt::print("wrote {}: {} shards of {} points\n", file.string(), e.shards, grid.points.size());
        if (e.kind == sweep::EmitKind::Slurm)
            fmt::print("submit: sbatch {}\n", file.string());
        else
            fmt::print("run:    parallel --jobs N :::: {}\n", file.string());
        fmt::print("then:   {}\n", sweep::merge_command(dir, e.shards));
        return Ok;
    }
    sweep::RunnerOptions r;
    r.jobs = vm["jobs"].as<std::size_t>();
    if (r.jobs == 0) throw Error("cardsim sweep: -j 0; expected at least one point at once");
    r.traces = vm["traces"].as<bool>();
    r.retry_failed = vm["retry-failed"].as<bool>();
    r.timeout_seconds = vm["timeout"].as<double>();
    r.progress = ::isatty(2);
    // Points run side by side: give each its share of the cores for the kernels of full runs, unless
    // the user chose (the children inherit the environment).
    if (!std::getenv("CARDSIM_HOST_THREADS")) {
        const std::size_t share =
            std::max<std::size_t>(1, std::max(1u, std::thread::hardware_concurrency()) / r.jobs);
        ::setenv("CARDSIM_HOST_THREADS", std::to_string(share).c_str(), 1);
    }
    const auto dir = output();
    fmt::print("sweep {}: {} ({}), {}, {} at once, into {}\n", spec.name, scope, grid_text,
               spec.full ? "full runs" : "timing-only", r.jobs, dir.string());
    std::fflush(stdout);
    auto outcome = sweep::run_sweep(spec, grid, points, dir, r);
    fmt::print("{} points: {} already in results.csv, {} run now, {} failed{}; {}\n", outcome.points,
               outcome.already_done, outcome.ran, outcome.failed,
               outcome.interrupted ? "; INTERRUPTED (rerun the same command to resume)" : "",
               (dir / "results.csv").string());
    if (outcome.interrupted) return Interrupted;
    if (vm["report"].as<bool>()) {
        auto files = write_sweep_report(dir, dir / "report.html");
        fmt::print("{}: the sweep's page ({} point run pages beside it)\n", files.page.string(),
                   files.point_pages.size());
    }
    return outcome.failed ? Negative : Ok;
}

const Register registered_sweep{
    {"sweep", "run a grid of card configurations (a sweep spec) into a results CSV", run_sweep}};

} // namespace
} // namespace cardsim::cli
