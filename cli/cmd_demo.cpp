// `cardsim demo`: the embedded default job. Until the end-to-end run lands it lays out a built-in
// two-layer decoder step for a bucket of four sequences and prints the listing.

#include "cli/command.hpp"
#include "cli/layout_listing.hpp"
#include "engine/graph/examples.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

int run(std::span<const std::string> args) {
    boost::program_options::options_description opts("options");
    parse("demo", "", args, opts);
    graph::DecoderShape s;
    s.layers = 2;
    fmt::print("cardsim demo: arena layout of a built-in 2-layer decoder step (hidden {}, {} heads), 4 "
               "sequences\n\n",
               s.hidden, s.heads);
    fmt::print("{}", layout_listing(graph::example_decoder(s), graph::Bucket{4, 4, 0}));
    return Ok;
}

const Register reg{{"demo", "the embedded default job", run}};

} // namespace
} // namespace cardsim::cli
