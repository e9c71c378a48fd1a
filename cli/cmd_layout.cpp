// `cardsim layout`: the arena layout of a built-in graph for a bucket.

#include "cli/command.hpp"
#include "engine/error.hpp"
#include "engine/graph/examples.hpp"
#include "engine/graph/layout.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

/// One line per value (name, rows × width, offset, bytes) and the arena size, in bytes.
std::string layout_listing(const graph::Graph& g, const graph::Bucket& b) {
    auto l = graph::layout(g, b);
    std::string out =
        fmt::format("{:<24} {:>8} {:>8} {:>12} {:>12}\n", "value", "rows", "width", "offset", "bytes");
    std::size_t total = 0;
    for (std::size_t v = 0; v < g.vals.size(); ++v) {
        auto& s = g.vals[v];
        auto bytes = 4 * graph::padded_size(s, b);
        total += bytes;
        const char* rows = s.rows == graph::Rows::Tokens ? "tokens"
                           : s.rows == graph::Rows::Seqs ? "seqs"
                                                         : "markers";
        out += fmt::format("{:<24} {:>8} {:>8} {:>#12x} {:>12}\n",
                           g.names[v].empty() ? fmt::format("v{}", v) : g.names[v], rows, s.width,
                           4 * l.offsets[v], bytes);
    }
    out +=
        fmt::format("{} values, {} ops; arena {} bytes ({:.1f} % of the {} bytes of all values)\n",
                    g.vals.size(), g.ops.size(), 4 * l.len, total ? 100.0 * 4 * l.len / total : 0.0, total);
    return out;
}

int run_layout(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add_options()("graph", po::value<std::string>()->default_value("decoder"), "decoder | encoder")(
        "layers", po::value<std::size_t>()->default_value(2), "layers of the built-in graph")(
        "tokens", po::value<std::size_t>()->default_value(4), "token rows of the bucket")(
        "seqs", po::value<std::size_t>()->default_value(4), "sequence rows of the bucket")(
        "markers", po::value<std::size_t>()->default_value(8), "marker rows of the bucket");
    auto vm = parse("layout", "[--graph decoder|encoder] [--layers N] [--tokens T --seqs S --markers M]",
                    args, opts);
    auto kind = vm["graph"].as<std::string>();
    auto layers = vm["layers"].as<std::size_t>();
    graph::Graph g;
    if (kind == "decoder") {
        // Every value of the decoder is in token rows: the other row counts would change nothing.
        for (const char* o : {"seqs", "markers"})
            if (!vm[o].defaulted())
                throw Error(fmt::format("cardsim layout: --{}: every value of the decoder graph is in token "
                                        "rows (--tokens); --{} sizes the encoder's (--graph encoder)",
                                        o, o));
        graph::DecoderShape s;
        s.layers = layers;
        g = graph::example_decoder(s);
    } else if (kind == "encoder") {
        graph::EncoderShape s;
        s.layers = layers;
        g = graph::example_encoder(s);
    } else {
        throw Error(fmt::format("cardsim layout: --graph is `{}`, expected decoder or encoder", kind));
    }
    graph::Bucket b{vm["tokens"].as<std::size_t>(), vm["seqs"].as<std::size_t>(),
                    vm["markers"].as<std::size_t>()};
    fmt::print("{}", layout_listing(g, b));
    return Ok;
}

const Register registered_layout{
    {"layout", "print the arena layout of a built-in decoder or encoder graph", run_layout}};

} // namespace
} // namespace cardsim::cli
