// `cardsim check MODEL_DIR`: what the card runs of a checkpoint, what it decomposes, what it refuses.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "cli/decode_batch.hpp"
#include "cli/plan_option.hpp"
#include "engine/error.hpp"
#include "engine/fit/fit.hpp"
#include "engine/lower/lower.hpp"
#include "engine/lower/plan.hpp"
#include "engine/shim/check.hpp"
#include "models/model.hpp"
#include "sim/system/system.hpp"

#include <fmt/core.h>

namespace cardsim::cli {
namespace {

int run_check(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add(card_options());
    opts.add(knob_options());
    opts.add(plan_options());
    opts.add_options()("model", po::value<std::string>()->required(), "checkpoint directory")(
        "max-positions", po::value<std::size_t>()->default_value(4096),
        "positions each sequence's caches hold, for the capacity budget")(
        "seqs", po::value<std::size_t>()->default_value(1), "sequences the caches are kept for")(
        "microbatches", po::value<std::size_t>(),
        "under a pipeline plan: the groups a step's --seqs sequences run in, as run --microbatches (default: "
        "run's, the largest divisor of the sequences up to the stages)")(
        "shapes-only", po::bool_switch(), "read config.json alone, never the safetensors");
    const char* const positional[] = {"model"};
    auto vm = parse("check",
                    "MODEL_DIR [--config C] [--set k=v] [--max-positions N] [--seqs S] [--shapes-only] "
                    "[--plan pp|tp|ep|tp×pp [--microbatches M]]",
                    args, opts, positional);
    auto config = load_card(vm, knob_overrides(vm));
    const auto plan = plan_of(vm, config);
    auto model = models::load_model(vm["model"].as<std::string>(), vm["shapes-only"].as<bool>());
    auto built = models::build_graph(model);
    auto report = shim::check_model(built.graph, shim::capabilities(config));
    const bool decoder = std::holds_alternative<models::DecoderSpec>(model.spec);
    // They size a decoder's caches for the budget: of an encoder they would be ignored.
    if (!decoder)
        for (const char* o : {"seqs", "max-positions"})
            if (!vm[o].defaulted())
                throw Error(fmt::format("--{}: {} is an encoder, which keeps no caches of sequences or "
                                        "positions to budget (drop --{})",
                                        o, vm["model"].as<std::string>(), o));
    // The arena of a decode step (a token of each of --seqs sequences) must fit the SRAM, as `run`
    // lowers it: a refusal here, so the budget below (which lowers that step) is not reached.
    const auto seqs = vm["seqs"].as<std::size_t>();
    const auto micro = microbatches_of(
        plan, seqs, decoder,
        vm.count("microbatches") ? std::optional(vm["microbatches"].as<std::size_t>()) : std::nullopt);
    // (Under a plan, each card's lowering below checks its own arena, as `run` lowers it.)
    if (report.runs() && decoder && plan.one())
        if (auto why = lower::arena_refusal(built.graph, graph::Bucket{seqs, seqs, 0}, config.sram.bytes))
            report.refusals.push_back({std::nullopt, *why});
    // An encoder's one step as `run` takes it without --prompt: its default prompt, a marker every
    // fourth token.
    if (report.runs() && !decoder && plan.one()) {
        const auto n = default_prompt(0, 1).size();
        if (auto why = lower::arena_refusal(built.graph, graph::Bucket{n, 1, encoder_markers(n).size()},
                                            config.sram.bytes))
            report.refusals.push_back({std::nullopt, *why});
    }
    // A split by heads and columns (tp, ep) is for decoders: refused here as `run` refuses it.
    if (plan.tensor > 1)
        if (auto why = models::shard_refusal(model.spec)) report.refusals.push_back({std::nullopt, *why});
    fmt::print("{}: {}\n{}", vm["model"].as<std::string>(), models::describe(model.spec),
               report.listing(built.graph));
    // The DDR budget of a decoder's program for these positions and sequences, and each card's of
    // a plan (an encoder's too, split as `compile --plan` splits it); shapes only: no weight is
    // read. Over the capacity is one more refusal, so the verdict below is the only one.
    if (report.runs() && (decoder || !plan.one())) {
        lower::Options o(graph::Bucket{seqs, seqs, 0}, vm["max-positions"].as<std::size_t>());
        if (!plan.one()) {
            // Each card's budget: its layers' (pp) or its heads' and columns' (tp) weights and stores;
            // a card over its DDR is a refusal naming it.
            std::vector<lower::Capacity> caps;
            std::vector<std::size_t> commands;
            std::vector<std::string> parts;
            o.shapes_only = true;
            if (!decoder) { // its one step, as `run` takes it without --prompt
                const auto n = default_prompt(0, 1).size();
                o.bucket = graph::Bucket{n, 1, encoder_markers(n).size()};
            }
            // A pipeline steps its sequences in microbatches as `run` does: a group's rows a step, with
            // the stores of every sequence.
            if (micro > 1) {
                o.bucket = graph::Bucket{seqs / micro, seqs / micro, 0};
                o.slots = seqs;
            }
            if (plan.stages > 1 && decoder)
                fmt::print("a step, as run steps it: {} sequences in {} microbatch{} of {} rows{}\n", seqs,
                           micro, micro == 1 ? "" : "es", seqs / micro,
                           vm.count("microbatches") ? "" : " (run's default; --microbatches M for others)");
            try { // a split that cannot stay exact is the verdict's refusal
                auto planned = lower_plan(plan, model, built.graph, config, o, false);
                for (auto& c : planned.cards) {
                    caps.push_back(c.capacity);
                    commands.push_back(c.program.commands.size());
                }
                parts = std::move(planned.parts);
                // The system's links and routes: what a run of these programs would refuse.
                std::vector<const program::Program*> programs;
                for (auto& c : planned.cards)
                    programs.push_back(&c.program);
                if (auto why = sim::system::network_refusal(config, programs)) {
                    report.refusals.push_back({std::nullopt, *why});
                    fmt::print("refusals:\n  {}\n", report.refusals.back().text());
                }
            } catch (const Refusal& r) {
                report.refusals.push_back({std::nullopt, r.what()});
                fmt::print("refusals:\n  {}\n", report.refusals.back().text());
            }
            std::vector<std::string> over;
            for (std::size_t k = 0; k < caps.size(); ++k) {
                fmt::print("card {} of {} ({}; {} commands a step):\n{}", k, caps.size(), parts[k],
                           commands[k], caps[k].text());
                if (!caps[k].fits()) {
                    report.refusals.push_back(
                        {std::nullopt, fmt::format("card {} of {}: {}", k, caps.size(), caps[k].refusal())});
                    over.push_back(report.refusals.back().text());
                }
            }
            if (!over.empty()) {
                fmt::print("refusals:\n");
                for (auto& r : over)
                    fmt::print("  {}\n", r);
            }
        } else if (decoder) {
            auto cap = lower::capacity(built.graph, model.checkpoint, lower::target_of(config), o);
            fmt::print("{}", cap.text());
            if (!cap.fits()) {
                report.refusals.push_back({std::nullopt, cap.refusal()});
                fmt::print("refusals:\n  {}\n", report.refusals.back().text());
            }
        }
    }
    // The verdict is the model's on this card; a card config that does not fit the chip is said
    // on the verdict line too (the exit code stays the model's), so that a reader of the last line
    // alone is not told the card runs it and nothing else.
    const auto fit = fit::check_fit(config);
    std::string verdict = report.verdict();
    if (!fit.fits() && report.runs())
        verdict.insert(verdict.find_last_not_of('\n') + 1,
                       "; but this card config does not fit the chip (the fit line above)");
    fmt::print("{}\n{}", fit::verdict_line(fit), verdict);
    return report.runs() ? Ok : Negative;
}

const Register registered_check{
    {"check", "say what the card runs of a checkpoint, per layer, and every refusal", run_check}};

} // namespace
} // namespace cardsim::cli
