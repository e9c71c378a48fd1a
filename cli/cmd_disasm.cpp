// `cardsim disasm FILE`: a program's header, memory map and one line per command; for a program
// set, each bucket's in turn (or one: `--bucket K`).

#include "cli/command.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/program/program.hpp"
#include "engine/program/program_set.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

/// Prints `p`'s header and memory map, and its commands unless `header_only`.
void print_program(const program::Program& p, bool header_only) {
    fmt::print("{}", program::describe_header(p));
    if (header_only) return;
    for (std::size_t i = 0; i < p.commands.size(); ++i)
        fmt::print("{}\n", program::disassemble(p, i));
}

int run_disasm(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add_options()("file", po::value<std::string>()->required(), "the program (or program set) file")(
        "header-only", po::bool_switch(), "print the header and memory map only")(
        "bucket", po::value<std::size_t>(), "a program set: print this bucket only (0 is the smallest)");
    const char* const positional[] = {"file"};
    auto vm = parse("disasm", "FILE [--header-only] [--bucket K]", args, opts, positional);
    const auto file = vm["file"].as<std::string>();
    const auto bytes = io::read_bytes(file);
    const bool header_only = vm["header-only"].as<bool>();
    if (!program::is_set(bytes)) {
        if (vm.count("bucket"))
            throw Error(fmt::format("--bucket: {} is a single program, not a set of buckets", file));
        print_program(program::decode(bytes, file), header_only);
        return Ok;
    }
    auto set = program::decode_set(bytes, file);
    std::size_t from = 0, to = set.buckets.size();
    if (vm.count("bucket")) { // checked before anything is printed
        from = vm["bucket"].as<std::size_t>();
        if (from >= set.buckets.size())
            throw Error(
                fmt::format("--bucket {}: {} holds buckets 0 .. {}", from, file, set.buckets.size() - 1));
        to = from + 1;
    }
    auto& h = set.buckets.front().host;
    fmt::print("program set: {} buckets of {} token rows on {} slots of {} positions\n", set.buckets.size(),
               program::rows_list(set), h.entry(program::IoRole::Slots)->width, h.max_positions);
    for (std::size_t k = from; k < to; ++k) {
        fmt::print("bucket {}: {} token rows\n", k, set.buckets[k].host.tokens);
        print_program(set.buckets[k], header_only);
    }
    return Ok;
}

const Register registered_disasm{
    {"disasm", "print a program file (or each bucket of a set) as text, one command per line", run_disasm}};

} // namespace
} // namespace cardsim::cli
