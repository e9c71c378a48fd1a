// `cardsim serve MODEL_DIR|PROG --requests FILE`: a request trace served with continuous batching on the
// simulated card; `cardsim serve --gen poisson ... -o FILE`: a request trace made up.

#include "cli/card_options.hpp"
#include "cli/command.hpp"
#include "cli/host_clock.hpp"
#include "cli/output_paths.hpp"
#include "cli/pack_cache_option.hpp"
#include "cli/plan_option.hpp"
#include "cli/serve_run.hpp"
#include "engine/error.hpp"
#include "serve/generate.hpp"
#include "serve/metrics.hpp"

#include <fmt/core.h>

#include <filesystem>
#include <optional>

#include <unistd.h>

namespace cardsim::cli {
namespace {

int run_serve(std::span<const std::string> args) {
    namespace po = boost::program_options;
    po::options_description opts("options");
    opts.add(card_options());
    opts.add(knob_options());
    opts.add(plan_options());
    opts.add(pack_cache_options());
    opts.add_options()("input", po::value<std::string>(),
                       "the checkpoint directory to serve, or a program set (cardsim compile --rows)")(
        "model", po::value<std::string>(),
        "the checkpoint directory (serving a program set: the one it was compiled from, for --check)")(
        "requests", po::value<std::string>(),
        "the request trace (CSV: arrival_s,prompt_tokens,output_tokens[,prompt_ids], or Vidur's "
        "arrived_at,num_prefill_tokens,num_decode_tokens)")(
        "gen", po::value<std::string>(), "make the request trace up (poisson): served, or written to -o")(
        "rate", po::value<double>()->default_value(10),
        "--gen: requests a second")("count", po::value<std::size_t>()->default_value(32), "--gen: requests")(
        "prompt-len", po::value<std::string>()->default_value("32"),
        "--gen: prompt tokens, N or LOW:HIGH (uniform)")("output-len",
                                                         po::value<std::string>()->default_value("32"),
                                                         "--gen: output tokens, N or LOW:HIGH (uniform)")(
        "seed", po::value<std::uint64_t>()->default_value(1), "--gen: the generator's seed")(
        "output,o", po::value<std::string>(),
        "--gen: also write the trace made up here (without a checkpoint: only that)")(
        "policy", po::value<std::string>()->default_value("decode-first"),
        "decode-first (every decoding sequence's row first, prompts chunked into what is left) or "
        "prefill-first")(
        "token-budget", po::value<std::size_t>()->default_value(16),
        "token rows a step holds at most (also the most sequences at once; a program set: its largest "
        "bucket's by default)")("chunk", po::value<std::size_t>()->default_value(0),
                                "prompt tokens one request takes a step at most (0: what the budget leaves)")(
        "max-seqs", po::value<std::size_t>()->default_value(0),
        "sequences admitted at once at most (0: as many as the card's DDR holds)")(
        "max-positions", po::value<std::size_t>(),
        "positions a sequence's slot holds (default: the longest request's prompt + output)")(
        "check", po::bool_switch(),
        "compute every step on real bits and check it against the golden executor")(
        "shapes-only", po::bool_switch(), "read the checkpoint's config.json alone (timing only)")(
        "table", po::value<std::string>(), "write one line a request (CSV: its times and latencies) here")(
        "routing", po::value<std::string>()->default_value("uniform"),
        "without --check, a model with experts: how rows route (uniform, skew:S, trace:FILE)")(
        "routing-seed", po::value<std::uint64_t>()->default_value(0), "the seed of --routing")(
        "machine", po::bool_switch(), "print key=value lines instead of the summary");
    const char* const positional[] = {"input"};
    auto vm = parse("serve",
                    "MODEL_DIR|PROG [--model DIR] --requests FILE [--policy decode-first|prefill-first] "
                    "[--token-budget N] "
                    "[--chunk N] [--max-seqs N] [--max-positions N] [--check] [--table F.csv] [--config C] "
                    "[--set k=v] [--plan pp|tp|ep|tp×pp] [--pack-cache DIR] [--machine] ...\n       cardsim "
                    "serve --gen poisson --rate R --count N [--prompt-len N|LO:HI] "
                    "[--output-len N|LO:HI] [--seed S] (-o FILE | MODEL_DIR ...)",
                    args, opts, positional);
    // The positional input: a checkpoint directory, or a program set file.
    std::optional<std::filesystem::path> model_dir, program;
    if (vm.count("model")) model_dir = vm["model"].as<std::string>();
    if (vm.count("input")) {
        std::filesystem::path in = vm["input"].as<std::string>();
        bool dir = std::filesystem::is_directory(in);
        if (!dir && !std::filesystem::is_regular_file(in))
            throw Error(fmt::format("{}: no such checkpoint directory or program set file", in.string()));
        if (dir && model_dir)
            throw Error(fmt::format("{} is a checkpoint directory and --model names another one: give one",
                                    in.string()));
        (dir ? model_dir : program) = in;
    }
    const bool served = model_dir || program;
    // An option that does nothing in the mode asked for is refused, naming it, never ignored.
    if (!vm.count("gen"))
        for (const char* o : {"rate", "count", "prompt-len", "output-len", "seed"})
            if (given(vm, o))
                throw Error(fmt::format("--{}: it shapes the requests --gen makes up, and the requests come "
                                        "from --requests (drop it, or give --gen poisson)",
                                        o));
    if (vm.count("gen") && !served)
        for (const char* o :
             {"policy", "token-budget", "chunk", "max-seqs", "max-positions", "check", "shapes-only", "table",
              "routing", "routing-seed", "machine", "config", "set", "knob", "plan", "pack-cache"})
            if (given(vm, o))
                throw Error(fmt::format("--{}: nothing is served (--gen with -o and no checkpoint writes the "
                                        "trace alone): give the checkpoint to serve it on, or drop --{}",
                                        o, o));
    Outputs outputs; // checked before any work; removed again if the serve fails
    if (vm.count("output")) outputs.file("-o", vm["output"].as<std::string>());
    if (vm.count("table")) outputs.file("--table", vm["table"].as<std::string>());
    std::vector<serve::Request> requests;
    if (vm.count("gen")) {
        if (vm["gen"].as<std::string>() != "poisson")
            throw Error(fmt::format("--gen {}: the generator makes poisson traces (--gen poisson)",
                                    vm["gen"].as<std::string>()));
        if (vm.count("requests")) throw Error("--gen makes the requests: give --gen or --requests, not both");
        if (!vm.count("output") && !served)
            throw Error(
                "--gen poisson: give the trace file to write (-o FILE), or a checkpoint to serve it on");
        serve::PoissonSpec spec;
        spec.rate = vm["rate"].as<double>();
        spec.count = vm["count"].as<std::size_t>();
        spec.prompt = serve::parse_lengths(vm["prompt-len"].as<std::string>(), "--prompt-len");
        spec.output = serve::parse_lengths(vm["output-len"].as<std::string>(), "--output-len");
        spec.seed = vm["seed"].as<std::uint64_t>();
        requests = serve::poisson(spec);
        // Also when only written: a trace no serving run could take is refused, not written.
        if (!requests.empty() && requests.back().arrival_seconds > serve::Request::latest_arrival_seconds)
            throw Error(fmt::format(
                "--gen poisson: the last of {} requests at {} a second arrives at {:.3g} s, past the "
                "{} s a serving run can reach (the simulated time is femtoseconds in 63 "
                "bits): raise --rate or lower --count",
                requests.size(), spec.rate, requests.back().arrival_seconds,
                serve::Request::latest_arrival_seconds));
        if (vm.count("output")) {
            serve::write_requests(vm["output"].as<std::string>(), requests);
            if (!served) {
                outputs.keep();
                fmt::print("wrote {} requests over {:.3f} s ({} a second asked) to {}\n", requests.size(),
                           requests.back().arrival_seconds, spec.rate, vm["output"].as<std::string>());
                return Ok;
            }
        }
    } else if (vm.count("output")) {
        throw Error("-o writes the trace --gen makes (serve writes its per-request table with --table)");
    }
    if (!served)
        throw Error("serve: give the checkpoint directory or the program set to serve (cardsim serve "
                    "MODEL_DIR|PROG --requests FILE)");
    if (!vm.count("gen")) {
        if (!vm.count("requests"))
            throw Error("serve: give a request trace (--requests FILE), or --gen poisson to make one");
        requests = serve::read_requests(vm["requests"].as<std::string>());
        if (requests.empty())
            throw Error(fmt::format("{}: the trace holds no requests", vm["requests"].as<std::string>()));
    }
    ServeRequest req;
    req.model_dir = model_dir;
    req.pack_cache = pack_cache_of(vm);
    req.program = program;
    req.default_budget = vm["token-budget"].defaulted();
    req.requests = std::move(requests);
    req.config = load_card(vm, knob_overrides(vm));
    req.plan = plan_of(vm, req.config);
    req.policy.order = serve::parse_order(vm["policy"].as<std::string>());
    req.policy.token_budget = vm["token-budget"].as<std::size_t>();
    req.policy.chunk = vm["chunk"].as<std::size_t>();
    req.policy.max_seqs = vm["max-seqs"].as<std::size_t>();
    if (vm.count("max-positions")) req.max_positions = vm["max-positions"].as<std::size_t>();
    req.check = vm["check"].as<bool>();
    req.routing = vm["routing"].as<std::string>();
    req.routing_given = !vm["routing"].defaulted();
    req.routing_seed_given = !vm["routing-seed"].defaulted();
    req.routing_seed = vm["routing-seed"].as<std::uint64_t>();
    if (req.check && !vm["routing"].defaulted())
        throw Error("--routing: with --check the router chooses the experts from the data (drop one)");
    if (req.check && req.routing_seed_given)
        throw Error("--routing-seed: with --check the router chooses the experts from the data (drop one)");
    if (req.routing_seed_given && req.routing.starts_with("trace:"))
        throw Error(fmt::format("--routing-seed: --routing {} replays the experts a trace chose, so no "
                                "routing model draws them (drop --routing-seed)",
                                req.routing));
    if (program && model_dir && !req.check)
        throw Error(fmt::format("--model: serving {} without --check times it from the program set alone and "
                                "reads no checkpoint (add --check, or drop --model)",
                                program->string()));
    req.shapes_only = vm["shapes-only"].as<bool>();
    if (program && req.shapes_only)
        throw Error(
            fmt::format("--shapes-only: it reads a checkpoint's config.json alone, and {} is a program "
                        "set with its weights in its image (drop --shapes-only)",
                        program->string()));
    if (vm.count("pack-cache") && program)
        throw Error(fmt::format("{}: a program set's weights are in its image, so nothing is packed: pass "
                                "--pack-cache to cardsim compile",
                                program->string()));
    if (vm.count("pack-cache") && (!req.check || req.shapes_only))
        throw Error("--pack-cache: serving without --check times the steps from shapes and packs no weights "
                    "(drop --pack-cache, or add --check)");
    req.progress = ::isatty(2) && !vm["machine"].as<bool>();
    auto rep = serve_model(req);
    const double outputs_start = process_seconds();
    if (vm.count("table")) serve::write_request_table(vm["table"].as<std::string>(), rep.times);
    outputs.keep();
    rep.add_outputs(process_seconds() - outputs_start);
    fmt::print("{}", vm["machine"].as<bool>() ? rep.machine() : rep.text());
    return rep.ok() ? Ok : Negative;
}

const Register registered_serve{
    {"serve", "serve a request trace with continuous batching on the simulated card (or make one)",
     run_serve}};

} // namespace
} // namespace cardsim::cli
