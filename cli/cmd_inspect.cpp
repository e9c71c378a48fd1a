// `cardsim inspect MODEL_DIR`: what a checkpoint was recognised as, its layers, its parameters,
// and the tensor → view binding of every graph constant.

#include "cli/command.hpp"
#include "engine/error.hpp"
#include "models/bindings.hpp"
#include "models/model.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

namespace cardsim::cli {
namespace {

namespace po = boost::program_options;

int run_inspect(std::span<const std::string> args) {
    po::options_description o("options");
    o.add_options()("model", po::value<std::string>()->required(),
                    "the checkpoint directory")("ops", "also list every op of the graph");
    const char* const positional[] = {"model"};
    auto vm = parse("inspect", "MODEL_DIR [--ops]", args, o, positional);
    const auto model = models::load_model(vm["model"].as<std::string>());
    const auto built = models::build_graph(model);
    const auto& g = built.graph;
    const auto& ck = model.checkpoint;

    std::map<std::string, std::size_t> dtypes;
    for (graph::W w = 0; w < ck.tensor_count(); ++w)
        dtypes[std::string(models::name(ck.dtype(w)))] += ck.info(w).numel();
    std::vector<std::string> dt;
    for (auto& [d, n] : dtypes)
        dt.push_back(fmt::format("{} {}", n, d));

    fmt::print("checkpoint:   {} ({} file{}, {} tensors)\n", ck.dir().string(), ck.files().size(),
               ck.files().size() == 1 ? "" : "s", ck.tensor_count());
    fmt::print("architecture: {}\n", models::describe(model.spec));
    const auto kinds = models::layer_kinds(model.spec);
    std::map<std::string, std::size_t> count;
    for (auto& k : kinds)
        ++count[k];
    std::vector<std::string> summary;
    for (auto& [k, n] : count)
        summary.push_back(fmt::format("{} × {}", n, k));
    fmt::print("layers:       {} ({})\n", kinds.size(), fmt::join(summary, ", "));
    for (std::size_t i = 0; i < kinds.size(); ++i)
        fmt::print("  layer {:>3}: {}\n", i, kinds[i]);

    std::set<graph::W> bound;
    const auto binds = models::bindings(built);
    for (auto& b : binds)
        bound.insert(b.weight.tensor);
    std::size_t bound_params = 0;
    for (auto w : bound)
        bound_params += ck.info(w).numel();
    fmt::print("parameters:   {} ({}); the graph reads {} of them in {} tensors\n", ck.parameter_count(),
               fmt::join(dt, ", "), bound_params, bound.size());
    if (auto experts = models::describe_experts(model.spec))
        fmt::print("experts:      {}; a token reads {} of the {} parameters\n", *experts,
                   models::active_parameters(model.spec, ck.parameter_count()), ck.parameter_count());
    fmt::print("graph:        {} ops, {} values, {} per-sequence states; outputs:", g.ops.size(),
               g.vals.size(), g.states.size());
    for (auto v : g.outputs())
        fmt::print(" {}", g.names[v.id]);
    fmt::print("\n\nbindings (site, op → value, tensor [shape], view):\n");
    for (auto& b : binds)
        fmt::print("  {:>4} {}\n", b.op, models::describe(b, ck));
    std::vector<std::string> unused;
    for (graph::W w = 0; w < ck.tensor_count(); ++w)
        if (!bound.count(w)) unused.push_back(ck.name(w));
    if (!unused.empty()) {
        fmt::print("\ntensors the graph does not read ({}):\n", unused.size());
        for (auto& n : unused)
            fmt::print("  {}\n", n);
    }
    if (vm.count("ops")) {
        fmt::print("\nops:\n");
        for (std::size_t i = 0; i < g.ops.size(); ++i) {
            auto u = graph::uses(g.ops[i]);
            std::vector<std::string> r, w;
            for (auto v : u.reads)
                r.push_back(g.names[v.id]);
            for (auto v : u.writes)
                w.push_back(g.names[v.id]);
            fmt::print("  {:>4} {:<20} {:<13} {} → {}\n", i, models::describe(g.sites[i]),
                       graph::kind(g.ops[i]), fmt::join(r, ", "), fmt::join(w, ", "));
        }
    }
    return Ok;
}

const Register registered_inspect{
    {"inspect", "print a checkpoint's architecture, layers, parameters and bindings", run_inspect}};

} // namespace
} // namespace cardsim::cli
