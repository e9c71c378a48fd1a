// Shapes-only models (config.json alone, or --shapes-only): the same cycles as the run with
// weights, host memory that does not grow with the model, and the DDR capacity refusal at its
// computed boundary.

#include "engine/card/card_config.hpp"
#include "engine/error.hpp"
#include "engine/lower/lower.hpp"
#include "models/model.hpp"
#include "models/synthetic.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <tuple>

using cardsim::test::contains;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;
namespace models = cardsim::models;
namespace lower = cardsim::lower;

namespace {

/// The value of `key=` in `--machine` output.
std::string field(const std::string& out, const std::string& key) {
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
    FAIL("no " << key << "= in:\n" << out);
    return {};
}

/// Resident memory of this process now, bytes (/proc/self/statm).
std::uint64_t resident_bytes() {
    std::ifstream in("/proc/self/statm");
    std::uint64_t pages = 0, resident = 0;
    in >> pages >> resident;
    return resident * std::uint64_t(::sysconf(_SC_PAGESIZE));
}

/// How much the peak resident memory of a child process rises over its start while it loads and
/// lowers `dir` shapes-only (the child forked first, so each measure starts from the same state).
std::uint64_t shapes_only_compile_growth(const std::filesystem::path& dir) {
    auto v = cardsim::test::in_child([&] {
        const std::uint64_t before = resident_bytes();
        auto model = models::load_model(dir);
        auto built = models::build_graph(model);
        lower::Options o(cardsim::graph::Bucket{1, 1, 0}, 1024);
        o.shapes_only = true;
        auto c = lower::lower(built.graph, model.checkpoint,
                              lower::target_of(cardsim::card::default_card_config()), o);
        rusage u{};
        ::getrusage(RUSAGE_SELF, &u);
        const std::uint64_t peak = std::uint64_t(u.ru_maxrss) * 1024;
        return std::vector<std::uint64_t>{peak > before ? peak - before : 0,
                                          c.program.region(cardsim::program::Region::Weights)->size};
    });
    REQUIRE(v.size() == 2);
    // The weights it placed: at least a byte per parameter of its int8 matrices.
    CHECK(v[1] > (std::uint64_t(1) << 30) / 4);
    return v[0];
}

} // namespace

TEST_CASE("a shapes-only run takes exactly the cycles and DDR bytes of the full run with weights") {
    ScratchDir dir("shapes-cycles");
    for (std::string arch : {"dense", "hybrid"}) {
        auto full = (dir / arch).string(), shapes = (dir / (arch + "-shapes")).string();
        REQUIRE(run_cardsim("make-model --arch " + arch + " --size small --seed 3 -o " + full).code == 0);
        std::filesystem::create_directories(shapes);
        std::filesystem::copy_file(std::filesystem::path(full) / "config.json",
                                   std::filesystem::path(shapes) / "config.json");
        auto with_weights = run_cardsim("run " + full + " --tokens 3 --no-reference --machine");
        REQUIRE(with_weights.code == 0);
        REQUIRE(field(with_weights.out, "bit_exact") == "yes");
        auto alone = run_cardsim("run " + shapes + " --tokens 3 --timing-only --machine");
        auto flag = run_cardsim("run " + full + " --tokens 3 --timing-only --shapes-only --machine");
        REQUIRE(alone.code == 0);
        REQUIRE(flag.code == 0);
        CHECK(field(alone.out, "cycles") == field(with_weights.out, "cycles"));
        CHECK(field(alone.out, "ddr_bytes") == field(with_weights.out, "ddr_bytes"));
        CHECK(field(flag.out, "cycles") == field(with_weights.out, "cycles"));
        // A full run of the config alone is refused, saying why.
        auto refused = run_cardsim("run " + shapes + " --tokens 3");
        CHECK(refused.code == 2);
        CHECK(contains(refused.out, "has shapes only"));
        CHECK(contains(refused.out, "--timing-only"));
    }
}

TEST_CASE("a compiled shapes-only program holds no weights and a full run of it is refused") {
    ScratchDir dir("shapes-program");
    auto m = (dir / "m").string(), prog = (dir / "p.prog").string();
    REQUIRE(run_cardsim("make-model --arch dense --size tiny --shapes-only -o " + m).code == 0);
    CHECK(!std::filesystem::exists(std::filesystem::path(m) / "model.safetensors"));
    auto c = run_cardsim("compile " + m + " -o " + prog + " --max-positions 8");
    REQUIRE(c.code == 0);
    CHECK(contains(c.out, "shapes only"));
    auto full = run_cardsim("run " + prog + " --tokens 2");
    CHECK(full.code == 2);
    CHECK(contains(full.out, "holds no weights"));
    CHECK(run_cardsim("run " + prog + " --tokens 2 --timing-only").code == 0);
}

TEST_CASE("host memory of a shapes-only compile does not grow with the hidden size") {
    ScratchDir dir("shapes-memory");
    // Qwen3-1.7B (hidden 2048, 1.7 GB of int8 weights) and Qwen3-8B (hidden 4096, 7.9 GiB).
    auto small = dir / "1.7b", large = dir / "8b";
    models::write_config_only(
        models::published_model(models::SynthArch::Dense, models::PublishedSize::B1_7).config, small, false);
    models::write_config_only(
        models::published_model(models::SynthArch::Dense, models::PublishedSize::B8).config, large, false);
    const auto a = shapes_only_compile_growth(small), b = shapes_only_compile_growth(large);
    INFO("resident growth: 1.7B " << a << " bytes, 8B " << b << " bytes");
    // Packing would take at least the weights (1.6 and 7.6 GiB); the graph, layout and commands
    // of either take a few MiB, and the 8B's no more than the 1.7B's beyond its extra layers.
    CHECK(a < (std::uint64_t(64) << 20));
    CHECK(b < (std::uint64_t(64) << 20));
    CHECK(b < a + (std::uint64_t(16) << 20));
}

TEST_CASE("the capacity refusal fires at the computed boundary: one channel too few") {
    ScratchDir dir("shapes-capacity");
    auto m = dir / "8b";
    models::write_config_only(
        models::published_model(models::SynthArch::Dense, models::PublishedSize::B8).config, m, false);
    auto model = models::load_model(m);
    auto built = models::build_graph(model);
    lower::Options o(cardsim::graph::Bucket{1, 1, 0}, 4096);
    o.shapes_only = true;
    auto config = [](std::string channels) {
        std::vector<cardsim::card::Override> set{{"ddr.channels", channels}};
        return cardsim::card::load_card_config(std::nullopt, set);
    };
    // The budget is the placement: the regions end where the budget says.
    auto two = lower::lower(built.graph, model.checkpoint, lower::target_of(config("2")), o);
    auto& cap = two.capacity;
    auto* last = two.program.region(cardsim::program::Region::Program);
    CHECK(cap.total() == last->base + last->size);
    CHECK(cap.fits());
    // An int8 weight is a byte plus its share of a block's one-byte scale (32 weights a block);
    // the norm vectors (f32) and the stripe alignment of each matrix add well under 1 %.
    const double params = double(model.checkpoint.parameter_count());
    CHECK(double(cap.weights) >= params * (1 + 1.0 / 32));
    CHECK(double(cap.weights) <= params * (1 + 1.0 / 32) * 1.01);
    // 8.4 GiB: over one 8 GiB channel, under two.
    const std::uint64_t channel = std::uint64_t(8192) << 20;
    REQUIRE(cap.total() > channel);
    REQUIRE(cap.total() <= 2 * channel);
    try {
        lower::lower(built.graph, model.checkpoint, lower::target_of(config("1")), o);
        FAIL("one channel holds the 8B");
    } catch (const cardsim::Error& e) {
        std::string why = e.what();
        INFO(why);
        CHECK(contains(why, "the card's 1 channel holds 8.0 GiB"));
        CHECK(contains(why, lower::gib(cap.weights)));
        CHECK(contains(why, "at int8"));
    }
    // cardsim check says the same and exits 1.
    auto c = run_cardsim("check " + m.string() + " --set ddr.channels=1");
    CHECK(c.code == 1);
    CHECK(contains(c.out, "does not fit"));
    CHECK(run_cardsim("check " + m.string() + " --set ddr.channels=2").code == 0);
}

TEST_CASE("every expert must fit the DDR: Qwen3-30B-A3B's capacity refusal fires at the position where "
          "its caches cross the card's 32 GiB") {
    ScratchDir dir("shapes-capacity-moe");
    // Qwen3-30B-A3B's published config.json (REFERENCE.md, "Third-wave facts"), shapes only.
    const auto m = dir / "30b-a3b";
    std::filesystem::create_directories(m);
    std::ofstream(m / "config.json")
        << R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
 "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
 "vocab_size": 151936, "intermediate_size": 6144, "num_experts": 128, "num_experts_per_tok": 8,
 "moe_intermediate_size": 768, "norm_topk_prob": true, "decoder_sparse_step": 1, "mlp_only_layers": [],
 "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": false,
 "max_position_embeddings": 40960, "torch_dtype": "bfloat16"})";
    auto model = models::load_model(m);
    auto built = models::build_graph(model);
    std::vector<cardsim::card::Override> set{{"capabilities.experts", "true"}};
    const auto config = cardsim::card::load_card_config(std::nullopt, set);
    auto at = [&](std::uint64_t positions) {
        lower::Options o(cardsim::graph::Bucket{1, 1, 0}, positions);
        o.shapes_only = true;
        return lower::lower(built.graph, model.checkpoint, lower::target_of(config), o);
    };
    const auto base = at(4096).capacity;
    REQUIRE(base.fits());
    // Every expert is in DDR, not only the 3.3B a token touches: the weights are the 30.5B
    // parameters at int8 (a byte and its share of a 32-weight block's scale), plus at most a 64-byte
    // burst's padding a matrix row (an expert's down row is 768 + 24 bytes, padded to 832) and a
    // 4 KiB stripe's alignment a matrix.
    const double params = double(model.checkpoint.parameter_count());
    double rows = 0, matrices = 0;
    for (std::size_t t = 0; t < model.checkpoint.tensor_count(); ++t) {
        auto shape = model.checkpoint.shape(t);
        rows += double(shape.size() > 1 ? shape[0] : 1);
        ++matrices;
    }
    CHECK(params > 30e9);
    CHECK(double(base.weights) >= params * (1 + 1.0 / 32));
    CHECK(double(base.weights) <= params * (1 + 1.0 / 32) + 64 * rows + 4096 * matrices);
    // A position of one sequence's caches: 48 layers x (K and V) x 4 heads x 128 x 2 bytes (f16).
    const auto step = at(4097).capacity;
    const std::uint64_t per_position = step.caches - base.caches;
    REQUIRE(per_position == 48u * 2 * 4 * 128 * 2);
    REQUIRE(step.total() - base.total() == per_position);
    // The last position count that fits, computed from the budget, and the one after it.
    const std::uint64_t last = 4096 + (base.ddr_bytes - base.total()) / per_position;
    INFO("positions that fit: " << last);
    const auto fits = at(last).capacity;
    CHECK(fits.fits());
    CHECK(base.ddr_bytes - fits.total() < per_position);
    try {
        at(last + 1);
        FAIL("one position more still fits");
    } catch (const cardsim::Error& e) {
        const std::string why = e.what();
        INFO(why);
        CHECK(contains(why, "the card's 4 channels hold 32.0 GiB"));
        CHECK(contains(why, "at int8"));
    }
    // cardsim check gives the same verdicts at the boundary.
    const std::string check = "check " + m.string() + " --set capabilities.experts=true --max-positions ";
    CHECK(run_cardsim(check + std::to_string(last)).code == 0);
    auto over = run_cardsim(check + std::to_string(last + 1));
    CHECK(over.code == 1);
    CHECK(contains(over.out, "does not fit"));
}

TEST_CASE("a prompt prefilled a token a chunk takes the cycles of the same prompt run token by token") {
    ScratchDir dir("shapes-prefill");
    auto m = (dir / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size small --shapes-only -o " + m).code == 0);
    // Four prompt steps of one token (positions 0..3), then nothing more: the run's whole time.
    auto by_token =
        run_cardsim("run " + m + " --timing-only --prompt 1,2,3,4 --tokens 1 --max-positions 8 --machine");
    auto chunk1 = run_cardsim(
        "run " + m + " --timing-only --prompt-len 4 --chunk 1 --tokens 1 --max-positions 8 --machine");
    auto chunk4 = run_cardsim(
        "run " + m + " --timing-only --prompt-len 4 --chunk 4 --tokens 1 --max-positions 8 --machine");
    REQUIRE(by_token.code == 0);
    REQUIRE(chunk1.code == 0);
    REQUIRE(chunk4.code == 0);
    CHECK(field(chunk1.out, "prefill_cycles") == field(by_token.out, "cycles"));
    CHECK(field(chunk1.out, "prefill_ddr_bytes") == field(by_token.out, "ddr_bytes"));
    CHECK(field(chunk1.out, "prefill_steps") == "4");
    CHECK(field(chunk4.out, "prefill_steps") == "1");
    // One chunk of four streams the weights once instead of four times.
    CHECK(std::stod(field(chunk4.out, "prefill_ddr_bytes")) <
          std::stod(field(chunk1.out, "prefill_ddr_bytes")) / 2);
    // Time to first token is the prefill; its tokens/s the prompt over it; no phase beats its roofline.
    for (auto* r : {&chunk1, &chunk4}) {
        const double ttft = std::stod(field(r->out, "ttft_seconds"));
        CHECK(ttft == std::stod(field(r->out, "prefill_seconds")));
        CHECK(std::stod(field(r->out, "prefill_tokens_per_second")) == Approx(4 / ttft));
        CHECK(std::stod(field(r->out, "prefill_roofline_fraction")) <= 1.0);
        CHECK(std::stod(field(r->out, "decode_roofline_fraction")) <= 1.0);
    }
    // A full run cannot time a prompt it has no ids for.
    auto full = run_cardsim("run " + m + " --prompt-len 4");
    CHECK(full.code == 2);
    CHECK(contains(full.out, "--timing-only"));
}

TEST_CASE(
    "a timing-only run of a full checkpoint reads no weight byte: garbage weights give the same cycles") {
    ScratchDir dir("timing-no-weights");
    auto m = (dir / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 3 -o " + m).code == 0);
    auto before = run_cardsim("run " + m + " --tokens 3 --timing-only --machine");
    REQUIRE(before.code == 0);
    const auto requests = (dir / "r.csv").string();
    std::ofstream(requests) << "arrival_s,prompt_tokens,output_tokens\n0,3,2\n0.00001,2,3\n";
    auto served = run_cardsim("serve " + m + " --requests " + requests + " --machine");
    REQUIRE(served.code == 0);
    // Programs compiled from it, with weights and from shapes alone.
    const auto prog = (dir / "p.prog").string(), shapes = (dir / "s.prog").string();
    REQUIRE(run_cardsim("compile " + m + " -o " + prog).code == 0);
    REQUIRE(run_cardsim("compile " + m + " -o " + shapes + " --shapes-only").code == 0);
    auto program = run_cardsim("run " + prog + " --model " + m + " --tokens 3 --timing-only --machine");
    INFO(program.out);
    REQUIRE(program.code == 0);
    // Every byte of every safetensors file replaced (header included): any read of a weight, or of
    // the files at all, fails the run.
    std::size_t trapped = 0;
    for (auto& e : std::filesystem::directory_iterator(m))
        if (e.path().extension() == ".safetensors") {
            const auto size = std::filesystem::file_size(e.path());
            std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << std::string(size, '\xff');
            ++trapped;
        }
    REQUIRE(trapped > 0);
    REQUIRE(run_cardsim("run " + m + " --tokens 3").code == 2); // a full run reads them, and fails
    auto after = run_cardsim("run " + m + " --tokens 3 --timing-only --machine");
    INFO(after.out);
    REQUIRE(after.code == 0);
    CHECK(field(after.out, "cycles") == field(before.out, "cycles"));
    CHECK(field(after.out, "ddr_bytes") == field(before.out, "ddr_bytes"));
    auto served_after = run_cardsim("serve " + m + " --requests " + requests + " --machine");
    INFO(served_after.out);
    REQUIRE(served_after.code == 0);
    CHECK(field(served_after.out, "cycles") == field(served.out, "cycles"));
    // A program run timing-only beside its checkpoint is checked by the checkpoint's graph, not by
    // reading the weights: the same cycles, whether the program holds weights or was compiled from
    // shapes. A full run reads the files, and finds them no safetensors.
    for (const auto& p : {prog, shapes}) {
        auto timed = run_cardsim("run " + p + " --model " + m + " --tokens 3 --timing-only --machine");
        INFO(p << ":\n" << timed.out);
        REQUIRE(timed.code == 0);
        CHECK(field(timed.out, "cycles") == field(program.out, "cycles"));
    }
    auto full = run_cardsim("run " + prog + " --model " + m + " --tokens 3");
    CHECK(full.code == 2);
    CHECK(contains(full.out, "model.safetensors: header length"));
}

TEST_CASE("make-model refuses options a shapes-only checkpoint does not use, naming them") {
    ScratchDir d("shapes-only-options");
    for (const char* option : {"--seed 3", "--dtype f32", "--dtype bf16", "--shards 2", "--threads 1"}) {
        INFO(option);
        auto r = run_cardsim(std::string("make-model --arch dense --size tiny --shapes-only ") + option +
                             " -o " + (d / "refused").string());
        CHECK(r.code == 2);
        const std::string name = std::string(option).substr(0, std::string(option).find(' '));
        CHECK(contains(r.out, "cardsim make-model --shapes-only: " + name + " does nothing there"));
        CHECK_FALSE(std::filesystem::exists(d / "refused"));
    }
    // --dtype is checked whatever the mode.
    for (const char* mode : {"--shapes-only", ""}) {
        auto bogus = run_cardsim(std::string("make-model --arch dense --size tiny --dtype bogus ") + mode +
                                 " -o " + (d / "bogus").string());
        CHECK(bogus.code == 2);
        CHECK(contains(bogus.out, "--dtype `bogus` is not bf16 or f32"));
    }
    // With the weights they are taken: f32 values in two files.
    auto weights = run_cardsim("make-model --arch dense --size tiny --dtype f32 --shards 2 --threads 1 -o " +
                               (d / "weights").string());
    CHECK(weights.code == 0);
    CHECK(contains(weights.out, "of f32 in 2 files"));
    // The shapes alone are still written.
    auto shapes =
        run_cardsim("make-model --arch dense --size tiny --shapes-only -o " + (d / "shapes").string());
    CHECK(shapes.code == 0);
    CHECK(std::filesystem::exists(d / "shapes" / "config.json"));
}

TEST_CASE("make-model's refusal of a size names the options given, not --shapes-only when it was not given") {
    ScratchDir d("make-model-size-errors");
    const std::tuple<std::string, std::string> cases[] = {
        {"--arch moe --size 8b", "make-model --arch moe --size 8b: published dense shapes are written for"},
        {"--arch encoder --size 30b-a3b",
         "make-model --arch encoder --size 30b-a3b: 30b-a3b is a published model of --arch moe, not encoder"},
        {"--arch hybrid --size 14b", "make-model --arch hybrid --size 14b: no Qwen3.5 of about 14b"},
    };
    for (const auto& [args, message] : cases) {
        for (const char* mode : {"", " --shapes-only"}) {
            INFO(args << mode);
            auto r = run_cardsim("make-model " + args + mode + " -o " + (d / "m").string());
            CHECK(r.code == 2);
            CHECK(contains(r.out, message));
            CHECK_FALSE(contains(r.out, "--shapes-only"));
        }
    }
}
