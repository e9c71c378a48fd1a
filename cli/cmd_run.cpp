// `cardsim run MODEL_DIR | PROG [--model DIR]`: compile (or take a compiled program), simulate,
// check bit-exactness and accuracy, write traces.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "cli/output_paths.hpp"
#include "cli/pack_cache_option.hpp"
#include "cli/pipeline.hpp"
#include "cli/plan_option.hpp"
#include "engine/error.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <sstream>
#include <unistd.h>

namespace cardsim::cli {
namespace {

/// Token ids from `1,17,42` or `1 17 42`: at least one, no empty field between commas.
std::vector<std::uint32_t> parse_ids(const std::string& text) {
    std::vector<std::uint32_t> ids;
    std::istringstream fields(text);
    for (std::string field; std::getline(fields, field, ',');) {
        std::istringstream in(field);
        std::size_t words = 0;
        for (std::string word; in >> word; ++words) {
            std::size_t used = 0;
            unsigned long v = 0;
            try {
                v = std::stoul(word, &used);
            } catch (...) {
                used = 0;
            }
            if (used != word.size() || v > 0xffffffffu)
                throw Error(fmt::format(
                    "--prompt: `{}` is not a token id (expected non-negative integers, e.g. 1,17,42)", word));
            ids.push_back(std::uint32_t(v));
        }
        if (words == 0 && text.find(',') != std::string::npos)
            throw Error(
                fmt::format("--prompt `{}`: an empty id between commas (expected e.g. 1,17,42)", text));
    }
    if (!text.empty() && text.back() == ',')
        throw Error(
            fmt::format("--prompt `{}`: an empty id after the last comma (expected e.g. 1,17,42)", text));
    if (ids.empty())
        throw Error("--prompt: no token ids given (expected e.g. 1,17,42; omit it for the default)");
    return ids;
}

/// `STEP:CMD[:BYTE[:BIT]]` of --flip-bit: whole numbers, BIT 0..7.
sim::BitFlip parse_flip(const std::string& text) {
    std::vector<std::uint64_t> v;
    std::istringstream fields(text);
    for (std::string field; std::getline(fields, field, ':');) {
        std::size_t used = 0;
        std::uint64_t n = 0;
        try {
            n = std::stoull(field, &used);
        } catch (...) {
            used = 0;
        }
        if (field.empty() || used != field.size() || field[0] == '-')
            throw Error(
                fmt::format("--flip-bit {}: `{}` is not a whole number (expected STEP:CMD[:BYTE[:BIT]], "
                            "e.g. 2:17 or 2:17:0:3)",
                            text, field));
        v.push_back(n);
    }
    if (v.size() < 2 || v.size() > 4 || v[0] > 0xffffffffu || v[1] > 0xffffffffu ||
        (v.size() == 4 && v[3] > 7))
        throw Error(fmt::format(
            "--flip-bit {}: expected STEP:CMD[:BYTE[:BIT]] (BIT 0..7), e.g. 2:17 or 2:17:0:3", text));
    return {std::uint32_t(v[0]), std::uint32_t(v[1]), v.size() > 2 ? v[2] : 0,
            std::uint8_t(v.size() > 3 ? v[3] : 0)};
}

/// The most tokens a run generates: positions are u32 on the card.
constexpr std::size_t max_tokens = std::size_t{1} << 31;

int run_model_command(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add(card_options());
    opts.add(knob_options());
    opts.add(plan_options());
    opts.add(pack_cache_options());
    opts.add(ddr_trace_options());
    opts.add_options()("input", po::value<std::string>(),
                       "a checkpoint directory (config.json + safetensors) or a program file")(
        "model", po::value<std::string>(),
        "the checkpoint directory (with a program: the one it was compiled from)")(
        "program", po::value<std::string>(),
        "a program file from cardsim compile (its image beside it: PROG.ddr)")(
        "check-layers", po::value<std::string>(),
        "also read back these layers' outputs each step and check them bit for bit: all, or e.g. 0,3,7")(
        "max-positions", po::value<std::size_t>(), "positions the caches hold (default: the run's steps)")(
        "tokens", po::value<std::size_t>()->default_value(8), "tokens to generate (decoders)")(
        "prompt", po::value<std::vector<std::string>>(),
        "prompt token ids, e.g. 1,17,42 (default: a fixed prompt); repeated: one a sequence")(
        "seqs", po::value<std::size_t>(),
        "decoders: sequences decoded together, one token each a step (default: 1, or as many as --prompt; "
        "a program: its bucket's)")("trace", po::value<std::string>(), "write the run's trace here")(
        "trace-data", po::bool_switch(), "the trace carries the bytes each command wrote")(
        "rtl", po::value<std::string>(),
        "co-simulate this unit kind from its RTL (matvec: rtl/matvec.sv, each result checked bit for bit)")(
        "perfetto", po::value<std::string>(), "write a Perfetto / Chrome trace JSON here")(
        "vcd", po::value<std::string>(), "write a VCD of unit busy signals and DDR channel activity here")(
        "csv", po::value<std::string>(), "write the per-command table here")(
        "report", po::value<std::string>(),
        "write the run's report page here (one self-contained HTML file)")(
        "timing-only", po::bool_switch(), "skip the arithmetic (same cycles, no outputs)")(
        "no-reference", po::bool_switch(), "skip the f64 reference")(
        "prompt-len", po::value<std::size_t>(),
        "time a prompt of N tokens (timing-only): prefill in chunks, then --tokens decode steps after it")(
        "microbatches", po::value<std::size_t>(),
        "under a pipeline plan: split a step's --seqs sequences into M groups stepped one after another, "
        "so that the stages work on different groups at once (default: the largest divisor of the "
        "sequences up to the stages)")("chunk", po::value<std::size_t>()->default_value(16),
                                       "with --prompt-len: tokens a prefill step takes")(
        "shapes-only", po::bool_switch(),
        "read the checkpoint's config.json alone: never read or pack weights (with --timing-only)")(
        "flip-bit", po::value<std::string>(),
        "STEP:CMD[:BYTE[:BIT]]: flip one bit of what command CMD writes in step STEP, a deliberate error: "
        "the bit-exact check names the first output it reaches (a low bit of an intermediate value may "
        "vanish in a later rounding; --check-layers reads each layer's output back)")(
        "routing", po::value<std::string>(),
        "timing-only, a model with experts: how rows route without data: uniform (default), skew:S (Zipf "
        "popularity, exponent S) or trace:FILE (a routing trace of run --routing-out)")(
        "routing-seed", po::value<std::uint64_t>()->default_value(0),
        "the seed of --routing uniform and skew:S")(
        "routing-out", po::value<std::string>(),
        "write the run's routing here (per step, Moe layer and row: the chosen experts)")(
        "machine", po::bool_switch(), "print key=value lines instead of the summary");
    const char* const positional[] = {"input"};
    auto vm = parse(
        "run",
        "MODEL_DIR|PROG [--model DIR] [--config C] [--set k=v] [--tokens N] [--seqs S] [--prompt IDS]... "
        "[--knob k=v] [--check-layers all|0,3,7] [--trace F] [--perfetto F] [--vcd F] [--report F.html] "
        "[--timing-only] [--shapes-only] [--prompt-len N [--chunk C]] [--rtl matvec] [--ddr-trace F] "
        "[--routing uniform|skew:S|trace:F] [--routing-out F] [--plan pp|tp|ep|tp×pp [--microbatches M]] "
        "[--pack-cache DIR] [--machine] ...",
        args, opts, positional);
    auto knobs = knob_overrides(vm);
    RunRequest req;
    req.config = load_card(vm, knobs);
    req.plan = plan_of(vm, req.config);
    if (vm.count("model")) req.model_dir = vm["model"].as<std::string>();
    req.pack_cache = pack_cache_of(vm);
    req.pack_cache_given = vm.count("pack-cache") > 0;
    if (vm.count("program")) req.program = vm["program"].as<std::string>();
    if (vm.count("input")) {
        std::filesystem::path in = vm["input"].as<std::string>();
        bool dir = std::filesystem::is_directory(in);
        // Under a plan, PROG names the cards' programs PROG.card0, PROG.card1, ...
        const bool cards = !req.plan.one() && std::filesystem::is_regular_file(in.string() + ".card0");
        if (!dir && !cards && !std::filesystem::is_regular_file(in))
            throw Error(fmt::format("{}: no such checkpoint directory or program file{}", in.string(),
                                    req.plan.one() ? "" : fmt::format(" (nor {}.card0)", in.string())));
        auto& slot = dir ? req.model_dir : req.program;
        if (slot)
            throw Error(fmt::format("{} is a {} and --{} names another one: give one", in.string(),
                                    dir ? "checkpoint directory" : "program file",
                                    dir ? "model" : "program"));
        slot = in;
    }
    if (!req.model_dir && !req.program)
        throw Error("run: give a checkpoint directory or a program file (cardsim run MODEL_DIR, or PROG "
                    "[--model DIR])");
    if (vm.count("check-layers")) req.check_layers = vm["check-layers"].as<std::string>();
    if (vm.count("max-positions")) req.max_positions = vm["max-positions"].as<std::size_t>();
    req.tokens = vm["tokens"].as<std::size_t>();
    req.tokens_given = !vm["tokens"].defaulted();
    if (req.tokens == 0 || req.tokens > max_tokens)
        throw Error(
            fmt::format("--tokens {}: expected 1 .. {} (a decoder generates at least the token of its "
                        "last prompt step)",
                        req.tokens, max_tokens));
    if (vm.count("prompt")) {
        auto prompts = vm["prompt"].as<std::vector<std::string>>();
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            std::vector<std::uint32_t> ids;
            try {
                ids = parse_ids(prompts[i]);
            } catch (const Error& e) {
                if (prompts.size() == 1) throw;
                throw Error(
                    fmt::format("the prompt of sequence {} has no ids or is malformed: {}", i, e.what()));
            }
            (i == 0 ? req.prompt : req.other_prompts.emplace_back()) = std::move(ids);
        }
    }
    if (vm.count("seqs")) {
        req.seqs = vm["seqs"].as<std::size_t>();
        if (*req.seqs == 0) throw Error("--seqs: give a positive count of sequences");
    }
    req.mode = vm["timing-only"].as<bool>() ? sim::Mode::TimingOnly : sim::Mode::Full;
    req.reference = !vm["no-reference"].as<bool>();
    req.shapes_only = vm["shapes-only"].as<bool>();
    if (vm.count("prompt-len")) req.prompt_len = vm["prompt-len"].as<std::size_t>();
    if (vm.count("microbatches")) req.microbatches = vm["microbatches"].as<std::size_t>();
    req.chunk = vm["chunk"].as<std::size_t>();
    req.chunk_given = !vm["chunk"].defaulted();
    if (vm.count("trace")) req.trace = vm["trace"].as<std::string>();
    if (vm.count("perfetto")) req.perfetto = vm["perfetto"].as<std::string>();
    if (vm.count("vcd")) req.vcd = vm["vcd"].as<std::string>();
    if (vm.count("csv")) req.csv = vm["csv"].as<std::string>();
    if (vm.count("report")) req.report = vm["report"].as<std::string>();
    req.trace_data = vm["trace-data"].as<bool>();
    req.ddr_trace = ddr_trace_request(vm, req.config);
    if (vm.count("rtl")) {
        if (vm["rtl"].as<std::string>() != "matvec")
            throw Error(fmt::format("--rtl {}: the RTL co-simulation has the matvec unit only (--rtl matvec)",
                                    vm["rtl"].as<std::string>()));
        req.rtl_matvec = true;
    }
    if (vm.count("flip-bit")) req.flip = parse_flip(vm["flip-bit"].as<std::string>());
    if (vm.count("routing")) req.routing = vm["routing"].as<std::string>();
    req.routing_seed = vm["routing-seed"].as<std::uint64_t>();
    req.routing_seed_given = !vm["routing-seed"].defaulted();
    if (vm.count("routing-out")) req.routing_out = vm["routing-out"].as<std::string>();
    req.progress = ::isatty(2) && !vm["machine"].as<bool>();
    Outputs outputs; // checked before any work; removed again if the run fails
    for (auto& [option, path] : {std::pair{"--trace", req.trace},
                                 {"--perfetto", req.perfetto},
                                 {"--vcd", req.vcd},
                                 {"--csv", req.csv},
                                 {"--report", req.report}})
        if (path) outputs.file(option, *path);
    if (req.ddr_trace) outputs.file("--ddr-trace", req.ddr_trace->path);
    if (req.routing_out) outputs.file("--routing-out", *req.routing_out);
    auto rep = run_model(req);
    outputs.keep();
    fmt::print("{}", vm["machine"].as<bool>() ? rep.machine() : rep.text());
    return rep.ok() ? Ok : Negative;
}

const Register registered_run{
    {"run", "compile a checkpoint (or take a program), run it on the simulated card, check it bit for bit",
     run_model_command}};

} // namespace
} // namespace cardsim::cli
