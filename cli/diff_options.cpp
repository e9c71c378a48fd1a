#include "cli/diff_options.hpp"

#include "engine/error.hpp"
#include "engine/program/program.hpp"
#include "traces/lexical.hpp"
#include "traces/sites.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace cardsim::cli {

namespace po = boost::program_options;

void add_diff_options(po::options_description& options) {
    options.add_options()(
        "cycles-tol", po::value<double>()->default_value(0.0),
        "per cent by which each command's duration (and named waits) and the total cycles may move from A's")(
        "start-tol", po::value<double>(),
        "also compare each command's start and end, within this per cent (cascaded shifts included)")(
        "top", po::value<long long>()->default_value(10), "list the N largest duration changes")(
        "all", po::bool_switch(), "list every command over the tolerance")(
        "program", po::value<std::string>(),
        "the program A or B ran: labels commands with their layer (from its layer probes) and copies");
}

traces::DiffOptions diff_options(const po::variables_map& vm, std::string_view command,
                                 const traces::Trace& a, const std::string& path_a, const traces::Trace& b,
                                 const std::string& path_b) {
    traces::DiffOptions o;
    o.cycles_tol_pct = vm["cycles-tol"].as<double>();
    if (!(o.cycles_tol_pct >= 0) || !std::isfinite(o.cycles_tol_pct))
        throw Error(fmt::format("cardsim {}: --cycles-tol is {}, expected a non-negative per cent", command,
                                o.cycles_tol_pct));
    if (vm.count("start-tol")) {
        o.start_tol_pct = vm["start-tol"].as<double>();
        if (!(*o.start_tol_pct >= 0) || !std::isfinite(*o.start_tol_pct))
            throw Error(fmt::format("cardsim {}: --start-tol is {}, expected a non-negative per cent",
                                    command, *o.start_tol_pct));
    }
    auto top = vm["top"].as<long long>();
    if (top < 0)
        throw Error(fmt::format("cardsim {}: --top is {}, expected a number of commands >= 0", command, top));
    o.top = static_cast<std::size_t>(top);
    o.all = vm["all"].as<bool>();
    if (o.all && !vm["top"].defaulted())
        throw Error(fmt::format(
            "cardsim {}: --top N lists the N largest changes and --all every one: give one", command));
    if (vm.count("program")) {
        auto path = vm["program"].as<std::string>();
        o.sites = traces::sites_of(program::read(path));
        auto ran = [&](const traces::Header& h) { // the program, or one card's of a system
            return h.program == o.sites->program ||
                   std::find(h.cards.begin(), h.cards.end(), o.sites->program) != h.cards.end();
        };
        if (!ran(a.header) && !ran(b.header))
            throw Error(
                fmt::format("{}: its digest is {}, but {} ran {} and {} ran {}: give the program one of "
                            "them ran",
                            path, traces::hex16(o.sites->program), path_a, traces::hex16(a.header.program),
                            path_b, traces::hex16(b.header.program)));
    }
    return o;
}

} // namespace cardsim::cli
