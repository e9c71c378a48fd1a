// cardsim: the command line. `cardsim <command> [options]`; `cardsim --help` lists the commands.

#include "cli/command.hpp"
#include "cli/version.hpp"
#include "engine/error.hpp"

#include <fmt/core.h>

#include <cctype>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <sstream>

namespace cardsim::cli {

std::vector<Command>& commands() {
    static std::vector<Command> all;
    return all;
}

namespace po = boost::program_options;

namespace {

/// The least (and, where one holds, the most) value of an option that takes a number, the same
/// for every subcommand that has it: counts of tokens, sequences, positions and the like are
/// positive; a rate or a timeout is more than 0; token and position counts stay within 2^31
/// (positions are u32 on the card, and no cache or arena size wraps), layers within MAX_LAYERS,
/// threads within 1024. Options absent here take any value their type holds (a seed, a tolerance,
/// an index), or mean different things in different subcommands (`--chunk 0` and `--max-seqs 0` of
/// serve and `--outstanding 0` of ddr replay mean "no limit"), and their subcommands check them.
struct OptionBounds {
    std::string_view option;
    double least;
    bool strict;     ///< the value must be more than `least`, not equal to it
    double most = 0; ///< the largest value (0: none here)
};
constexpr OptionBounds option_bounds[] = {
    {"tokens", 1, false, 0x1p31},
    {"seqs", 1, false},
    {"prompt-len", 1, false, 0x1p31},
    {"count", 1, false},
    {"max-positions", 1, false, 0x1p31},
    {"token-budget", 1, false},
    {"jobs", 1, false},
    {"layers", 1, false, 4096},
    {"streams", 1, false},
    {"player-mhz", 1, false},
    {"request-bytes", 1, false},
    {"threads", 1, false, 1024},
    {"rate", 0, true},
    {"timeout", 0, true},
};

/// Refuses `value` for `--option` when it is outside the option's bounds (option_bounds), naming
/// the option, the value and what was expected. Values that are not numbers are left to the parser.
void check_bounds(std::string_view command, std::string_view option, const std::string& value) {
    for (auto& b : option_bounds) {
        if (b.option != option) continue;
        double v = 0;
        std::size_t used = 0;
        try {
            v = std::stod(value, &used);
        } catch (...) {
            return;
        }
        if (used != value.size()) return;
        if (b.most > 0 && v > b.most)
            throw Error(fmt::format("cardsim {}: --{} {}: expected at most {:.0f} (see `cardsim {} --help`)",
                                    command, option, value, b.most, command));
        if (b.strict ? v > b.least : v >= b.least) return;
        throw Error(fmt::format("cardsim {}: --{} {}: {}expected {} {:g} (see `cardsim {} --help`)", command,
                                option, value, v < 0 ? "a negative number, " : "",
                                b.strict ? "more than" : "at least", b.least, command));
    }
}

} // namespace

po::variables_map parse(std::string_view command, std::string_view usage, std::span<const std::string> args,
                        po::options_description options, std::span<const char* const> positional,
                        bool repeat_last) {
    options.add_options()("help,h", "print this help");
    po::positional_options_description pos;
    for (std::size_t i = 0; i < positional.size(); ++i)
        pos.add(positional[i], repeat_last && i + 1 == positional.size() ? -1 : 1);
    po::variables_map vm;
    try {
        std::vector<std::string> argv(args.begin(), args.end());
        auto parsed = po::command_line_parser(argv).options(options).positional(pos).run();
        for (auto& o : parsed.options)
            for (auto& v : o.value)
                check_bounds(command, o.string_key, v);
        // Every number an option takes is a count, a size, a clock or a tolerance: boost would wrap
        // `-1` into 2^32 - 1 for an unsigned option, so a negative number is refused here, by name.
        for (auto& o : parsed.options)
            for (auto& v : o.value)
                if (v.size() > 1 && v[0] == '-' && std::all_of(v.begin() + 1, v.end(), [](char c) {
                        return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
                    }))
                    throw Error(fmt::format("cardsim {}: --{} {}: a negative number, expected 0 or more (see "
                                            "`cardsim {} --help`)",
                                            command, o.string_key, v, command));
        po::store(parsed, vm);
        if (vm.count("help")) {
            fmt::print("usage: cardsim {} {}\n\n", command, usage);
            std::ostringstream text;
            text << options;
            fmt::print("{}", text.str());
            throw HelpShown{};
        }
        po::notify(vm);
    } catch (const po::error& e) {
        throw Error(fmt::format("cardsim {}: {} (see `cardsim {} --help`)", command, e.what(), command));
    }
    return vm;
}

/// `cardsim --help`: the commands and their summaries.
void print_help() {
    fmt::print("cardsim: a cycle-approximate simulator of an LLM inference card, and its engine.\n\n"
               "usage: cardsim <command> [options]     (cardsim <command> --help for its options)\n"
               "       cardsim --version                what this build is and what it was built with\n\n"
               "commands:\n");
    auto all = commands();
    std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.name < b.name; });
    for (auto& c : all)
        fmt::print("  {:<12} {}\n", c.name, c.summary);
}

} // namespace cardsim::cli

int main(int argc, char** argv) {
    using namespace cardsim::cli;
    // SystemC prints a banner on elaboration unless told not to; set it before anything elaborates.
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        print_help();
        return args.empty() ? BadInput : Ok;
    }
    if (args[0] == "--version") {
        fmt::print("{}", version_text());
        return Ok;
    }
    for (auto& c : commands()) {
        if (c.name != args[0]) continue;
        try {
            return c.run(std::span(args).subspan(1));
        } catch (const HelpShown&) {
            return Ok;
        } catch (const cardsim::Refusal& e) {
            fmt::print(stderr, "refused: {}\n", e.what());
            return Negative;
        } catch (const cardsim::Error& e) {
            fmt::print(stderr, "error: {}\n", e.what());
            return BadInput;
        } catch (const std::filesystem::filesystem_error& e) {
            // A path the input named that the file system refuses (a symlink loop, a name too long,
            // a permission): bad input, named by the path, never an internal error.
            fmt::print(stderr, "error: {}\n", e.what());
            return BadInput;
        } catch (const std::exception& e) {
            fmt::print(stderr, "internal error: {}\n", e.what());
            return 3;
        }
    }
    fmt::print(stderr, "error: unknown command `{}`; `cardsim --help` lists the commands\n", args[0]);
    return BadInput;
}
