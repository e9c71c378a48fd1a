// A sweep's host times: DIR/host.csv holds each point's host phases (load, compile and where its
// weights came from, simulation, golden, reference, outputs), apart from results.csv, whose rows
// stay free of wall-clock time.

#include "tests/cli/sweep/support.hpp"

#include <catch2/catch.hpp>

using namespace cardsim::test;
using namespace cardsim::test::sweep;

TEST_CASE("a sweep writes each point's host phases to host.csv, a row a point, kept over a resume") {
    ScratchDir s("sweep-host");
    write(s / "spec.toml", "model = { generate = { arch = \"dense\", size = \"tiny\", seed = 1 } }\n"
                           "tokens = 2\n[axes]\nddr.channels = [1, 2]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto host = csv(read(s / "out/host.csv"));
    REQUIRE(host.size() == 3);
    const auto& h = host[0];
    CHECK(h[0] == "point");
    for (std::size_t i = 1; i < 3; ++i) {
        CHECK(host[i][0] == std::to_string(i - 1));
        CHECK(host[i][column(h, "host_compile_weights")] == "none"); // timing-only: shapes alone
        const double total = std::stod(host[i][column(h, "host_total_seconds")]);
        CHECK(total > 0);
        CHECK(std::stod(host[i][column(h, "host_simulation_seconds")]) <= total);
    }
    // results.csv has no host column.
    const auto results = csv(read(s / "out/results.csv"));
    for (auto& c : results[0])
        CHECK(c.rfind("host_", 0) != 0);
    // A resume that runs nothing keeps the rows.
    const auto before = read(s / "out/host.csv");
    REQUIRE(run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string()).code == 0);
    CHECK(read(s / "out/host.csv") == before);
    // A host.csv of other columns is not overwritten: the directory holds something else.
    write(s / "out/host.csv", "a,b\n1,2\n");
    std::filesystem::remove(s / "out/results.csv");
    auto other = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string());
    CHECK(other.code == 2);
    CHECK(contains(other.out, "host.csv: its columns are not a sweep's host times"));
    CHECK(read(s / "out/host.csv") == "a,b\n1,2\n");
}
