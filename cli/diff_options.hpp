#pragma once
// The options of a trace comparison, shared by `cardsim trace diff` and `cardsim report A B`:
// the tolerances, how many commands to list, and the program that labels commands with layers.

#include "traces/diff.hpp"
#include "traces/trace.hpp"

#include <boost/program_options.hpp>

#include <string>
#include <string_view>

namespace cardsim::cli {

/// Adds --cycles-tol, --start-tol, --top, --all and --program to `options`.
void add_diff_options(boost::program_options::options_description& options);

/// The diff options `vm` gives. A negative or non-finite tolerance, a negative --top, or a
/// program that neither trace ran is a cardsim::Error naming `command` (or the program file).
traces::DiffOptions diff_options(const boost::program_options::variables_map& vm, std::string_view command,
                                 const traces::Trace& a, const std::string& path_a, const traces::Trace& b,
                                 const std::string& path_b);

} // namespace cardsim::cli
