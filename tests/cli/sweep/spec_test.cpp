// Sweep specs: what the grid of a spec is (through `cardsim sweep SPEC --list`) and how a bad spec
// is refused (file, line, key and what was expected).

#include "tests/cli/sweep/support.hpp"

#include <catch2/catch.hpp>

using namespace cardsim::test;
using namespace cardsim::test::sweep;

namespace {

/// The `point N: ...` lines of a listing.
std::vector<std::string> point_lines(const std::string& out) {
    std::vector<std::string> v;
    for (auto& l : lines(out))
        if (l.rfind("  point ", 0) == 0) v.push_back(l.substr(2));
    return v;
}

/// Writes `text` as a spec and lists it.
Ran list(const ScratchDir& s, const std::string& text, const std::string& extra = "") {
    write(s / "spec.toml", text);
    return run_cardsim("sweep " + (s / "spec.toml").string() + " --list " + extra);
}

} // namespace

TEST_CASE("a grid crosses the models with every axis, the last axis fastest, a range including its end") {
    ScratchDir s("sweep-grid");
    auto r =
        list(s, "tokens = 2\n"
                "models = [{ generate = { arch = \"hybrid\", size = \"tiny\", seed = 1 } },\n"
                "          { generate = { arch = \"dense\", size = \"tiny\", seed = 2 }, name = \"d\" }]\n"
                "[axes]\n"
                "ddr.channels = [1, 2]\n"
                "clock.kernel_mhz = { from = 200, to = 300, step = 50 }\n");
    REQUIRE(r.code == 0);
    const std::vector<std::string> want{
        "point 0: model=hybrid-tiny-seed1 ddr.channels=1 clock.kernel_mhz=200",
        "point 1: model=hybrid-tiny-seed1 ddr.channels=1 clock.kernel_mhz=250",
        "point 2: model=hybrid-tiny-seed1 ddr.channels=1 clock.kernel_mhz=300",
        "point 3: model=hybrid-tiny-seed1 ddr.channels=2 clock.kernel_mhz=200",
        "point 4: model=hybrid-tiny-seed1 ddr.channels=2 clock.kernel_mhz=250",
        "point 5: model=hybrid-tiny-seed1 ddr.channels=2 clock.kernel_mhz=300",
        "point 6: model=d ddr.channels=1 clock.kernel_mhz=200",
        "point 7: model=d ddr.channels=1 clock.kernel_mhz=250",
        "point 8: model=d ddr.channels=1 clock.kernel_mhz=300",
        "point 9: model=d ddr.channels=2 clock.kernel_mhz=200",
        "point 10: model=d ddr.channels=2 clock.kernel_mhz=250",
        "point 11: model=d ddr.channels=2 clock.kernel_mhz=300",
    };
    REQUIRE(point_lines(r.out) == want);
    REQUIRE(contains(r.out, "12 points (grid of 12, 0 skipped by skip_if)"));
}

TEST_CASE(
    "axes keep the file's order whether written as dotted keys or tables, and float ranges keep decimals") {
    ScratchDir s("sweep-order");
    auto r = list(s, tiny_model() + "[axes]\n"
                                    "numerics.cache = [\"f16\", \"int8\"]\n"
                                    "clock.kernel_mhz = { from = 250.5, to = 251.5, step = 0.25 }\n"
                                    "[axes.ddr]\n"
                                    "channels = [3]\n");
    REQUIRE(r.code == 0);
    auto p = point_lines(r.out);
    REQUIRE(p.size() == 10);
    REQUIRE(p[0] ==
            "point 0: model=hybrid-tiny-seed1 numerics.cache=f16 clock.kernel_mhz=250.5 ddr.channels=3");
    REQUIRE(p[1] ==
            "point 1: model=hybrid-tiny-seed1 numerics.cache=f16 clock.kernel_mhz=250.75 ddr.channels=3");
    REQUIRE(p[2] ==
            "point 2: model=hybrid-tiny-seed1 numerics.cache=f16 clock.kernel_mhz=251.0 ddr.channels=3");
    REQUIRE(p[4] ==
            "point 4: model=hybrid-tiny-seed1 numerics.cache=f16 clock.kernel_mhz=251.5 ddr.channels=3");
    REQUIRE(p[9] ==
            "point 9: model=hybrid-tiny-seed1 numerics.cache=int8 clock.kernel_mhz=251.5 ddr.channels=3");
}

TEST_CASE("skip_if leaves out the points it holds for, keeping the grid's point numbers") {
    ScratchDir s("sweep-skip");
    // channels x clock > 600 drops (2, 400), (4, 200), (4, 400); the second constraint reads a key
    // the sweep does not vary (the default card has one matvec unit) and a string axis.
    auto r = list(s, tiny_model() + "skip_if = [\"ddr.channels * clock.kernel_mhz > 600\",\n"
                                    "           \"units.matvec.count == 1 and numerics.cache == 'int8' and "
                                    "not (ddr.channels < 2)\"]\n"
                                    "[axes]\n"
                                    "ddr.channels = [1, 2, 4]\n"
                                    "clock.kernel_mhz = [200, 400]\n"
                                    "numerics.cache = [\"f16\", \"int8\"]\n");
    REQUIRE(r.code == 0);
    const std::vector<std::string> want{
        "point 0: model=hybrid-tiny-seed1 ddr.channels=1 clock.kernel_mhz=200 numerics.cache=f16",
        "point 1: model=hybrid-tiny-seed1 ddr.channels=1 clock.kernel_mhz=200 numerics.cache=int8",
        "point 2: model=hybrid-tiny-seed1 ddr.channels=1 clock.kernel_mhz=400 numerics.cache=f16",
        "point 3: model=hybrid-tiny-seed1 ddr.channels=1 clock.kernel_mhz=400 numerics.cache=int8",
        "point 4: model=hybrid-tiny-seed1 ddr.channels=2 clock.kernel_mhz=200 numerics.cache=f16",
    };
    REQUIRE(point_lines(r.out) == want);
    REQUIRE(contains(r.out, "5 points (grid of 12, 7 skipped by skip_if)"));
}

TEST_CASE("arithmetic in constraints follows precedence: * before +, comparison before and") {
    ScratchDir s("sweep-prec");
    // 1 + 2 * x > 4 holds for x = 2 (5) and not for x = 1 (3); (1 + 2) * x > 4 would hold for both.
    auto r = list(s, tiny_model() + "skip_if = \"1 + 2 * ddr.channels > 4 or -ddr.channels == -3\"\n"
                                    "[axes]\nddr.channels = [1, 2, 3]\n");
    REQUIRE(r.code == 0);
    REQUIRE(point_lines(r.out) ==
            std::vector<std::string>{"point 0: model=hybrid-tiny-seed1 ddr.channels=1"});
}

/// `s` `n` times over.
std::string repeat(const std::string& s, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i)
        out += s;
    return out;
}

TEST_CASE("a bad spec is refused with its file, line, key and what was expected") {
    ScratchDir s("sweep-errors");
    const std::string f = (s / "spec.toml").string();
    struct Case {
        std::string text;
        std::vector<std::string> says;
    };
    const std::string m = tiny_model();
    const std::vector<Case> cases{
        {"modle = 1\n", {f + ":1:", "unknown key `modle`", "model, models"}},
        {"tokens = 2\n", {f, "missing `model`"}},
        {m + "models = [\"x\"]\n", {f + ":3:", "`models` given together with `model`"}},
        {"model = { generate = { arch = \"hybird\" } }\n",
         {f + ":1:", "`model.generate.arch` is \"hybird\"", "hybrid"}},
        {"model = \"nowhere\"\n", {f + ":1:", "not a checkpoint directory"}},
        {"config = \"missing.toml\"\n" + m, {f + ":1:", "`config`", "does not exist"}},
        {m + "tokens2 = 3\n", {f + ":3:", "unknown key `tokens2`"}},
        {"tokens = \"8\"\n" + m.substr(m.find('\n') + 1),
         {f + ":1:", "`tokens` is a string", "expected an integer"}},
        {m + "[axes]\nddr.channels = [1, 100]\n",
         {f + ":4:", "axis `ddr.channels`, value 100", "expected an integer in 1..64"}},
        {m + "[axes]\nddr.chanels = [1]\n", {f + ":4:", "unknown key `ddr.chanels`", "channels"}},
        {m + "[axes]\nnumerics.scaling = [\"sub32\", \"per_blok\"]\n",
         {f + ":4:", "per_blok", "sub32 | per_block"}},
        {m + "[axes]\nddr.channels = []\n", {f + ":4:", "`axes.ddr.channels` is an empty array"}},
        {m + "[axes]\nddr.channels = [2, 2]\n", {f + ":4:", "lists 2 twice"}},
        {m + "[axes]\nddr.channels = { from = 4, to = 1 }\n", {f + ":4:", "`to` (1) lies the other way"}},
        {m + "[axes]\nddr.channels = { from = 1, to = 4, stride = 1 }\n",
         {f + ":4:", "unknown key `axes.ddr.channels.stride`"}},
        {m + "[axes]\nddr.channels = 4\n", {f + ":4:", "expected an array of values or a range"}},
        {m + "skip_if = \"ddr.channels >\"\n[axes]\nddr.channels = [1]\n",
         {f + ":3:", "at column 15", "expected a number"}},
        {m + "skip_if = \"ddr.channels ** 2\"\n[axes]\nddr.channels = [1]\n", {f + ":3:", "at column 15"}},
        {m + "skip_if = \"(ddr.channels > 1\"\n[axes]\nddr.channels = [1]\n", {f + ":3:", "expected `)`"}},
        {m + "skip_if = \"ddr.chanels > 1\"\n[axes]\nddr.channels = [1]\n",
         {f + ":3:", "`ddr.chanels` is neither an axis", "ddr.channels"}},
        {m + "skip_if = \"ddr.channels + 1\"\n[axes]\nddr.channels = [1]\n",
         {f + ":3:", "expected a comparison"}},
        {m + "skip_if = \"numerics.cache * 2 > 1\"\n[axes]\nnumerics.cache = [\"f16\"]\n",
         {f + ":3:", "`*` cannot take a string (\"f16\") and a number (2)"}},
        {m + "[axes\n", {f + ":3:6:", "not valid TOML", "expected ']'"}},
        // Nesting 100,000 deep overflowed the parser's stack; now refused past 256 levels.
        {m + "skip_if = \"" + std::string(100000, '(') + "true" + std::string(100000, ')') +
             "\"\n[axes]\nddr.channels = [1]\n",
         {f + ":3:", "nested more than 256 deep"}},
        {m + "skip_if = \"" + repeat("not ", 100000) + "true\"\n[axes]\nddr.channels = [1]\n",
         {f + ":3:", "nested more than 256 deep"}},
        {m + "skip_if = \"" + repeat("- ", 100000) + "1 > 0\"\n[axes]\nddr.channels = [1]\n",
         {f + ":3:", "nested more than 256 deep"}},
        // A division by zero silently skipped every point (inf > 1); now it names the point.
        {m + "skip_if = \"ddr.channels / 0 > 1\"\n[axes]\nddr.channels = [1]\n",
         {f + ":3:", "at point 0", "`/` by zero"}},
        {m + "skip_if = \"ddr.channels % 0 > 1\"\n[axes]\nddr.channels = [1]\n", {f + ":3:", "`%` by zero"}},
        // A seed for routing models with none to draw: accepted and ignored before.
        {m + "routing_seed = 7\n", {f + ":3:", "`routing_seed`", "without `routing`"}},
    };
    for (auto& c : cases) {
        INFO(c.text);
        auto r = list(s, c.text);
        INFO(r.out);
        REQUIRE(r.code == 2);
        for (auto& part : c.says)
            REQUIRE(contains(r.out, part));
    }
}

TEST_CASE("a sweep spec that is not there, or a bad --shard, is bad input") {
    ScratchDir s("sweep-usage");
    auto r = run_cardsim("sweep " + (s / "absent.toml").string() + " --list");
    REQUIRE(r.code == 2);
    REQUIRE(contains(r.out, "absent.toml"));
    write(s / "spec.toml", tiny_model() + "[axes]\nddr.channels = [1, 2]\n");
    for (auto bad : {"2/2", "1", "a/3", "0/0", "-1/2"}) {
        auto b = run_cardsim("sweep " + (s / "spec.toml").string() + " --list --shard " + bad);
        INFO(bad << ": " << b.out);
        REQUIRE(b.code == 2);
        REQUIRE(contains(b.out, "expected i/N"));
    }
}

TEST_CASE("an option that does nothing in its mode of sweep is refused, never ignored") {
    ScratchDir s("sweep-options");
    write(s / "spec.toml", tiny_model() + "[axes]\nddr.channels = [1, 2]\n");
    const auto spec = (s / "spec.toml").string(), out = (s / "out").string();
    const std::vector<std::pair<std::string, std::string>> cases{
        {"sweep --merge " + out + " -o " + out + "2 -j 2", "--merge: --jobs does nothing there"},
        {"sweep --merge " + out + " -o " + out + "2 --timeout 5", "--merge: --timeout does nothing there"},
        {"sweep --merge " + out + " -o " + out + "2 --report", "--merge: --report does nothing there"},
        {"sweep " + spec + " -o " + out + " --shards 3", "without --emit: --shards does nothing there"},
        {"sweep " + spec + " --list --traces", "--list: --traces does nothing there"},
        {"sweep " + spec + " --emit parallel -o " + out + " --report", "--emit: --report does nothing there"},
    };
    for (auto& [command, says] : cases) {
        auto r = run_cardsim(command);
        INFO(command << "\n" << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, says));
    }
    CHECK_FALSE(std::filesystem::exists(s / "out" / "results.csv"));
}

TEST_CASE("every shipped sweep spec loads and lists its grid") {
    const auto dir = std::filesystem::path(CARDSIM_SOURCE_DIR) / "configs/sweeps";
    std::size_t specs = 0;
    for (auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".toml") continue;
        ++specs;
        auto r = run_cardsim("sweep " + e.path().string() + " --list");
        INFO(e.path().string() << ": " << r.out);
        REQUIRE(r.code == 0);
        REQUIRE(contains(r.out, "point 0"));
    }
    REQUIRE(specs >= 3);
}

TEST_CASE(
    "shapes-only models are a sweep's axis: published sizes need shapes_only, unpublished ones are refused") {
    ScratchDir s("sweep-shapes");
    auto r = list(s, "models = [{ generate = { arch = \"dense\", size = \"8b\", shapes_only = true } },\n"
                     "          { generate = { arch = \"hybrid\", size = \"tiny\", shapes_only = true } }]\n"
                     "[axes]\nweights.code_bits = [8, 4]\n");
    REQUIRE(r.code == 0);
    const std::vector<std::string> want{"point 0: model=dense-8b-shapes weights.code_bits=8",
                                        "point 1: model=dense-8b-shapes weights.code_bits=4",
                                        "point 2: model=hybrid-tiny-shapes weights.code_bits=8",
                                        "point 3: model=hybrid-tiny-shapes weights.code_bits=4"};
    CHECK(point_lines(r.out) == want);
    auto weights = list(s, "model = { generate = { arch = \"dense\", size = \"8b\" } }\n");
    CHECK(weights.code == 2);
    CHECK(contains(weights.out, "a published shape: add shapes_only = true"));
    auto none = list(s, "model = { generate = { arch = \"hybrid\", size = \"14b\", shapes_only = true } }\n");
    CHECK(none.code == 2);
    CHECK(contains(none.out, "no Qwen3.5 of about 14b"));
    // A seed draws weights, and a shapes-only model has none: refused, as make-model refuses it.
    auto seeded = list(
        s, "model = { generate = { arch = \"hybrid\", size = \"tiny\", seed = 3, shapes_only = true } }\n");
    CHECK(seeded.code == 2);
    CHECK(contains(seeded.out, "a shapes-only model has no weights for a seed to draw"));
}
