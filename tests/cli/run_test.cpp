// `cardsim run`, `check` and `compile` as a user runs them on generated checkpoints of each
// architecture: bit-exact verdicts, refusals with their sentences, exports that parse.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using cardsim::test::contains;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;
using cardsim::test::slurp;

namespace {

std::string encoder_config() {
    return std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml";
}

} // namespace

TEST_CASE("run is bit-exact on a dense and a hybrid decoder and reports the card and the accuracy") {
    const ScratchDir d("run-decoders");
    for (auto arch : {"dense", "hybrid"}) {
        auto r = run_cardsim("run " + make_model(d, arch) + " --tokens 3");
        INFO(r.out);
        REQUIRE(r.code == 0);
        REQUIRE(contains(r.out, "bit-exact: yes"));
        REQUIRE(contains(r.out, "generated: "));
        REQUIRE(contains(r.out, "accuracy vs f64 reference over 3 steps"));
        REQUIRE(contains(r.out, "% of the 76.8 GB/s peak"));
    }
}

TEST_CASE("an encoder is refused on the default card and runs bit-exact on a card with its units") {
    const ScratchDir d("run-encoder");
    auto m = make_model(d, "encoder");
    auto refused = run_cardsim("check " + m);
    REQUIRE(refused.code == 1);
    REQUIRE(contains(refused.out, "ffn: the engine has no unit for GELU"));
    REQUIRE(contains(refused.out, "verdict: the card refuses this model"));
    auto accepted = run_cardsim("check " + m + " --config " + encoder_config());
    REQUIRE(accepted.code == 0);
    REQUIRE(contains(accepted.out, "verdict: the card runs this model"));
    auto r = run_cardsim("run " + m + " --config " + encoder_config() + " --prompt 1,2,3,4,5,6,7,8");
    INFO(r.out);
    REQUIRE(r.code == 0);
    REQUIRE(contains(r.out, "bit-exact: yes"));
    auto run_refused = run_cardsim("run " + m); // refused, exit 1 as check: the sentences on stderr
    REQUIRE(run_refused.code == 1);
    REQUIRE(contains(run_refused.out, "refused: "));
    REQUIRE(contains(run_refused.out, "ffn: the engine has no unit for GELU"));
}

TEST_CASE("a model with experts is refused on a card without experts with the sentence, layer by layer") {
    const ScratchDir d("run-moe");
    auto r = run_cardsim("check " + make_model(d, "hybrid-moe"));
    REQUIRE(r.code == 1);
    REQUIRE(contains(r.out, "layer 0, ffn: the engine has no unit for experts"));
    const auto moe = make_model(d, "moe");
    auto q = run_cardsim("check " + moe);
    INFO(q.out);
    REQUIRE(q.code == 1);
    REQUIRE(contains(q.out, "layer 0, ffn: the engine has no unit for experts"));
    REQUIRE(contains(q.out, "layer 1, ffn: the engine has no unit for experts"));
    REQUIRE(run_cardsim("run " + moe + " --tokens 1").code == 1); // refused as check refuses, not run
    // With `capabilities.experts` both run it (tests/cli/experts_test.cpp: check's verdict is run's).
}

TEST_CASE("run writes a trace, a Perfetto file, a VCD and a CSV that carry every command") {
    const ScratchDir d("run-exports");
    auto m = make_model(d, "dense");
    auto r = run_cardsim("run " + m + " --tokens 2 --no-reference --trace " + (d / "t.trace").string() +
                         " --perfetto " + (d / "t.json").string() + " --vcd " + (d / "t.vcd").string() +
                         " --csv " + (d / "t.csv").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto trace = slurp(d / "t.trace");
    std::size_t commands = 0;
    for (std::size_t at = 0; (at = trace.find("\ncmd ", at)) != std::string::npos; ++at)
        ++commands;
    REQUIRE(commands > 10);
    auto json = boost::json::parse(slurp(d / "t.json"));
    std::size_t slices = 0;
    for (auto& e : json.at("traceEvents").as_array())
        if (e.as_object().at("ph").as_string() == "X") ++slices;
    REQUIRE(slices == commands);
    auto vcd = slurp(d / "t.vcd");
    REQUIRE(contains(vcd, "$timescale"));
    REQUIRE(contains(vcd, "$enddefinitions"));
    REQUIRE(contains(vcd, "$scope module matvec $end"));
    REQUIRE(contains(vcd, " busy "));
    REQUIRE(contains(vcd, "$scope module channel3 $end"));
    REQUIRE(contains(vcd, " active "));
    auto csv = slurp(d / "t.csv");
    REQUIRE(std::count(csv.begin(), csv.end(), '\n') == std::ptrdiff_t(commands + 1));
    REQUIRE_FALSE(std::filesystem::exists(d / "t.vcd.tmp.vcd"));
}

TEST_CASE("compile writes a program that disasm reads and a DDR image beside it") {
    const ScratchDir d("run-compile");
    auto m = make_model(d, "hybrid");
    auto prog = (d / "p.cardsim").string();
    auto c = run_cardsim("compile " + m + " -o " + prog);
    REQUIRE(c.code == 0);
    REQUIRE(std::filesystem::exists(prog + ".ddr"));
    auto dis = run_cardsim("disasm " + prog);
    REQUIRE(dis.code == 0);
    REQUIRE(contains(dis.out, "Matvec"));
    REQUIRE(contains(dis.out, "DeltaStep"));
    REQUIRE(run_cardsim("compile " + m + " -o " + prog + " --bucket seqs=0").code == 2);
}

TEST_CASE("a bad prompt, knob or config key is bad input naming it") {
    const ScratchDir d("run-bad");
    auto m = make_model(d, "dense");
    auto p = run_cardsim("run " + m + " --prompt 1,x");
    REQUIRE(p.code == 2);
    REQUIRE(contains(p.out, "`x` is not a token id"));
    auto k = run_cardsim("run " + m + " --knob cache=int3");
    REQUIRE(k.code == 2);
    REQUIRE(contains(k.out, "int3"));
    auto s = run_cardsim("run " + m + " --set ddr.chanels=2");
    REQUIRE(s.code == 2);
    REQUIRE(contains(s.out, "chanels"));
}

TEST_CASE("NaN weights give NaN logits, and the accuracy says so rather than a perfect match") {
    ScratchDir d("run-nan-weights");
    const auto m = make_model(d, "dense", 1);
    // One projection's bf16 weights all NaN (0x7fc0), in place in the safetensors file.
    const auto path = std::filesystem::path(m) / "model.safetensors";
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    REQUIRE(f);
    std::uint64_t header = 0;
    f.read(reinterpret_cast<char*>(&header), 8);
    std::string text(header, '\0');
    f.read(text.data(), std::streamsize(header));
    const auto& offsets =
        boost::json::parse(text).at("model.layers.0.self_attn.q_proj.weight").at("data_offsets");
    const auto begin = offsets.at(0).to_number<std::uint64_t>(),
               end = offsets.at(1).to_number<std::uint64_t>();
    std::string nan;
    for (auto i = begin; i < end; i += 2)
        nan += std::string("\xc0\x7f", 2);
    f.seekp(std::streamoff(8 + header + begin));
    f.write(nan.data(), std::streamsize(nan.size()));
    f.close();
    auto r = run_cardsim("run " + m + " --tokens 2");
    INFO(r.out);
    CHECK(contains(r.out, "max |logit error| nan, top-1 agreement 0.0 %, KL nan nats"));
}
