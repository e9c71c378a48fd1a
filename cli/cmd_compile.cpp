// `cardsim compile MODEL_DIR -o PROG`: the program file and its DDR image (PROG.ddr).

#include "cli/card_options.hpp"
#include "cli/check_layers.hpp"
#include "cli/command.hpp"
#include "engine/error.hpp"
#include "engine/lower/lower.hpp"
#include "models/checkpoint_digest.hpp"
#include "models/model.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

/// `seqs=2,tokens=2,markers=0` into a bucket (decoders: tokens = seqs by default).
graph::Bucket parse_bucket(const std::string& text) {
    graph::Bucket b{1, 1, 0};
    bool tokens_given = false;
    std::size_t at = 0;
    while (at < text.size()) {
        auto end = text.find(',', at);
        auto part = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
        auto eq = part.find('=');
        std::size_t v = 0, used = 0;
        try {
            if (eq != std::string::npos) v = std::stoul(part.substr(eq + 1), &used);
        } catch (...) {
            used = 0;
        }
        auto key = part.substr(0, eq);
        if (eq == std::string::npos || used != part.size() - eq - 1 || (v == 0 && key != "markers"))
            throw Error(fmt::format(
                "--bucket: `{}` is not key=count (keys seqs, tokens, markers; counts positive)", part));
        if (key == "seqs")
            b.seqs = v;
        else if (key == "tokens")
            b.tokens = v, tokens_given = true;
        else if (key == "markers")
            b.markers = v;
        else
            throw Error(fmt::format("--bucket: unknown key `{}`, expected seqs, tokens or markers", key));
        if (end == std::string::npos) break;
        at = end + 1;
    }
    if (!tokens_given) b.tokens = b.seqs;
    return b;
}

int run(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add(card_options());
    opts.add(knob_options());
    opts.add_options()("model", po::value<std::string>()->required(),
                       "checkpoint directory")("bucket", po::value<std::string>()->default_value("seqs=1"),
                                               "row counts: seqs=S[,tokens=T][,markers=M]")(
        "max-positions", po::value<std::size_t>()->default_value(256),
        "positions each sequence's caches hold")("output,o", po::value<std::string>()->required(),
                                                 "program file (the DDR image goes to FILE.ddr)")(
        "check-layers", po::value<std::string>(),
        "the program also reads back these layers' outputs each step: all, or e.g. 0,3,7")(
        "shapes-only", po::bool_switch(),
        "read config.json alone: weights are placed by shape, never read or packed (timing-only runs)");
    const char* const positional[] = {"model"};
    auto vm =
        parse("compile",
              "MODEL_DIR -o PROG [--config C] [--set k=v] [--knob k=v] [--bucket seqs=1] [--max-positions N] "
              "[--check-layers all|0,3,7] [--shapes-only]",
              args, opts, positional);
    auto knobs = knob_overrides(vm);
    auto config = load_card(vm, knobs);
    auto model = models::load_model(vm["model"].as<std::string>(), vm["shapes-only"].as<bool>());
    auto built = models::build_graph(model);
    lower::Options o;
    o.shapes_only = model.checkpoint.shapes_only();
    o.bucket = parse_bucket(vm["bucket"].as<std::string>());
    o.max_positions = vm["max-positions"].as<std::size_t>();
    if (vm.count("check-layers")) o.probes = layer_probes(built.graph, vm["check-layers"].as<std::string>());
    o.model = models::describe(model.spec);
    o.checkpoint_digest = models::checkpoint_digest(model.checkpoint);
    auto c = lower::lower(built.graph, model.checkpoint, lower::target_of(config), o);
    std::string out = vm["output"].as<std::string>();
    program::write(c.image, out + ".ddr");
    program::write(c.program, out);
    fmt::print("{}: {} commands, arena {} bytes, {} bytes of weights; image {}.ddr ({} bytes{})\n", out,
               c.program.commands.size(), c.program.arena_bytes,
               c.program.region(program::Region::Weights)->size, out, c.image.bytes(),
               o.shapes_only ? ": shapes only, for timing-only runs" : "");
    return Ok;
}

const Register reg{{"compile", "compile a checkpoint into a program file and its DDR image", run}};

} // namespace
} // namespace cardsim::cli
