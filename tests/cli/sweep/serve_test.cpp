// Sweeps of served traces: a `[serve]` table makes every point a `cardsim serve` run, its arrays
// axes, its rows the latency figures; `cardsim plot` draws p99 TPOT against tokens/s.

#include "tests/cli/sweep/support.hpp"

#include <catch2/catch.hpp>

using namespace cardsim::test;
using namespace cardsim::test::sweep;

namespace {

const std::string serve_spec = "model = { generate = { arch = \"hybrid\", size = \"tiny\", seed = 1 } }\n"
                               "[serve]\nrate = [200.0, 1000000.0]\ncount = 12\nprompt_len = \"2:4\"\n"
                               "output_len = 3\ntoken_budget = [1, 4]\n";

} // namespace

TEST_CASE(
    "a [serve] sweep serves a trace at every point, its arrays axes, and plots p99 TPOT against tokens/s") {
    ScratchDir s("sweep-serve");
    write(s / "spec.toml", serve_spec);
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -j 2 -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 5);
    const auto& h = rows[0];
    REQUIRE(h[2] == "serve.rate");
    REQUIRE(h[3] == "serve.token_budget");
    for (std::size_t i = 1; i < rows.size(); ++i) {
        auto& row = rows[i];
        INFO("row " << i);
        REQUIRE(row[column(h, "status")] == "ok");
        CHECK(row[column(h, "served")] == "12");
        CHECK(std::stod(row[column(h, "tpot_p99_ms")]) >= std::stod(row[column(h, "tpot_p50_ms")]));
        CHECK(std::stod(row[column(h, "tokens_per_second")]) > 0);
        // One sequence at a time under a budget of one row: the token budget limits the batch, or
        // nothing waited at all.
        if (row[3] == "1") CHECK(row[column(h, "largest_batch")] == "1");
    }
    // The faster arrivals with room for 4 sequences batch more than one at a time.
    CHECK(std::stoi(rows[4][column(h, "largest_batch")]) > 1);
    // The host's wall time is in host.csv, a row a point, and never in results.csv.
    for (auto& c : h)
        CHECK(c.rfind("host_", 0) != 0);
    const auto host = csv(read(s / "out/host.csv"));
    CHECK(host.size() == 5);
    auto p = run_cardsim("plot " + (s / "out").string() + " -o " + (s / "plots").string());
    INFO(p.out);
    REQUIRE(p.code == 0);
    CHECK(std::filesystem::exists(s / "plots/tpot_p99_ms_vs_tokens_per_second.svg"));
    CHECK(read(s / "plots/tpot_p99_ms_vs_tokens_per_second.svg").find("time per output token") !=
          std::string::npos);
}

TEST_CASE("a [serve] table refuses run options it replaces and bad values, naming the key") {
    ScratchDir s("sweep-serve-bad");
    write(s / "a.toml", "tokens = 3\n" + serve_spec);
    auto a = run_cardsim("sweep " + (s / "a.toml").string() + " -o " + (s / "o").string());
    CHECK(a.code == 2);
    CHECK(contains(a.out, "`tokens` given together with [serve]"));
    write(s / "b.toml",
          "model = { generate = { arch = \"hybrid\", size = \"tiny\", seed = 1 } }\n[serve]\nrate = -1.0\n");
    auto b = run_cardsim("sweep " + (s / "b.toml").string() + " -o " + (s / "o").string());
    CHECK(b.code == 2);
    CHECK(contains(b.out, "serve.rate"));
    write(s / "c.toml", "model = { generate = { arch = \"hybrid\", size = \"tiny\", seed = 1 } "
                        "}\n[serve]\nprompt_len = \"9:2\"\n");
    auto c = run_cardsim("sweep " + (s / "c.toml").string() + " -o " + (s / "o").string());
    CHECK(c.code == 2);
    CHECK(contains(c.out, "serve.prompt_len"));
}

TEST_CASE("a routing axis times each point of a model with experts by its routing model, and the rows "
          "carry the experts touched") {
    ScratchDir s("sweep-routing");
    write(s / "spec.toml", "model = { generate = { arch = \"moe\", size = \"tiny\", seed = 1 } }\n"
                           "seqs = 8\ntokens = 2\nrouting = [\"uniform\", \"skew:2.0\"]\nrouting_seed = 3\n"
                           "[axes]\n\"capabilities.experts\" = [true]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 3);
    const auto& h = rows[0];
    REQUIRE(h[2] == "routing");
    CHECK(rows[1][2] == "uniform");
    CHECK(rows[2][2] == "skew:2.0");
    for (std::size_t i = 1; i < 3; ++i) {
        REQUIRE(rows[i][column(h, "status")] == "ok");
        CHECK(std::stod(rows[i][column(h, "busy_router")]) > 0);
    }
    // Zipf popularity concentrates 8 rows on fewer experts than uniform draws do, and streams fewer bytes.
    const auto touched = [&](std::size_t i) {
        return std::stod(rows[i][column(h, "experts_touched_per_layer")]);
    };
    const auto bytes = [&](std::size_t i) { return std::stod(rows[i][column(h, "expert_bytes_per_step")]); };
    CHECK(touched(2) < touched(1));
    CHECK(bytes(2) < bytes(1));
    CHECK(std::stod(rows[2][column(h, "cycles")]) < std::stod(rows[1][column(h, "cycles")]));
    // The point ran with the spec's seed: the same run by hand gives its cycles.
    auto one = run_cardsim("run " + (s / "out/models/moe-tiny-seed1").string() +
                           " --machine --timing-only --tokens 2 --seqs 8 --set capabilities.experts=true "
                           "--routing skew:2.0 --routing-seed 3");
    REQUIRE(one.code == 0);
    CHECK(contains(one.out, "cycles=" + rows[2][column(h, "cycles")] + "\n"));
}

TEST_CASE("a routing model in a sweep spec is checked before any point runs, naming the key") {
    ScratchDir s("sweep-routing-bad");
    const std::string model = "model = { generate = { arch = \"moe\", size = \"tiny\", seed = 1 } }\n";
    write(s / "a.toml", model + "full = true\nrouting = \"uniform\"\n");
    auto a = run_cardsim("sweep " + (s / "a.toml").string() + " -o " + (s / "o").string());
    CHECK(a.code == 2);
    CHECK(contains(a.out, "`routing` is given with full = true"));
    write(s / "b.toml", model + "routing = [\"uniform\", \"zipf\"]\n");
    auto b = run_cardsim("sweep " + (s / "b.toml").string() + " -o " + (s / "o").string());
    CHECK(b.code == 2);
    CHECK(contains(b.out, "b.toml:2"));
    CHECK(contains(b.out, "routing"));
    CHECK_FALSE(std::filesystem::exists(s / "o"));
}
