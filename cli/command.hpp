#pragma once
// The subcommands of `cardsim`: each cli/*.cpp registers one with a static `Register`.

#include <boost/program_options.hpp>

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::cli {

/// Exit codes every subcommand keeps: 0 done (or the card runs it), 1 a negative verdict
/// (refused, traces differ, outputs not bit-exact), 2 bad input or usage.
enum Exit : int { Ok = 0, Negative = 1, BadInput = 2 };

/// One subcommand: its name, a one-line summary for `cardsim --help`, and its body, which gets
/// the arguments after the name.
struct Command {
    std::string_view name;
    std::string_view summary;
    int (*run)(std::span<const std::string> args);
};

/// Every registered subcommand, in registration order.
std::vector<Command>& commands();

/// Registers a subcommand at static-initialisation time: `static Register r{{"name", "...", run}};`.
struct Register {
    explicit Register(Command c) { commands().push_back(c); }
};

/// Thrown by `parse` after printing help; the caller returns exit code 0.
struct HelpShown {};

/// Parses `args` against `options` and the `positional` names (in order; the last may repeat when
/// `repeat_last`), adding `--help`. On `--help` prints `usage`, the options, and throws HelpShown.
/// A usage error throws cardsim::Error naming the option and what was expected.
boost::program_options::variables_map parse(std::string_view command, std::string_view usage,
                                            std::span<const std::string> args,
                                            boost::program_options::options_description options,
                                            std::span<const char* const> positional = {},
                                            bool repeat_last = false);

/// Whether the user gave option `name` (not merely its default): an option given where it does
/// nothing is refused, naming it.
inline bool given(const boost::program_options::variables_map& vm, const char* name) {
    return vm.count(name) && !vm[name].defaulted();
}

} // namespace cardsim::cli
