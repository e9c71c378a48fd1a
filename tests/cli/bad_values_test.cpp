// Every value the CLI, the card config or the card cannot use is refused where it enters, naming
// the option, file or `--set` key and what was expected; `check` and `run` agree (issue 16).

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using cardsim::test::contains;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

/// Requires `cardsim ARGS` to exit 2 with every one of `parts` in what it prints.
void refused(const std::string& args, std::initializer_list<std::string> parts) {
    auto r = run_cardsim(args);
    INFO("cardsim " << args << "\n" << r.out);
    CHECK(r.code == 2);
    CHECK_FALSE(contains(r.out, "internal error"));
    for (auto& p : parts)
        CHECK(contains(r.out, p));
}

} // namespace

TEST_CASE("a card config that is a directory or a device is refused naming it, not read") {
    const ScratchDir d("bad-config-file");
    auto m = make_model(d, "dense", 1);
    std::filesystem::create_directories(d / "cfg");
    refused("check " + m + " --config " + (d / "cfg").string(), {"cfg", "it is a directory"});
    refused("check " + m + " --config /dev/zero", {"/dev/zero", "not a regular file"});
    refused("run " + m + " --config /dev/zero", {"/dev/zero", "not a regular file"});
}

TEST_CASE("a negative number for a count, size or clock option is refused naming the option") {
    const ScratchDir d("bad-negative");
    auto m = make_model(d, "dense", 1);
    refused("run " + m + " --tokens -1", {"--tokens -1", "negative", "expected at least 1"});
    auto trace = (d / "t.trc").string();
    REQUIRE(run_cardsim("ddr gen sequential --count 10 -o " + trace).code == 0);
    for (auto opt : {"--request-bytes", "--outstanding", "--player-mhz"})
        refused("ddr replay " + trace + " " + opt + " -1", {std::string(opt) + " -1", "negative"});
    refused("ddr replay " + trace + " --outstanding=-5", {"--outstanding -5"});
}

TEST_CASE("zero tokens and an empty or gappy prompt are refused, not replaced by a default") {
    const ScratchDir d("bad-prompt");
    auto m = make_model(d, "dense", 1);
    refused("run " + m + " --tokens 0", {"--tokens 0", "expected at least 1"});
    refused("demo --tokens 0", {"--tokens 0", "expected at least 1"});
    refused("run " + m + " --prompt ''", {"--prompt", "no token ids"});
    refused("run " + m + " --prompt 1,,2", {"--prompt `1,,2`", "empty id"});
    refused("run " + m + " --prompt 1,2,", {"--prompt `1,2,`", "empty id"});
    refused("run " + m + " --prompt ,1", {"empty id"});
    auto ok = run_cardsim("run " + m + " --prompt '1, 2' --tokens 1 --no-reference");
    INFO(ok.out);
    CHECK(ok.code == 0);
    CHECK(contains(ok.out, "prompt: 1 2\n"));
}

TEST_CASE("check and run agree on keys the card cannot use, and both name the key") {
    const ScratchDir d("bad-keys");
    auto m = make_model(d, "dense", 1);
    // Inside the old documented range yet no weight format: the config refuses it for both.
    for (auto cmd : {"check", "run", "compile"}) {
        std::string out = std::string(cmd) == "compile" ? " -o " + (d / "p").string() : "";
        refused(std::string(cmd) + " " + m + out + " --set weights.block_size=16",
                {"--set weights.block_size=16", "`weights.block_size`", "32..1024"});
        refused(std::string(cmd) + " " + m + out + " --set units.dma.count=0",
                {"--set units.dma.count=0", "`units.dma.count`", "DMA"});
    }
    // An SRAM too small for the arena: check refuses the model, run refuses to lower it, all
    // naming the key.
    auto check = run_cardsim("check " + m + " --set sram.bytes=1");
    INFO(check.out);
    CHECK(check.code == 1);
    CHECK(contains(check.out, "`sram.bytes` = 1"));
    CHECK(contains(check.out, "the card refuses this model"));
    // run and compile give the same verdict as check: refused, exit 1 (docs/exit-codes.md).
    for (auto cmd : {"run " + m, "compile " + m + " -o " + (d / "p").string()}) {
        auto r = run_cardsim(cmd + " --set sram.bytes=1");
        INFO(r.out);
        CHECK(r.code == 1);
        CHECK(contains(r.out, "`sram.bytes` = 1"));
        CHECK(contains(r.out, "raise it to at least"));
    }
}

TEST_CASE("a path the file system refuses (a symlink loop) is bad input naming it, not an internal error") {
    const ScratchDir d("bad-symlink-loop");
    std::filesystem::create_symlink(d / "b", d / "a");
    std::filesystem::create_symlink(d / "a", d / "b");
    for (auto cmd :
         {"sweep " + (d / "a").string() + " -o " + (d / "out").string(), "check " + (d / "a").string(),
          "run " + (d / "a").string(), "trace show " + (d / "a").string()}) {
        auto r = run_cardsim(cmd);
        INFO(cmd << "\n" << r.out);
        CHECK(r.code == 2);
        CHECK_FALSE(contains(r.out, "internal error"));
        CHECK(contains(r.out, (d / "a").string()));
    }
}

TEST_CASE("run options that do nothing in the run asked for are refused naming the option, never ignored") {
    const ScratchDir d("run-ignored-options");
    const auto m = make_model(d, "dense");
    struct Case {
        std::string args, says;
    };
    const std::vector<Case> cases = {
        {"--chunk 4", "--chunk: it sizes the prefill steps of --prompt-len, and there is none"},
        {"--timing-only --check-layers 0", "--check-layers: a timing-only run computes nothing"},
        {"--timing-only --no-reference", "--no-reference: a timing-only run computes no f64 reference"},
    };
    for (auto& c : cases) {
        auto r = run_cardsim("run " + m + " --tokens 2 " + c.args);
        INFO(c.args << ":\n" << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, c.says));
    }
    // Where they do something they are taken.
    CHECK(run_cardsim("run " + m + " --tokens 2 --timing-only --prompt-len 8 --chunk 4").code == 0);
    CHECK(run_cardsim("run " + m + " --tokens 2 --check-layers 0 --no-reference").code == 0);
}

TEST_CASE(
    "compile, trace, layout, calibrate and a one-card command refuse options that do nothing, naming them") {
    const ScratchDir d("ignored-options");
    const auto m = make_model(d, "dense");
    const auto e = make_model(d, "encoder");
    const auto enc = " --config " + std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml";
    const auto p = (d / "p").string();
    struct Case {
        std::string args, says;
    };
    REQUIRE(run_cardsim("run " + m + " --tokens 2 --timing-only --trace " + (d / "t").string()).code == 0);
    const auto t = (d / "t").string();
    REQUIRE(run_cardsim("ddr gen sequential --count 10 -o " + (d / "seq.trace").string()).code == 0);
    const std::vector<Case> cases = {
        {"compile " + m + " -o " + p + " --shapes-only --check-layers all",
         "--check-layers: a shapes-only program"},
        {"compile " + e + enc + " -o " + p + " --bucket seqs=1,tokens=4,markers=1 --max-positions 8",
         "--max-positions: " + e + " is an encoder"},
        {"compile " + m + " -o " + p + " --bucket seqs=1,markers=3", "--bucket markers=3: marker rows"},
        {"compile " + m + " -o " + p + " --bucket seqs=1,tokens=4",
         "--bucket tokens=4,seqs=1: cardsim run decodes one token of each sequence a step"},
        {"compile " + m + " -o " + p + " --set system.cards=2 --plan pp --check-layers all",
         "--plan pp: --check-layers is not built for a system of cards yet"},
        {"trace diff " + t + " " + t + " --all --top 3", "--top N lists the N largest changes and --all"},
        {"trace show " + t + " --meta --csv " + (d / "c.csv").string(),
         "trace show --meta lays out the summary"},
        {"layout --seqs 9", "--seqs: every value of the decoder graph is in token rows"},
        {"ddr replay " + (d / "seq.trace").string() + " --set sram.latency=5",
         "--set sram.latency=5: ddr replay reads the [ddr] keys alone"},
        {"ddr replay " + (d / "seq.trace").string() + " --set units.matvec.count=2",
         "--set units.matvec.count=2: ddr replay reads the [ddr] keys alone"},
        {"fit --set link.gbps=20", "--set link.gbps=20: fit reads one card's logic"},
        {"fit --set system.topology=pairs", "--set system.topology=pairs: fit reads one card's logic"},
        {"design " + t + " " + t + " --set units.matvec.count=4",
         "--set units.matvec.count=4: the design rule reads the DDR keys alone"},
        {"calibrate " + t + " -o " + (d / "o.toml").string() + " --set ddr.channels=2",
         "calibrate --set: the overlay written"},
        {"calibrate " + t + " -o " + (d / "o.toml").string() + " --set=ddr.channels=2",
         "calibrate --set: the overlay written"},
        {"calibrate " + t + " -o " + (d / "o.toml").string() + " --knob scaling=pow2",
         "calibrate --knob: the overlay written"},
        {"run " + m + " --tokens 2 --set link.gbps=10", "link.gbps: this command runs one card"},
        {"check " + m + " --set system.topology=switch",
         "system.topology = switch: this command runs one card"},
        {"check " + e + enc + " --seqs 4", "--seqs: " + e + " is an encoder"},
        {"check " + e + enc + " --max-positions 7", "--max-positions: " + e + " is an encoder"},
    };
    for (auto& c : cases) {
        auto r = run_cardsim(c.args);
        INFO(c.args << ":\n" << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, c.says));
    }
    CHECK(!std::filesystem::exists(p));
    CHECK(!std::filesystem::exists(d / "c.csv"));
    // An error of the calibration names the trace.
    auto cal = run_cardsim("calibrate " + t + " -o " + (d / "o.toml").string());
    CHECK(cal.code == 2);
    CHECK(contains(cal.out, "error: " + t + ": "));
    // Where they do something they are taken.
    CHECK(run_cardsim("layout --graph encoder --seqs 2 --markers 3").code == 0);
    CHECK(run_cardsim("trace diff " + t + " " + t + " --top 3").code == 0);
    CHECK(run_cardsim("run " + m +
                      " --tokens 2 --timing-only --plan pp --set system.cards=2 --set link.gbps=10")
              .code == 0);
    // A config file describes a whole card: ddr replay and fit take one as it is.
    CHECK(run_cardsim("ddr replay " + (d / "seq.trace").string() + enc).code == 0);
    CHECK(run_cardsim("ddr replay " + (d / "seq.trace").string() + " --set ddr.controller.starvation_limit=4")
              .code == 0);
    CHECK(run_cardsim("fit --set units.matvec.width=64").code == 0);
    // A file valid only with the --set beside it is taken whole with it.
    {
        std::ofstream(d / "small-queue.toml")
            << "[ddr.controller]\nwrite_queue = 16\n";
    }
    CHECK(run_cardsim("ddr replay " + (d / "seq.trace").string() + " --config " +
                      (d / "small-queue.toml").string() + " --set ddr.controller.write_high_watermark=8")
              .code == 0);
}

TEST_CASE("a bad --knob is refused naming --knob as typed, not the --set it stands for") {
    const ScratchDir d("bad-knob");
    auto m = make_model(d, "dense", 1);
    refused("run " + m + " --knob scaling=foo", {"--knob scaling=foo", "expected one of"});
    refused("check " + m + " --knob scaling", {"--knob scaling: expected key=value"});
    auto r = run_cardsim("run " + m + " --knob scaling=foo");
    CHECK_FALSE(contains(r.out, "--set"));
}

TEST_CASE(
    "an input that is a device, or a number past a double's range, is refused naming it, not read for ever") {
    const ScratchDir d("bad-device");
    auto m = make_model(d, "dense", 1);
    namespace fs = std::filesystem;
    const auto z = d / "z";
    fs::create_directories(z);
    for (auto& e : fs::directory_iterator(m))
        if (e.path().filename() != "config.json") fs::copy(e.path(), z / e.path().filename());
    fs::create_symlink("/dev/zero", z / "config.json");
    refused("check " + z.string(), {"config.json: not a regular file"});
    fs::create_symlink("/dev/zero", d / "zero.trace");
    fs::create_symlink("/dev/zero", d / "zero.prog");
    const auto trace = (d / "zero.trace").string();
    refused("trace show " + trace, {"zero.trace", "it is a device"});
    refused("ddr replay " + trace, {"zero.trace", "it is a device"});
    refused("disasm " + (d / "zero.prog").string(), {"zero.prog", "it is a device"});
    // 1e999 parses as infinity: a field is a finite number.
    const auto rt = d / "rt";
    fs::copy(m, rt);
    std::string json;
    {
        std::ifstream in(rt / "config.json");
        json.assign(std::istreambuf_iterator<char>(in), {});
    }
    const auto at = json.find("\"rope_theta\"");
    REQUIRE(at != std::string::npos);
    const auto colon = json.find(':', at), end = json.find_first_of(",}", colon);
    json.replace(colon + 1, end - colon - 1, "1e999");
    std::ofstream(rt / "config.json") << json;
    refused("check " + rt.string(), {"rope_theta", "expected a finite number"});
}

TEST_CASE("a sweep spec that is a directory or a device is refused saying so, not as a missing file") {
    const ScratchDir d("bad-sweep-spec");
    std::filesystem::create_directories(d / "spec");
    refused("sweep " + (d / "spec").string() + " -o " + (d / "out").string(), {"spec`: it is a directory"});
    std::filesystem::create_symlink("/dev/zero", d / "zero.toml");
    refused("sweep " + (d / "zero.toml").string() + " -o " + (d / "out").string(), {"not a regular file"});
    refused("sweep " + (d / "none.toml").string() + " -o " + (d / "out").string(),
            {"none.toml`: no such file"});
}

TEST_CASE("counts past what the card or the host can hold are refused naming the option, never wrapped") {
    const ScratchDir d("bad-too-large");
    const auto m = make_model(d, "dense", 1);
    refused("demo --tokens 18446744073709551615", {"--tokens 18446744073709551615", "at most 2147483648"});
    refused("check " + m + " --max-positions 125099989649366", {"--max-positions", "at most 2147483648"});
    refused("compile " + m + " -o " + (d / "p").string() + " --max-positions 144115188075855873",
            {"--max-positions", "at most 2147483648"});
    CHECK_FALSE(std::filesystem::exists(d / "p"));
    refused("layout --tokens 4611686018427387904", {"--tokens", "at most 2147483648"});
    refused("layout --layers 1000000000000", {"--layers", "at most 4096"});
    refused("numerics --sweep exp --stride 9223372036854775808 --threads 2", {"--stride", "at most 2^32"});
    refused("numerics --sweep exp --threads 100000", {"--threads 100000", "at most 1024"});
    refused("make-model --arch dense --size tiny -o " + (d / "m").string() + " --threads 100000",
            {"--threads 100000", "at most 1024"});
    refused("serve --gen poisson --count 1000000000000 -o " + (d / "r.csv").string(),
            {"--count 1000000000000", "at most 10000000"});
    // A trace no serving run could take is not written either.
    refused("serve --gen poisson --rate 1e-300 -o " + (d / "r.csv").string(), {"past the 9000 s"});
    CHECK_FALSE(std::filesystem::exists(d / "r.csv"));
}

TEST_CASE("run, serve and sweep options that cannot take effect where given are refused, never ignored") {
    const ScratchDir d("ignored-where-given");
    const auto m = make_model(d, "dense", 1);
    const auto prog = (d / "prog").string(), set = (d / "set").string();
    REQUIRE(run_cardsim("compile " + m + " -o " + prog + " --max-positions 16").code == 0);
    REQUIRE(run_cardsim("compile " + m + " -o " + set + " --rows 1,2 --max-positions 16").code == 0);
    refused("run " + m + " --tokens 2 --trace-data", {"--trace-data", "there is none"});
    refused("run " + m + " --tokens 2 --timing-only --trace-data --trace " + (d / "t").string(),
            {"--trace-data: a timing-only run computes no bytes"});
    refused("run " + prog + " --tokens 2 --shapes-only", {"--shapes-only", "a program"});
    refused("run " + prog + " --tokens 2 --no-reference", {"--no-reference: a program alone"});
    refused("serve " + set + " --gen poisson --count 2 --model " + (d / "missing").string(),
            {"--model: serving", "without --check"});
    refused("serve " + set + " --gen poisson --count 2 --shapes-only", {"--shapes-only", "a program set"});
    std::ofstream(d / "spec.toml") << "tokens = 2\nmodel = \"" << m << "\"\n[axes]\nddr.channels = [1, 2]\n";
    refused("sweep " + (d / "spec.toml").string() + " --list -o " + (d / "out").string(),
            {"--list: --output does nothing there"});
    CHECK_FALSE(std::filesystem::exists(d / "out"));
    // Where they take effect they are taken.
    CHECK(run_cardsim("run " + prog + " --model " + m + " --tokens 2 --no-reference").code == 0);
    CHECK(run_cardsim("serve " + set + " --gen poisson --count 2 --prompt-len 4 --output-len 4 --model " + m +
                      " --check")
              .code == 0);
}
