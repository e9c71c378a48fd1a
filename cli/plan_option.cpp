#include "cli/plan_option.hpp"

#include "engine/error.hpp"
#include "engine/lower/target.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <string>

namespace cardsim::cli {

namespace po = boost::program_options;

po::options_description plan_options() {
    po::options_description o("system of cards");
    o.add_options()("plan", po::value<std::string>()->value_name("PLAN"),
                    "split the model over the system.cards cards: pp (layers split across the cards, "
                    "activations handed card to card); tp (each layer's heads and MLP columns split "
                    "across the cards, an all-reduce a block, system.exchange); ep (as tp, and each Moe "
                    "layer's experts split by index, every card routing every row); tp×pp or tpxpp "
                    "(pairs of cards split heads and columns, the pairs split the layers), tpT×ppP "
                    "(groups of T cards in P stages), ep×pp, epT×ppP; one (a single card, the default)");
    return o;
}

std::size_t default_microbatches(const lower::Plan& plan, std::size_t seqs, bool decoder) {
    if (plan.stages < 2 || !decoder) return 1;
    for (std::size_t m = std::min(plan.stages, seqs); m > 1; --m)
        if (seqs % m == 0) return m;
    return 1;
}

std::size_t microbatches_of(const lower::Plan& plan, std::size_t seqs, bool decoder,
                            std::optional<std::size_t> given) {
    if (!given) return default_microbatches(plan, seqs, decoder);
    const auto m = *given;
    if (m == 0 || seqs % m != 0)
        throw Error(fmt::format("--microbatches {}: a step's {} sequences split into equal groups: give a "
                                "divisor of {}",
                                m, seqs, seqs));
    if (m > 1 && plan.stages < 2)
        throw Error(
            fmt::format("--microbatches {}: microbatches fill the stages of a pipeline, and --plan {} "
                        "has one stage",
                        m, lower::name(plan)));
    return m;
}

lower::Plan plan_of(const po::variables_map& vm, const card::CardConfig& config) {
    const auto cards = config.system.cards;
    const std::string text = vm.count("plan") ? vm["plan"].as<std::string>() : "one";
    if (text != "one" && cards < 2) {
        (void)lower::parse_plan(text, 4); // a misspelt plan says so first
        throw Error(fmt::format("--plan {} splits a model over system.cards cards, and system.cards = {}: "
                                "pass e.g. --set system.cards=2",
                                text, cards));
    }
    const auto plan = lower::parse_plan(text, cards);
    if (plan.one() && cards > 1)
        throw Error(fmt::format("system.cards = {}: a system of several cards needs a plan that splits the "
                                "model over them: pass --plan pp or --plan tp",
                                cards));
    if (plan.tensor == 1 && config.system.exchange != card::Exchange::Exact)
        throw Error(fmt::format("system.exchange = {}: only a tensor-parallel plan (--plan tp) exchanges "
                                "partial sums between cards",
                                card::name(config.system.exchange)));
    return plan;
}

std::vector<models::BuiltGraph> tensor_shards(const models::Model& model, const card::CardConfig& config,
                                              std::size_t ranks, bool experts) {
    std::vector<models::BuiltGraph> out;
    for (std::size_t k = 0; k < ranks; ++k)
        out.push_back(models::build_shard(model.checkpoint, model.spec,
                                          models::Shard{k, ranks,
                                                        config.system.exchange == card::Exchange::Exact
                                                            ? graph::Exchange::Exact
                                                            : graph::Exchange::F32,
                                                        config.weights.block_size, experts}));
    return out;
}

std::vector<const graph::Graph*> graphs_of(const std::vector<models::BuiltGraph>& shards) {
    std::vector<const graph::Graph*> out;
    for (auto& b : shards)
        out.push_back(&b.graph);
    return out;
}

PlanParts plan_parts(const lower::Plan& plan, const models::Model& model, const graph::Graph& whole,
                     const card::CardConfig& config) {
    PlanParts out;
    out.graphs = {&whole};
    if (plan.tensor > 1) {
        out.shards = tensor_shards(model, config, plan.tensor, plan.experts);
        out.graphs = graphs_of(out.shards);
    }
    out.stages = lower::system_stages(out.graphs, model.checkpoint, plan);
    for (auto& st : out.stages) {
        std::string part;
        if (plan.tensor > 1)
            part = fmt::format("{}1/{} of every layer's heads and {}",
                               plan.stages > 1 ? fmt::format("rank {} of {}: ", st.rank, plan.tensor) : "",
                               plan.tensor, plan.experts ? "experts (by index)" : "MLP columns");
        if (plan.stages > 1)
            part += fmt::format("{}ops {} .. {}, {:.4g} M weight elements", part.empty() ? "" : "; ",
                                st.first_op, st.end_op, double(st.weight_elements) / 1e6);
        out.parts.push_back(std::move(part));
    }
    return out;
}

void name_whole_graph_outputs(program::Loaded& last, const graph::Graph& whole) {
    const auto outputs = whole.outputs();
    for (std::size_t k = 0; k < last.io.graph_outputs() && k < outputs.size(); ++k)
        last.io.outputs[k].first = outputs[k];
    for (auto& e : last.program.host.io) {
        if (e.role == program::IoRole::Logits && whole.logits) e.value = whole.logits->id;
        if (e.role == program::IoRole::Next && whole.next) e.value = whole.next->id;
        if (e.role == program::IoRole::Act && whole.act) e.value = whole.act->id;
    }
}

PlannedCards lower_plan(const lower::Plan& plan, const models::Model& model, const graph::Graph& whole,
                        const card::CardConfig& config, const lower::Options& options,
                        bool refuse_over_capacity) {
    auto parts = plan_parts(plan, model, whole, config);
    PlannedCards out;
    out.cards = lower::lower_system(parts.graphs, model.checkpoint, lower::target_of(config), options,
                                    parts.stages, refuse_over_capacity);
    // Each program says which card of which plan it is (run refuses it under another).
    for (std::size_t k = 0; k < out.cards.size(); ++k) {
        auto& h = out.cards[k].program.host;
        h.tensor = std::uint32_t(plan.tensor);
        h.stages = std::uint32_t(plan.stages);
        h.experts = plan.experts;
        h.card = std::uint32_t(parts.stages[k].card);
    }
    out.stages = std::move(parts.stages);
    out.parts = std::move(parts.parts);
    out.shards = std::move(parts.shards);
    return out;
}

} // namespace cardsim::cli
