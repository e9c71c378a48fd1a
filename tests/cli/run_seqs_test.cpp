// `cardsim run --seqs S` and programs compiled for S sequences, as a user runs them: every
// sequence's tokens equal that sequence run alone, whichever sequences share its steps; the whole
// bucket is bit-exact; timing-only gives the full run's cycles; mismatched counts are refused.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <sstream>

using cardsim::test::contains;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

/// The lines `sequence Q: prompt IDS; generated IDS (N tokens)` of a run: prompt → generated.
std::vector<std::pair<std::string, std::string>> sequences_of(const std::string& out) {
    std::vector<std::pair<std::string, std::string>> v;
    std::regex line(R"(sequence \d+: prompt ([0-9 ]+); generated ([0-9 ]+) \(\d+ tokens\))");
    for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
        v.emplace_back((*it)[1], (*it)[2]);
    return v;
}

/// The `generated:` line of a one-sequence run.
std::string generated_alone(const std::string& m, const std::string& prompt, std::size_t tokens) {
    std::string comma = prompt;
    for (auto& c : comma)
        if (c == ' ') c = ',';
    auto r =
        run_cardsim("run " + m + " --no-reference --prompt " + comma + " --tokens " + std::to_string(tokens));
    REQUIRE(r.code == 0);
    std::smatch g;
    REQUIRE(std::regex_search(r.out, g, std::regex(R"(generated: ([0-9 ]+)\n)")));
    return g[1];
}

std::size_t count(const std::string& ids) {
    std::istringstream in(ids);
    std::size_t n = 0;
    std::string w;
    while (in >> w)
        ++n;
    return n;
}

std::string machine_value(const std::string& out, const std::string& key) {
    std::smatch m;
    REQUIRE(std::regex_search(out, m, std::regex("(^|\n)" + key + "=([^\n]*)")));
    return m[2];
}

} // namespace

TEST_CASE("each sequence of a multi-sequence run generates what it generates alone, bit-exact") {
    const ScratchDir d("run-seqs-alone");
    for (auto arch : {"dense", "hybrid"}) {
        auto m = make_model(d, arch);
        // Prompts of different lengths: the shorter ones generate more tokens in the run's steps.
        auto r = run_cardsim("run " + m + " --tokens 3 --seqs 3 --prompt 5,6 --prompt 9,8,7,6,5");
        INFO(r.out);
        REQUIRE(r.code == 0);
        REQUIRE(contains(r.out, "bit-exact: yes"));
        REQUIRE(contains(r.out, "steps of 3 sequences"));
        auto seqs = sequences_of(r.out);
        REQUIRE(seqs.size() == 3);
        REQUIRE(seqs[0].first == "5 6");
        REQUIRE(seqs[1].first == "9 8 7 6 5");
        REQUIRE(count(seqs[1].second) == 3); // the longest prompt generates --tokens
        REQUIRE(count(seqs[0].second) == 6); // the run's 7 steps, after a prompt of 2
        for (auto& [prompt, generated] : seqs)
            REQUIRE(generated_alone(m, prompt, count(generated)) == generated);
    }
}

TEST_CASE("a sequence's tokens do not depend on which sequences share its steps") {
    const ScratchDir d("run-seqs-neighbours");
    auto m = make_model(d, "hybrid");
    auto first = sequences_of(run_cardsim("run " + m +
                                          " --no-reference --tokens 4 --prompt 3,4,5 --prompt "
                                          "10,20,30 --prompt 7,7,7")
                                  .out);
    auto other = sequences_of(run_cardsim("run " + m +
                                          " --no-reference --tokens 4 --prompt 50,1,2 --prompt "
                                          "60,61,62 --prompt 40,41,42 --prompt 10,20,30")
                                  .out);
    REQUIRE(first.size() == 3);
    REQUIRE(other.size() == 4);
    REQUIRE(first[1].first == "10 20 30");
    REQUIRE(other[3].first == "10 20 30");
    REQUIRE(first[1].second == other[3].second); // at row 1 of 3, and at row 3 of 4 with other neighbours
    REQUIRE(first[0].second != first[1].second); // the sequences really differ
}

TEST_CASE("a multi-sequence timing-only run takes the cycles of the full run") {
    const ScratchDir d("run-seqs-timing");
    auto m = make_model(d, "hybrid");
    auto full = run_cardsim("run " + m + " --seqs 4 --tokens 3 --no-reference --machine");
    auto timing = run_cardsim("run " + m + " --seqs 4 --tokens 3 --timing-only --machine");
    REQUIRE(full.code == 0);
    REQUIRE(timing.code == 0);
    REQUIRE(machine_value(full.out, "seqs") == "4");
    REQUIRE(machine_value(full.out, "bit_exact") == "yes");
    REQUIRE(machine_value(full.out, "cycles") == machine_value(timing.out, "cycles"));
    // Four sequences a step cost more cycles than one, and less than four one-sequence runs.
    auto one = run_cardsim("run " + m + " --tokens 3 --timing-only --machine");
    auto c1 = std::stoull(machine_value(one.out, "cycles")),
         c4 = std::stoull(machine_value(full.out, "cycles"));
    REQUIRE(c4 > c1);
    REQUIRE(c4 < 4 * c1);
}

TEST_CASE("a program compiled for several sequences runs them, and other counts are refused") {
    const ScratchDir d("run-seqs-program");
    auto m = make_model(d, "dense");
    auto prog = (d / "p3.prog").string();
    REQUIRE(run_cardsim("compile " + m + " --bucket seqs=3 --max-positions 6 -o " + prog).code == 0);
    auto r = run_cardsim("run " + prog + " --model " + m + " --no-reference --tokens 3 --prompt 5,6");
    INFO(r.out);
    REQUIRE(r.code == 0);
    REQUIRE(contains(r.out, "bit-exact: yes"));
    auto here = run_cardsim("run " + m + " --no-reference --tokens 3 --seqs 3 --prompt 5,6");
    REQUIRE(sequences_of(r.out) == sequences_of(here.out)); // compiled apart or here: the same tokens
    auto wrong = run_cardsim("run " + prog + " --model " + m + " --seqs 2");
    REQUIRE(wrong.code == 2);
    REQUIRE(contains(wrong.out, "--seqs 2: the program " + prog + " decodes 3 sequences a step"));
    auto many = run_cardsim("run " + m + " --seqs 2 --prompt 1 --prompt 2 --prompt 3");
    REQUIRE(many.code == 2);
    REQUIRE(contains(many.out, "3 prompts for 2 sequences"));
    auto positions = run_cardsim("run " + prog + " --model " + m + " --tokens 9");
    REQUIRE(positions.code == 2);
    REQUIRE(contains(positions.out, "caches hold 6"));
}

TEST_CASE("run --seqs and --tokens refuse an encoder, --seqs no sequences and an empty prompt, and checks "
          "layers of all rows") {
    const ScratchDir d("run-seqs-refusals");
    auto enc = make_model(d, "encoder");
    auto config = std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml";
    auto e = run_cardsim("run " + enc + " --config " + config + " --prompt 1,2,3,4 --seqs 2");
    REQUIRE(e.code == 2);
    REQUIRE(contains(e.out, "an encoder run takes one sequence"));
    // An encoder generates no tokens: --tokens is refused, even at its default, not ignored.
    for (const char* n : {"3", "8"}) {
        auto t = run_cardsim("run " + enc + " --config " + config + " --prompt 1,2,3,4 --tokens " + n);
        REQUIRE(t.code == 2);
        REQUIRE(contains(t.out, std::string("--tokens ") + n +
                                    ": an encoder runs its prompt in one step and generates no tokens"));
    }
    auto m = make_model(d, "hybrid");
    auto zero = run_cardsim("run " + m + " --seqs 0");
    REQUIRE(zero.code == 2);
    REQUIRE(contains(zero.out, "--seqs 0: expected at least 1"));
    auto empty = run_cardsim("run " + m + " --prompt 1,2 --prompt \"\"");
    REQUIRE(empty.code == 2);
    REQUIRE(contains(empty.out, "the prompt of sequence 1 has no ids"));
    auto layers = run_cardsim("run " + m + " --seqs 3 --tokens 2 --no-reference --check-layers all");
    INFO(layers.out);
    REQUIRE(layers.code == 0);
    REQUIRE(
        contains(layers.out, "every output and every checked layer's output equals the golden executor's"));
}

TEST_CASE("a card whose DDR burst is not 64 bytes runs several sequences' states bit-exact") {
    // Stores start on the card's burst (here 128 bytes, or 16); each sequence's part within one
    // follows the program format's 64-byte line, which the kernels read it by.
    ScratchDir d("run-seqs-burst");
    auto m = make_model(d, "hybrid");
    for (const std::string burst : {"ddr.timing.burst_length=16", "ddr.data_bits=16"}) {
        auto r = run_cardsim("run " + m + " --tokens 3 --seqs 3 --set " + burst);
        INFO(burst << "\n" << r.out);
        CHECK(r.code == 0);
        CHECK(contains(r.out, "bit-exact: yes"));
    }
}
