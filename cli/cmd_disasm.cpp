// `cardsim disasm FILE`: a program's header, memory map and one line per command.

#include "cli/command.hpp"
#include "engine/program/program.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

int run(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add_options()("file", po::value<std::string>()->required(), "the program file")(
        "header-only", po::bool_switch(), "print the header and memory map only");
    const char* const positional[] = {"file"};
    auto vm = parse("disasm", "FILE [--header-only]", args, opts, positional);
    auto p = program::read(vm["file"].as<std::string>());
    fmt::print("{}", program::describe_header(p));
    if (vm["header-only"].as<bool>()) return Ok;
    for (std::size_t i = 0; i < p.commands.size(); ++i)
        fmt::print("{}\n", program::disassemble(p, i));
    return Ok;
}

const Register reg{{"disasm", "print a program file as text, one command per line", run}};

} // namespace
} // namespace cardsim::cli
