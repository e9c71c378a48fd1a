// `cardsim report RUN_TRACE|SWEEP_DIR -o report.html`: one self-contained HTML page of a run (from
// its trace) or of a sweep (from its directory).

#include "cli/command.hpp"
#include "cli/report_facts.hpp"
#include "cli/report_sweep.hpp"
#include "engine/error.hpp"
#include "engine/program/program.hpp"
#include "traces/lexical.hpp"
#include "traces/reader.hpp"
#include "traces/report/run_page.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

namespace po = boost::program_options;

int run(std::span<const std::string> args) {
    po::options_description o("options");
    o.add_options()("input", po::value<std::string>()->required(),
                    "a run's trace, or a sweep's directory (or its results.csv)")(
        "output,o", po::value<std::string>()->required(), "the page to write (HTML)")(
        "program", po::value<std::string>(),
        "the program the trace ran: its commands' operands show in the timeline's tooltips");
    const char* const positional[] = {"input"};
    auto vm = parse("report", "RUN_TRACE|SWEEP_DIR -o report.html [--program PROG]", args, o, positional);
    const std::filesystem::path input = vm["input"].as<std::string>();
    const std::filesystem::path output = vm["output"].as<std::string>();
    const bool trace_file = std::filesystem::is_regular_file(input) && input.extension() != ".csv";
    if (!trace_file) {
        if (vm.count("program")) throw Error("report: --program goes with a run's trace, not with a sweep");
        auto files = write_sweep_report(input, output);
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
    fmt::print("{}: the run's page ({} commands{})\n", output.string(), trace.records.size(),
               page.facts ? "" : "; the trace records no run facts, the page shows what its records give");
    return Ok;
}

const Register reg{{"report", "write one self-contained HTML page of a run (its trace) or of a sweep", run}};

} // namespace
} // namespace cardsim::cli
