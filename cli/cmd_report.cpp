// `cardsim report RUN_TRACE|SWEEP_DIR -o report.html`: one self-contained HTML page of a run (from
// its trace) or of a sweep (from its directory); `cardsim report A.trace B.trace -o diff.html`:
// the page of the two traces' diff.

#include "cli/command.hpp"
#include "cli/diff_options.hpp"
#include "cli/output_paths.hpp"
#include "cli/report_facts.hpp"
#include "cli/report_sweep.hpp"
#include "engine/error.hpp"
#include "engine/program/program.hpp"
#include "traces/lexical.hpp"
#include "traces/reader.hpp"
#include "traces/report/diff_page.hpp"
#include "traces/report/run_page.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

namespace po = boost::program_options;

/// `report A.trace B.trace -o diff.html [diff options]`: the page of B's diff against A.
int diff_report(const po::variables_map& vm, const std::vector<std::string>& inputs,
                const std::filesystem::path& output) {
    const auto &path_a = inputs[0], &path_b = inputs[1];
    for (auto& p : inputs)
        if (!std::filesystem::is_regular_file(p))
            throw Error(fmt::format(
                "cardsim report: `{}` is not a trace file (two inputs are two traces to diff)", p));
    auto a = traces::read_trace(path_a), b = traces::read_trace(path_b);
    if (traces::is_system(a,
                          b)) { // card by card, and the links (a one-card trace against a system's: refused)
        auto report = traces::diff_system(a, b, diff_options(vm, "report", a, path_a, b, path_b));
        traces::report::write_system_diff_page(output, report, path_a, path_b);
        fmt::print("{}: the diff's page; {}\n", output.string(), report.verdict());
        return report.agree() ? Ok : Negative; // as `trace diff`: a gate on it sees the verdict
    }
    auto report = traces::diff(a, b, diff_options(vm, "report", a, path_a, b, path_b));
    traces::report::write_diff_page(output, report, path_a, path_b);
    fmt::print("{}: the diff's page; {}\n", output.string(), report.verdict());
    return report.agree() ? Ok : Negative;
}

int run_report(std::span<const std::string> args) {
    po::options_description o("options");
    o.add_options()("input", po::value<std::vector<std::string>>()->required(),
                    "a run's trace, a sweep's directory (or its results.csv), or two traces to diff")(
        "output,o", po::value<std::string>()->required(), "the page to write (HTML)");
    add_diff_options(o); // --program also labels a run page's operands
    const char* const positional[] = {"input"};
    auto vm = parse("report",
                    "RUN_TRACE|SWEEP_DIR -o report.html [--program PROG]\n"
                    "       cardsim report A.trace B.trace -o diff.html [--cycles-tol PCT] [--start-tol PCT] "
                    "[--top N|--all] [--program PROG]",
                    args, o, positional, /*repeat_last=*/true);
    const auto inputs = vm["input"].as<std::vector<std::string>>();
    const std::filesystem::path output = vm["output"].as<std::string>();
    Outputs outputs; // checked before any work
    outputs.file("-o", output);
    if (inputs.size() > 2)
        throw Error(
            fmt::format("cardsim report: {} inputs; expected one (a trace or a sweep) or two traces to diff",
                        inputs.size()));
    if (inputs.size() == 2) {
        auto code = diff_report(vm, inputs, output);
        outputs.keep();
        return code;
    }
    const std::filesystem::path input = inputs[0];
    // The diff's options go with two traces: one input has nothing to hold them to.
    for (const char* opt : {"cycles-tol", "start-tol", "top", "all"})
        if (vm.count(opt) && !vm[opt].defaulted())
            throw Error(fmt::format("report: --{} is a diff's option, and one input is not a diff (give two "
                                    "traces, or drop --{})",
                                    opt, opt));
    const bool trace_file = std::filesystem::is_regular_file(input) && input.extension() != ".csv";
    if (!trace_file) {
        if (vm.count("program")) throw Error("report: --program goes with a run's trace, not with a sweep");
        outputs.folder("-o", sweep_points_folder(output)); // the point pages' folder beside the page
        auto files = write_sweep_report(input, output);
        outputs.keep();
        fmt::print("{}: the sweep's page ({} point run pages beside it)\n", files.page.string(),
                   files.point_pages.size());
        return Ok;
    }
    auto trace = traces::read_trace(input);
    traces::report::RunPageInput page{
        trace, traces::report::recorded(trace.header, input.string()), input.filename().string(), {}};
    if (vm.count("program")) {
        const std::filesystem::path prog = vm["program"].as<std::string>();
        auto p = program::read(prog);
        if (program::digest(p) != trace.header.program)
            throw Error(fmt::format("{}: the program's digest is {}, and {} ran the program with digest {}",
                                    prog.string(), traces::hex16(program::digest(p)), input.string(),
                                    traces::hex16(trace.header.program)));
        page.operands = program_text(p);
    }
    traces::report::write_run_page(output, page);
    outputs.keep();
    fmt::print("{}: the run's page ({} commands{})\n", output.string(), trace.records.size(),
               page.facts ? "" : "; the trace records no run facts, the page shows what its records give");
    return Ok;
}

const Register registered_report{
    {"report", "write one self-contained HTML page of a run (its trace), of a sweep, or of two traces' diff",
     run_report}};

} // namespace
} // namespace cardsim::cli
