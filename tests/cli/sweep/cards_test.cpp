// Sweeps over systems of cards: `plan` is a run axis (`cardsim run --plan`), `system.cards` a
// config axis; the rows carry the system's size and its links, and the busy fractions are means
// over every card's units.

#include "tests/cli/sweep/support.hpp"
#include "tests/support/cli_fixtures.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace cardsim::test;
using namespace cardsim::test::sweep;

TEST_CASE("a plan axis splits each point's model over its system.cards cards, and the rows carry the links") {
    ScratchDir s("sweep-cards");
    write(s / "spec.toml", "model = { generate = { arch = \"dense\", size = \"tiny\", seed = 1 } }\n"
                           "tokens = 2\nplan = [\"none\", \"pp\"]\n"
                           "skip_if = \"plan == \\\"none\\\" and system.cards > 1\"\n"
                           "[axes]\nsystem.cards = [1, 2]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string());
    INFO(r.out);
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 4); // none on 1 card; pp on 1 card (refused: nothing to split) and on 2
    const auto& h = rows[0];
    REQUIRE(h[2] == "plan");
    REQUIRE(h[3] == "system.cards");
    const auto& one = rows[1];
    const auto& refused = rows[2];
    const auto& two = rows[3];
    CHECK(one[column(h, "status")] == "ok");
    CHECK(one[column(h, "cards")].empty()); // one card: no system figures
    CHECK(refused[column(h, "status")] == "error");
    CHECK(contains(refused[column(h, "error")], "system.cards = 1"));
    REQUIRE(two[column(h, "status")] == "ok");
    CHECK(two[column(h, "cards")] == "2");
    CHECK(std::stod(two[column(h, "link_bytes")]) > 0);
    CHECK(std::stod(two[column(h, "link_utilisation")]) > 0);
    // Half the layers a card: each card's matvec is busy for about half of what one card's is, so
    // the mean over both cards' matvecs is below the one card's (and every mean is a fraction).
    const double busy1 = std::stod(one[column(h, "busy_matvec")]),
                 busy2 = std::stod(two[column(h, "busy_matvec")]);
    CHECK(busy2 < busy1);
    CHECK(busy2 > 0);
    CHECK(busy1 <= 1.0);
    // The point is the run by hand.
    auto hand = run_cardsim("run " + (s / "out/models/dense-tiny-seed1").string() +
                            " --machine --timing-only --tokens 2 --set system.cards=2 --plan pp");
    REQUIRE(hand.code == 0);
    CHECK(contains(hand.out, "cycles=" + two[column(h, "cycles")] + "\n"));
    // The network unit each card of a system has (not in [units]) has its column too: the mean of
    // the two cards' busy fractions, as the run reports them; empty of meaning on one card (0).
    const auto values = cardsim::test::machine_values(hand.out);
    const double card0 = std::stod(values.at("busy_card0.network_0")),
                 card1 = std::stod(values.at("busy_card1.network_0"));
    CHECK(std::abs(std::stod(two[column(h, "busy_network")]) - (card0 + card1) / 2) < 1e-9);
    CHECK(std::stod(two[column(h, "busy_network")]) > 0);
    CHECK(std::stod(one[column(h, "busy_network")]) == 0);
}

TEST_CASE("a plan in a sweep spec is checked when the spec is read, naming the key") {
    ScratchDir s("sweep-cards-bad");
    const std::string model = "model = { generate = { arch = \"dense\", size = \"tiny\", seed = 1 } }\n";
    write(s / "a.toml", model + "plan = \"dp\"\n");
    auto a = run_cardsim("sweep " + (s / "a.toml").string() + " -o " + (s / "o").string());
    CHECK(a.code == 2);
    CHECK(contains(a.out, "a.toml:2"));
    CHECK(contains(a.out, "expected \"none\" (one card), \"pp\" (pipeline parallel), \"tp\""));
    CHECK_FALSE(std::filesystem::exists(s / "o"));
}

TEST_CASE("a serving sweep takes a plan axis: each point serves its trace on its system of cards") {
    ScratchDir s("sweep-cards-serve");
    write(s / "spec.toml", "model = { generate = { arch = \"dense\", size = \"small\", seed = 1 } }\n"
                           "plan = [\"tp\", \"tp×pp\"]\n"
                           "[axes]\nsystem.cards = [4]\n"
                           "[serve]\nrate = 20000.0\ncount = 6\nprompt_len = \"4\"\noutput_len = \"3\"\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 3);
    const auto& h = rows[0];
    for (std::size_t k = 1; k < rows.size(); ++k) {
        CHECK(rows[k][column(h, "status")] == "ok");
        CHECK(rows[k][column(h, "cards")] == "4");
        CHECK(rows[k][column(h, "served")] == "6");
        CHECK(std::stod(rows[k][column(h, "link_bytes")]) > 0);
    }
}
