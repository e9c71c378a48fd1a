// `cardsim make-model`: writes a synthetic checkpoint (config.json + safetensors) of one of the
// architectures the recognisers know, with its real tensor names and deterministic weights.

#include "cli/command.hpp"
#include "cli/output_paths.hpp"
#include "engine/error.hpp"
#include "models/recognise.hpp"
#include "models/synthetic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace cardsim::cli {
namespace {

namespace po = boost::program_options;

int run_make_model(std::span<const std::string> args) {
    po::options_description o("options");
    o.add_options()(
        "arch", po::value<std::string>()->required(),
        "dense | hybrid | hybrid-moe | moe | hybrid-moe35 | gpt-oss | encoder | windowed | softcap | mla "
        "(hybrid-moe: Qwen3-Next; moe: Qwen3-MoE; hybrid-moe35: Qwen3.5-MoE, experts fused in "
        "gate_up_proj / down_proj; gpt-oss: gpt-oss-20b's layout)")(
        "size", po::value<std::string>()->default_value("tiny"),
        "tiny | small | 0.1b | 0.8b, or the published 1.7b | 4b | 8b | 14b | 32b "
        "(dense, "
        "hybrid), 30b-a3b | 235b-a22b (moe), 80b-a3b (hybrid-moe), 35b-a3b | 122b-a10b (hybrid-moe35), "
        "20b | 120b (gpt-oss)")("shapes-only", po::bool_switch(),
                                "write config.json alone (no safetensors): a model timed from its shape")(
        "seed", po::value<std::uint64_t>()->default_value(0),
        "the seed of the weights")("dtype", po::value<std::string>()->default_value("bf16"), "bf16 | f32")(
        "shards", po::value<unsigned>()->default_value(1), "safetensors files (more than 1 writes an index)")(
        "threads",
        po::value<unsigned>()->default_value(std::max(1u, std::min(2u, std::thread::hardware_concurrency()))),
        "workers filling the tensors")("force", "replace the output directory if it exists")(
        "output,o", po::value<std::string>()->required(), "the checkpoint directory to write");
    auto vm =
        parse("make-model", "--arch ARCH [--size SIZE] [--seed S] [--dtype bf16|f32] [--shapes-only] -o DIR",
              args, o);

    models::SynthOptions opt;
    const auto arch = vm["arch"].as<std::string>(), size = vm["size"].as<std::string>(),
               dtype = vm["dtype"].as<std::string>();
    auto a = models::parse_synth_arch(arch);
    if (!a)
        throw Error(fmt::format("cardsim make-model: --arch `{}` is not dense, hybrid, hybrid-moe, moe, "
                                "hybrid-moe35, gpt-oss, encoder, windowed, softcap or mla",
                                arch));
    if (dtype != "bf16" && dtype != "f32")
        throw Error(fmt::format("cardsim make-model: --dtype `{}` is not bf16 or f32", dtype));
    // An option given where it does nothing is refused, naming it, never ignored: a shapes-only
    // checkpoint is config.json alone, with no weights to draw, store, split or fill.
    if (vm["shapes-only"].as<bool>())
        for (const char* n : {"seed", "dtype", "shards", "threads"})
            if (given(vm, n))
                throw Error(fmt::format(
                    "cardsim make-model --shapes-only: --{} does nothing there: a shapes-only checkpoint is "
                    "config.json alone, with no weights to draw, store, split or fill (drop --{}, or drop "
                    "--shapes-only to write the weights)",
                    n, n));
    const std::string out = vm["output"].as<std::string>();
    Outputs
        outputs; // its parent checked before any work (the checkpoint itself is written whole or not at all)
    outputs.folder("-o", out);
    outputs.keep(); // make_model removes its own temporary folder on a failure
    if (vm["shapes-only"].as<bool>()) {
        // A published shape (or a synthetic one) as config.json alone.
        boost::json::object config;
        std::string what;
        if (auto p = models::parse_published_size(size)) {
            auto pub = models::published_model(*a, *p);
            config = std::move(pub.config);
            what = fmt::format("the published {} shape", pub.name);
        } else if (auto syn = models::parse_synth_size(size)) {
            config = models::synth_config(*a, *syn);
            what = fmt::format("the synthetic {} {} shape", arch, size);
        } else {
            throw Error(
                fmt::format("cardsim make-model: --size `{}` is not tiny, small, 0.1b, 0.8b, 1.7b, 4b, "
                            "8b, 14b, 32b, 30b-a3b, 235b-a22b, 80b-a3b, 35b-a3b, 122b-a10b, 20b or 120b",
                            size));
        }
        models::write_config_only(config, out, vm.count("force") > 0);
        auto spec = models::parse_config(config, out + "/config.json");
        fmt::print(
            "wrote {}/config.json: {}, {}, {} layers, shapes only (no weights; run it with --timing-only)\n",
            out, what, models::describe(spec), models::layer_kinds(spec).size());
        return Ok;
    }
    auto s = models::parse_synth_size(size);
    auto published = models::parse_published_size(size);
    if (!s && !published)
        throw Error(
            fmt::format("cardsim make-model: --size `{}` is not tiny, small, 0.1b, 0.8b or a published "
                        "size (1.7b, 4b, 8b, ...)",
                        size));
    opt.arch = *a;
    if (s) opt.size = *s;
    opt.seed = vm["seed"].as<std::uint64_t>();
    opt.dtype = dtype == "bf16" ? models::Dtype::BF16 : models::Dtype::F32;
    opt.shards = vm["shards"].as<unsigned>();
    opt.threads = vm["threads"].as<unsigned>();
    opt.replace = vm.count("force") > 0;
    // A published size with weights: its config.json and generated values (e.g. a 1.7B to time a full
    // run on); the synthetic sizes as make_model writes them.
    const auto r = published
                       ? models::write_synthetic(models::published_model(*a, *published).config, opt, out)
                       : models::make_model(opt, out);
    fmt::print("wrote {}: {}, {} layers, {} parameters, {} bytes of {} in {} file{}\n", out,
               models::describe(r.spec), models::layer_kinds(r.spec).size(), r.parameters, r.bytes, dtype,
               r.files.size(), r.files.size() == 1 ? "" : "s");
    return Ok;
}

const Register registered_make_model{
    {"make-model", "write a synthetic checkpoint (config.json + safetensors)", run_make_model}};

} // namespace
} // namespace cardsim::cli
