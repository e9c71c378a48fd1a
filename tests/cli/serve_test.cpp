// `cardsim serve` as a user runs it: a trace of fixed arrivals served on the card gives the
// latencies of the schedule worked out by hand, each request gets the tokens of its prompt run
// alone (whatever shares its steps, whichever slot it reuses), the card idles until an arrival,
// admission stops at the slots the DDR holds, and bad input is refused; a program set compiled
// before (compile --rows) serves as its checkpoint does.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

using cardsim::test::contains;
using cardsim::test::machine_values;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

std::string trace(const ScratchDir& dir, const std::string& rows) {
    auto p = (dir / "trace.csv").string();
    std::ofstream(p) << "arrival_s,prompt_tokens,output_tokens,prompt_ids\n" << rows;
    return p;
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

TEST_CASE("two requests arriving together follow the decode-first schedule worked out by hand") {
    const ScratchDir d("serve-together");
    auto m = make_model(d, "hybrid");
    // A budget of 2 rows, prompts of 2, 3 tokens each. By hand:
    //   step 1: request 0's prompt (2 rows; its first token at the end)
    //   step 2: request 0 decodes, request 1's first prompt token
    //   step 3: request 0 decodes (its last token), request 1's last prompt token (its first)
    //   steps 4, 5: request 1 decodes (bucket 1 each)
    auto t = trace(d, "0,2,3,1 2\n0,2,3,3 4\n");
    auto table_file = (d / "table.csv").string();
    auto s = run_cardsim("serve " + m + " --requests " + t + " --token-budget 2 --check --machine --table " +
                         table_file);
    INFO(s.out);
    REQUIRE(s.code == 0);
    auto served = machine_values(s.out);
    CHECK(served["bit_exact"] == "yes");
    CHECK(served["serve_steps"] == "5");
    CHECK(served["largest_batch"] == "2");
    auto rows = table(table_file);
    REQUIRE(rows.size() == 2);
    const double e2e0 = std::stod(rows[0]["e2e_ms"]), e2e1 = std::stod(rows[1]["e2e_ms"]);
    const double ttft0 = std::stod(rows[0]["ttft_ms"]), ttft1 = std::stod(rows[1]["ttft_ms"]);
    // Request 0 ends with step 3, where request 1 gets its first token; request 1 ends the run.
    // The table keeps ns: its ms figures agree to a few ns.
    CHECK(ttft1 == Approx(e2e0).margin(2e-6));
    CHECK(e2e1 == Approx(num(served, "seconds") * 1e3).margin(2e-6));
    CHECK(0 < ttft0);
    CHECK(ttft0 < ttft1);
    CHECK(e2e0 < e2e1);
    CHECK(std::stod(rows[0]["tpot_ms"]) == Approx((e2e0 - ttft0) / 2).margin(2e-6));
    CHECK(std::stod(rows[1]["tpot_ms"]) == Approx((e2e1 - ttft1) / 2).margin(2e-6));
}

TEST_CASE(
    "a request's tokens are its prompt's run alone, whoever shares its steps and whichever slot it reuses") {
    const ScratchDir d("serve-alone");
    auto m = make_model(d, "hybrid");
    // Four requests on two slots: the third and fourth reuse the slots of the first two (Gated-DeltaNet
    // states and conv windows included), prefilled in chunks beside the others' decode rows.
    const std::vector<std::string> prompts{"1 2 3", "4 5", "6 7 8 9", "10 11"};
    const std::vector<int> outputs{4, 2, 3, 5};
    std::string rows_csv;
    for (std::size_t r = 0; r < prompts.size(); ++r)
        rows_csv += "0," + std::to_string(std::count(prompts[r].begin(), prompts[r].end(), ' ') + 1) + "," +
                    std::to_string(outputs[r]) + "," + prompts[r] + "\n";
    auto t = trace(d, rows_csv);
    auto table_file = (d / "table.csv").string();
    auto s = run_cardsim("serve " + m + " --requests " + t +
                         " --token-budget 4 --max-seqs 2 --check --machine --table " + table_file);
    INFO(s.out);
    REQUIRE(s.code == 0);
    CHECK(machine_values(s.out)["bit_exact"] == "yes");
    auto rows = table(table_file);
    REQUIRE(rows.size() == prompts.size());
    std::set<std::string> slots;
    for (std::size_t r = 0; r < prompts.size(); ++r) {
        slots.insert(rows[r]["slot"]);
        auto prompt = prompts[r];
        std::replace(prompt.begin(), prompt.end(), ' ', ',');
        auto alone = run_cardsim("run " + m + " --prompt " + prompt + " --tokens " +
                                 std::to_string(outputs[r]) + " --no-reference");
        REQUIRE(alone.code == 0);
        INFO("request " << r << ": served " << rows[r]["generated"]);
        CHECK(contains(alone.out, "generated: " + rows[r]["generated"] + "\n"));
    }
    CHECK(slots.size() == 2); // the slots were reused
}

TEST_CASE("the card idles until a request arrives, and idle time is not busy time") {
    const ScratchDir d("serve-idle");
    auto m = make_model(d, "dense");
    auto t = trace(d, "0,2,2,\n0.5,2,2,\n");
    auto table_file = (d / "table.csv").string();
    auto s =
        run_cardsim("serve " + m + " --requests " + t + " --token-budget 2 --machine --table " + table_file);
    INFO(s.out);
    REQUIRE(s.code == 0);
    auto kv = machine_values(s.out);
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
    auto m = make_model(d, "hybrid");
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
    auto kv = machine_values(s.out);
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
    // The summary says the same in words: its DDR holds that many slots of the positions asked for.
    const auto text = run_cardsim("serve " + m + " --requests " + t +
                                  " --token-budget 8 --max-positions 4096 --set ddr.channels=1 --set "
                                  "ddr.capacity_mib=1");
    CHECK(contains(text.out, fmt::format("; its DDR holds {} slots of 4096 positions", kv["slots"])));
    // Twice the positions: the caches take twice as much, so the slot grows by what the first 4096 took
    // of caches; the states stay (checked against the capacity `cardsim check` prints).
    auto twice = machine_values(
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
    auto m = make_model(d, "dense");
    auto missing = run_cardsim("serve " + m + " --requests " + (d / "none.csv").string());
    CHECK(missing.code == 2);
    CHECK(contains(missing.out, "none.csv"));
    auto t = trace(d, "0,2,2,\n0,50,10,\n");
    auto s = run_cardsim("serve " + m + " --requests " + t + " --max-positions 16 --machine");
    INFO(s.out);
    REQUIRE(s.code == 1); // a refused request is a negative verdict (docs/exit-codes.md)
    auto kv = machine_values(s.out);
    CHECK(kv["refused"] == "1");
    CHECK(kv["served"] == "1");
    auto e = make_model(d, "encoder");
    auto enc = run_cardsim("serve " + e + " --requests " + t);
    CHECK(enc.code == 2);
    CHECK(contains(enc.out, "decoders"));
    auto gen = run_cardsim("serve --gen poisson --rate 0 -o " + (d / "g.csv").string());
    CHECK(gen.code == 2);
    CHECK(contains(gen.out, "--rate"));
}

TEST_CASE("serve refuses an option that does nothing in the mode asked for, naming it, never ignores it") {
    const ScratchDir d("serve-ignored");
    auto m = make_model(d, "dense");
    auto t = trace(d, "0,2,2,\n");
    // The generator's options with a trace read from a file.
    for (std::string o : {"--rate 5", "--count 3", "--prompt-len 2:3", "--output-len 4", "--seed 2"}) {
        auto r = run_cardsim("serve " + m + " --requests " + t + " " + o);
        INFO(o << ":\n" << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, o.substr(0, o.find(' ')) + ": it shapes the requests --gen makes up"));
    }
    // Serving options when only a trace is written.
    const auto g = (d / "g.csv").string();
    for (std::string o : std::vector<std::string>{"--table " + (d / "t.csv").string(), "--token-budget 4",
                                                  "--check", "--machine", "--set ddr.channels=2"}) {
        auto r = run_cardsim("serve --gen poisson --count 3 -o " + g + " " + o);
        INFO(o << ":\n" << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, o.substr(0, o.find(' ')) + ": nothing is served"));
        CHECK(!std::filesystem::exists(g));
    }
    // Where they do something they are taken.
    CHECK(run_cardsim("serve --gen poisson --count 3 --rate 5 --seed 2 -o " + g).code == 0);
    CHECK(run_cardsim("serve " + m + " --gen poisson --count 3 --token-budget 4 --machine").code == 0);
}

TEST_CASE("a generated Poisson trace is written whole and served") {
    const ScratchDir d("serve-gen");
    auto m = make_model(d, "hybrid");
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

TEST_CASE("a compiled program set serves a trace as its checkpoint does to the cycle and the bit") {
    const ScratchDir d("serve-set");
    auto m = make_model(d, "hybrid");
    auto t = trace(d, "0,3,4,1 2 3\n0,2,5,4 5\n0.00001,5,3,6 7 8 9 10\n");
    auto set = (d / "s.prog").string();
    auto c = run_cardsim("compile " + m + " -o " + set + " --rows 1,2,4 --max-positions 16");
    INFO(c.out);
    REQUIRE(c.code == 0);
    CHECK(contains(c.out, "a set of 3 buckets of 1,2,4 token rows on 4 slots of 16 positions"));
    auto from_set_table = (d / "set.csv").string(), from_model_table = (d / "model.csv").string();
    auto a = run_cardsim("serve " + set + " --model " + m + " --requests " + t +
                         " --check --machine --table " + from_set_table);
    auto b =
        run_cardsim("serve " + m + " --requests " + t +
                    " --token-budget 4 --max-positions 16 --check --machine --table " + from_model_table);
    INFO(a.out << b.out);
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    auto sa = machine_values(a.out), sb = machine_values(b.out);
    CHECK(sa["bit_exact"] == "yes");
    CHECK(sa["served_from"] == "set");
    CHECK(sb["served_from"] == "checkpoint");
    CHECK(sa["cycles"] == sb["cycles"]);
    CHECK(sa["serve_steps"] == sb["serve_steps"]);
    CHECK(sa["slots_laid_out"] == "4");
    auto ra = table(from_set_table), rb = table(from_model_table);
    REQUIRE(ra.size() == 3);
    REQUIRE(rb.size() == 3);
    for (std::size_t r = 0; r < 3; ++r) {
        CHECK(ra[r]["generated"] == rb[r]["generated"]);
        CHECK(ra[r]["e2e_ms"] == rb[r]["e2e_ms"]);
    }
    // Timing-only needs no checkpoint.
    auto timing = run_cardsim("serve " + set + " --requests " + t + " --machine");
    REQUIRE(timing.code == 0);
    CHECK(machine_values(timing.out)["cycles"] == sa["cycles"]);
}

TEST_CASE("a program set is refused where it cannot be used and the error points to what can") {
    const ScratchDir d("serve-set-bad");
    auto m = make_model(d, "hybrid");
    auto t = trace(d, "0,3,4,\n");
    auto set = (d / "s.prog").string();
    REQUIRE(run_cardsim("compile " + m + " -o " + set + " --rows 1,2 --slots 2 --max-positions 8").code == 0);
    const std::pair<std::string, const char*> refused[] = {
        {"run " + set, "cardsim serve"},
        {"serve " + set + " --requests " + t + " --check", "--model"},
        {"serve " + set + " --requests " + t + " --token-budget 4", "largest bucket holds 2"},
        {"serve " + set + " --requests " + t + " --max-positions 9", "8 positions"},
        {"serve " + set + " --requests " + t + " --set ddr.channels=2", "card config"}};
    for (auto& [args, why] : refused) {
        auto r = run_cardsim(args);
        INFO(args << ": " << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, why));
    }
    auto image = d / "s.prog.ddr";
    std::filesystem::remove(image);
    auto no_image = run_cardsim("serve " + set + " --requests " + t);
    CHECK(no_image.code == 2);
    CHECK(contains(no_image.out, "s.prog.ddr"));
    const std::pair<const char*, const char*> bad_compiles[] = {
        {"--rows 2,1", "increasing order"},
        {"--rows 0", "positive count"},
        {"--rows 1,,2", "positive count"},
        {"--rows 1 --slots 0", "--slots 0"},
        {"--rows 1 --slots 99999999", "the card's DDR holds"},
        {"--slots 2", "give --rows too"},
        {"--rows 1 --bucket seqs=2", "not both"}};
    for (auto [args, why] : bad_compiles) {
        auto r = run_cardsim("compile " + m + " -o " + (d / "x.prog").string() + " " + args);
        INFO(args << ": " << r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, why));
        CHECK_FALSE(std::filesystem::exists(d / "x.prog"));
    }
}

TEST_CASE("disasm prints every bucket of a set or the one asked for") {
    const ScratchDir d("serve-set-disasm");
    auto m = make_model(d, "hybrid");
    auto set = (d / "s.prog").string();
    REQUIRE(run_cardsim("compile " + m + " -o " + set + " --rows 1,2,4 --max-positions 8").code == 0);
    auto all = run_cardsim("disasm " + set + " --header-only");
    INFO(all.out);
    REQUIRE(all.code == 0);
    CHECK(contains(all.out, "program set: 3 buckets of 1,2,4 token rows on 4 slots of 8 positions"));
    for (auto k : {"bucket 0: 1 token rows", "bucket 1: 2 token rows", "bucket 2: 4 token rows"})
        CHECK(contains(all.out, k));
    auto one = run_cardsim("disasm " + set + " --bucket 1");
    REQUIRE(one.code == 0);
    CHECK(contains(one.out, "bucket 1: 2 token rows"));
    CHECK_FALSE(contains(one.out, "bucket 0:"));
    CHECK(contains(one.out, "bucket tokens=2 seqs=1"));
    auto past = run_cardsim("disasm " + set + " --bucket 3");
    CHECK(past.code == 2);
    CHECK(contains(past.out, "buckets 0 .. 2"));
    CHECK_FALSE(contains(past.out, "program set:")); // refused before anything is printed
}
