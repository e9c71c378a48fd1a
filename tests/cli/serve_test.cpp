// `cardsim serve` as a user runs it: a trace of fixed arrivals served on the card gives the
// latencies of the schedule worked out by hand (the same steps as `cardsim run --seqs`), the card
// idles until an arrival, admission stops at the slots the DDR holds, and bad input is refused.

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

using cardsim::test::contains;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

std::string model(const ScratchDir& dir, const std::string& arch) {
    auto m = (dir / arch).string();
    REQUIRE(run_cardsim("make-model --arch " + arch + " --size tiny --seed 2 -o " + m).code == 0);
    return m;
}

std::string trace(const ScratchDir& dir, const std::string& rows) {
    auto p = (dir / "trace.csv").string();
    std::ofstream(p) << "arrival_s,prompt_tokens,output_tokens,prompt_ids\n" << rows;
    return p;
}

std::map<std::string, std::string> machine(const std::string& out) {
    std::map<std::string, std::string> kv;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
        if (auto eq = line.find('='); eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
    return kv;
}

double num(const std::map<std::string, std::string>& kv, const std::string& k) {
    INFO(k);
    REQUIRE(kv.count(k));
    return std::stod(kv.at(k));
}

/// The rows of a request table (`--table`), by column name.
std::vector<std::map<std::string, std::string>> table(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    std::vector<std::string> head;
    std::istringstream h(line);
    for (std::string c; std::getline(h, c, ',');)
        head.push_back(c);
    std::vector<std::map<std::string, std::string>> rows;
    while (std::getline(in, line)) {
        std::map<std::string, std::string> row;
        std::istringstream f(line);
        std::string c;
        for (std::size_t i = 0; i < head.size() && std::getline(f, c, ','); ++i)
            row[head[i]] = c;
        rows.push_back(row);
    }
    return rows;
}

} // namespace

TEST_CASE("two requests arriving together are served in the steps of a two-sequence run, to the cycle") {
    const ScratchDir d("serve-together");
    auto m = model(d, "hybrid");
    // Both admitted at 0 into a bucket of 2: prompt tokens at positions 0 and 1 (the first token at
    // the end of step 1), then two decode steps (the third token at the end of step 3): the steps of
    // `cardsim run --seqs 2` with the same prompts and 3 tokens, so the same cycles.
    auto t = trace(d, "0,2,3,1 2\n0,2,3,3 4\n");
    auto table_file = (d / "table.csv").string();
    auto s = run_cardsim("serve " + m + " --requests " + t + " --token-budget 2 --check --machine --table " +
                         table_file);
    INFO(s.out);
    REQUIRE(s.code == 0);
    auto served = machine(s.out);
    CHECK(served["bit_exact"] == "yes");
    auto r =
        run_cardsim("run " + m + " --seqs 2 --prompt 1,2 --prompt 3,4 --tokens 3 --no-reference --machine");
    REQUIRE(r.code == 0);
    auto ran = machine(r.out);
    CHECK(served["cycles"] == ran["cycles"]);
    CHECK(served["serve_steps"] == "4");
    const double seconds = num(ran, "seconds");
    auto rows = table(table_file);
    REQUIRE(rows.size() == 2);
    std::vector<std::string> generated;
    for (auto& row : rows) {
        // Arrived at 0 and finished with the run's last step; TPOT is the two decode steps' mean.
        CHECK(std::stod(row["e2e_ms"]) == Approx(seconds * 1e3).epsilon(1e-4)); // the table keeps ns
        const double ttft = std::stod(row["ttft_ms"]), tpot = std::stod(row["tpot_ms"]);
        CHECK(ttft > 0);
        CHECK(ttft < std::stod(row["e2e_ms"]));
        CHECK(tpot == Approx((std::stod(row["e2e_ms"]) - ttft) / 2).epsilon(1e-5));
        generated.push_back(row["generated"]);
    }
    // The tokens each request got are what the two-sequence run generates for its prompt.
    std::smatch g;
    REQUIRE(std::regex_search(r.out, g, std::regex("generated_tokens=([^\n]*)")));
    CHECK(generated[0].size() > 0);
    CHECK(std::count(generated[0].begin(), generated[0].end(), ' ') == 2);
    auto text = run_cardsim("run " + m + " --seqs 2 --prompt 1,2 --prompt 3,4 --tokens 3 --no-reference");
    CHECK(contains(text.out, "sequence 0: prompt 1 2; generated " + generated[0] + " (3 tokens)"));
    CHECK(contains(text.out, "sequence 1: prompt 3 4; generated " + generated[1] + " (3 tokens)"));
}

TEST_CASE("the card idles until a request arrives, and idle time is not busy time") {
    const ScratchDir d("serve-idle");
    auto m = model(d, "dense");
    auto t = trace(d, "0,2,2,\n0.5,2,2,\n");
    auto table_file = (d / "table.csv").string();
    auto s =
        run_cardsim("serve " + m + " --requests " + t + " --token-budget 2 --machine --table " + table_file);
    INFO(s.out);
    REQUIRE(s.code == 0);
    auto kv = machine(s.out);
    auto rows = table(table_file);
    REQUIRE(rows.size() == 2);
    CHECK(std::stod(rows[1]["admitted_s"]) == 0.5);
    CHECK(std::stod(rows[0]["finished_s"]) < 0.01); // the first is done long before the second arrives
    CHECK(num(kv, "span_seconds") > 0.5);
    CHECK(num(kv, "utilisation") < 0.05);
    CHECK(num(kv, "largest_batch") == 1);
    CHECK(kv["batch_limit"] == "arrival rate");
    CHECK(num(kv, "serve_tokens_per_second") == Approx(4 / num(kv, "span_seconds")));
}

TEST_CASE("admission stops at the slots the card's DDR holds beside the weights") {
    const ScratchDir d("serve-capacity");
    auto m = model(d, "hybrid");
    std::string rows;
    for (int i = 0; i < 6; ++i)
        rows += "0,2,3,\n";
    auto t = trace(d, rows);
    // One channel of 1 MiB, slots of 4096 positions: a few slots beside the weights.
    auto s =
        run_cardsim("serve " + m + " --requests " + t +
                    " --token-budget 8 --max-positions 4096 --set ddr.channels=1 --set ddr.capacity_mib=1 "
                    "--machine");
    INFO(s.out);
    REQUIRE(s.code == 0);
    auto kv = machine(s.out);
    const double slots = num(kv, "slots"), slot = num(kv, "slot_bytes"), fixed = num(kv, "ddr_fixed_bytes"),
                 ddr = num(kv, "ddr_capacity_bytes");
    CHECK(ddr == 1 << 20);
    REQUIRE(slots >= 1);
    REQUIRE(slots < 6);
    // The slots are as many as fit: one more would not.
    CHECK(fixed + slots * slot <= ddr);
    CHECK(fixed + (slots + 1) * slot > ddr);
    CHECK(num(kv, "largest_batch") == slots);
    CHECK(kv["batch_limit"] == "DDR capacity");
    CHECK(num(kv, "served") == 6);
    // Twice the positions: the caches take twice as much, so the slot grows by what the first 4096 took
    // of caches; the states stay (checked against the capacity `cardsim check` prints).
    auto twice = machine(
        run_cardsim("serve " + m + " --requests " + t + " --token-budget 8 --max-positions 8192 --machine")
            .out);
    auto check = run_cardsim("check " + m + " --max-positions 4096");
    std::smatch caches;
    REQUIRE(std::regex_search(check.out, caches,
                              std::regex(R"(caches \(4096 positions x 1 sequence\): ([0-9.]+) KiB)")));
    CHECK((num(twice, "slot_bytes") - slot) / 1024 == Approx(std::stod(caches[1])).epsilon(0.01));
}

TEST_CASE("serve refuses what it cannot serve, naming why") {
    const ScratchDir d("serve-bad");
    auto m = model(d, "dense");
    auto missing = run_cardsim("serve " + m + " --requests " + (d / "none.csv").string());
    CHECK(missing.code == 2);
    CHECK(contains(missing.out, "none.csv"));
    auto t = trace(d, "0,2,2,\n0,50,10,\n");
    auto s = run_cardsim("serve " + m + " --requests " + t + " --max-positions 16 --machine");
    INFO(s.out);
    REQUIRE(s.code == 0);
    auto kv = machine(s.out);
    CHECK(kv["refused"] == "1");
    CHECK(kv["served"] == "1");
    auto e = model(d, "encoder");
    auto enc = run_cardsim("serve " + e + " --requests " + t);
    CHECK(enc.code == 2);
    CHECK(contains(enc.out, "decoders"));
    auto gen = run_cardsim("serve --gen poisson --rate 0 -o " + (d / "g.csv").string());
    CHECK(gen.code == 2);
    CHECK(contains(gen.out, "--rate"));
}

TEST_CASE("a generated Poisson trace is written whole and served") {
    const ScratchDir d("serve-gen");
    auto m = model(d, "hybrid");
    auto g = (d / "g.csv").string();
    auto w =
        run_cardsim("serve --gen poisson --rate 500 --count 8 --prompt-len 2:4 --output-len 2:3 -o " + g);
    REQUIRE(w.code == 0);
    CHECK(contains(w.out, "wrote 8 requests"));
    auto s = run_cardsim("serve " + m + " --requests " + g + " --token-budget 4");
    INFO(s.out);
    REQUIRE(s.code == 0);
    CHECK(contains(s.out, "served 8 of 8 requests"));
    CHECK(contains(s.out, "TPOT  p50"));
}
