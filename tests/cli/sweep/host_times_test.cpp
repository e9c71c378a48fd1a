// A sweep's host times: DIR/host.csv holds each point's host phases (load, compile and where its
// weights came from, simulation, golden, reference, outputs), apart from results.csv, whose rows
// stay free of wall-clock time.

#include "tests/cli/sweep/support.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

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
        const double simulation = std::stod(host[i][column(h, "host_simulation_seconds")]);
        CHECK(simulation <= total);
        // The simulation splits into setup and steps.
        CHECK(std::stod(host[i][column(h, "host_setup_seconds")]) +
                  std::stod(host[i][column(h, "host_steps_seconds")]) <=
              simulation * (1 + 1e-9));
    }
    // results.csv has no host column.
    const auto results = csv(read(s / "out/results.csv"));
    for (auto& c : results[0])
        CHECK(c.rfind("host_", 0) != 0);
    // A resume that runs nothing keeps the rows.
    const auto before = read(s / "out/host.csv");
    REQUIRE(run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string()).code == 0);
    CHECK(read(s / "out/host.csv") == before);
    // A host.csv written before the setup column existed gains it, empty, and keeps its rows.
    {
        const auto setup = column(h, "host_setup_seconds");
        std::string old_text;
        for (auto row : csv(before)) {
            row.erase(row.begin() + std::ptrdiff_t(setup));
            for (std::size_t c = 0; c < row.size(); ++c)
                old_text += (c ? "," : "") + row[c];
            old_text += "\n";
        }
        write(s / "out/host.csv", old_text);
        REQUIRE(run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string()).code == 0);
        const auto upgraded = csv(read(s / "out/host.csv"));
        REQUIRE(upgraded.size() == 3);
        CHECK(upgraded[0] == h);
        for (std::size_t i = 1; i < 3; ++i) {
            CHECK(upgraded[i][setup].empty());
            auto expected = host[i];
            expected[setup].clear();
            CHECK(upgraded[i] == expected);
        }
        write(s / "out/host.csv", before);
    }
    // A record cut short by a crash is dropped, and the next point's row starts on its own line.
    {
        auto text = read(s / "out/host.csv");
        const auto last = text.rfind('\n', text.size() - 2);
        write(s / "out/host.csv", text.substr(0, last + 1) + text.substr(last + 1, 7)); // row 1 cut short
        write(s / "out/results.csv", read(s / "out/results.csv"));
    }
    REQUIRE(run_cardsim("sweep " + (s / "spec.toml").string() + " --retry-failed -o " + (s / "out").string())
                .code == 0);
    const auto mended = csv(read(s / "out/host.csv"));
    CHECK(mended.size() == 2); // the header and point 0; point 1's cut record dropped, not glued
    for (auto& row : mended)
        CHECK(row.size() == mended[0].size());
    // A host.csv of other columns is not overwritten: the directory holds something else.
    write(s / "out/host.csv", "a,b\n1,2\n");
    std::filesystem::remove(s / "out/results.csv");
    auto other = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string());
    CHECK(other.code == 2);
    CHECK(contains(other.out, "host.csv: its columns are not a sweep's host times"));
    CHECK(read(s / "out/host.csv") == "a,b\n1,2\n");
}

TEST_CASE(
    "a full sweep with a pack cache packs a checkpoint once: its first point fills it, the others take it") {
    ScratchDir s("sweep-pack-cache");
    const std::string spec = tiny_model(2) + "full = true\n[axes]\nddr.channels = [1, 2, 4]\n";
    // The weights column of each point of the sweep at `out`.
    auto weights = [&](const std::string& out) {
        auto host = csv(read(s / out / "host.csv"));
        std::vector<std::string> w;
        for (std::size_t i = 1; i < host.size(); ++i)
            w.push_back(host[i][column(host[0], "host_compile_weights")]);
        return w;
    };
    auto entries = [](const std::filesystem::path& dir) {
        std::size_t n = 0;
        if (std::filesystem::exists(dir))
            for (auto& e : std::filesystem::directory_iterator(dir))
                n += e.path().extension() == ".pack";
        return n;
    };
    auto sweep = [&](const std::string& text, const std::string& out) {
        write(s / "spec.toml", text);
        return run_cardsim("sweep " + (s / "spec.toml").string() + " -j 1 -o " + (s / out).string());
    };
    if (std::getenv("CARDSIM_PACK_CACHE") == nullptr) { // the default: the environment's, here none
        auto r = sweep(spec, "out");
        INFO(r.out);
        REQUIRE(r.code == 0);
        CHECK(weights("out") == std::vector<std::string>{"packed", "packed", "packed"});
    }
    // A folder the spec names (relative to it): a second sweep takes every point from it.
    REQUIRE(sweep("pack_cache = \"shared\"\n" + spec, "a").code == 0);
    CHECK(weights("a") == std::vector<std::string>{"packed", "cache", "cache"});
    REQUIRE(sweep("pack_cache = \"shared\"\n" + spec, "b").code == 0);
    CHECK(weights("b") == std::vector<std::string>{"cache", "cache", "cache"});
    CHECK(entries(s / "shared") == 1);
    // `false`: none, whatever the environment says; every point packs.
    REQUIRE(sweep("pack_cache = false\n" + spec, "c").code == 0);
    CHECK(weights("c") == std::vector<std::string>{"packed", "packed", "packed"});
    // Anything else is refused naming the key.
    auto bad = sweep("pack_cache = 3\n" + spec, "d");
    CHECK(bad.code == 2);
    CHECK(contains(bad.out, "pack_cache"));
    CHECK(contains(bad.out, "expected a folder name or false"));
    // Timing-only points pack nothing: a cache for them is refused, not ignored.
    auto timing = sweep("pack_cache = \"shared\"\n" + tiny_model(2) + "[axes]\nddr.channels = [1, 2]\n", "e");
    CHECK(timing.code == 2);
    CHECK(contains(timing.out, "is given for timing-only points, which pack no weights"));
}
