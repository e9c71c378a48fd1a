// Sweeps past one machine: shards cover the grid once, merged shards give the bytes of one run's
// CSV, and the emitted Slurm / GNU parallel files run every shard.

#include "tests/cli/sweep/support.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace cardsim::test;
using namespace cardsim::test::sweep;

namespace {

/// A 7-point grid (9 less 2 skipped), so that 3 shards are uneven.
std::string seven_points() {
    return tiny_model(2) + "skip_if = \"ddr.channels == 4 and clock.kernel_mhz != 250\"\n"
                           "[axes]\nddr.channels = [1, 2, 4]\nclock.kernel_mhz = [200, 250, 300]\n";
}

/// The point ids a `--list` prints.
std::vector<std::size_t> listed_ids(const std::string& out) {
    std::vector<std::size_t> ids;
    for (auto& l : lines(out))
        if (l.rfind("  point ", 0) == 0) ids.push_back(std::stoul(l.substr(8)));
    return ids;
}

/// One run of the whole grid; its results.csv bytes.
std::string one_run(const ScratchDir& s) {
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -j 2 -o " + (s / "one").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    return read(s / "one/results.csv");
}

/// Whether GNU parallel is installed (scripts/setup.sh installs it).
bool have_parallel() {
    return shell("command -v parallel").code == 0;
}

} // namespace

TEST_CASE("shards are disjoint, cover the grid, and differ in size by at most one point") {
    ScratchDir s("sweep-cover");
    write(s / "spec.toml", seven_points());
    auto all = listed_ids(run_cardsim("sweep " + (s / "spec.toml").string() + " --list").out);
    REQUIRE(all == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 7});
    for (std::size_t n : {1u, 2u, 3u, 7u, 9u}) {
        std::multiset<std::size_t> seen;
        std::size_t smallest = all.size(), largest = 0;
        for (std::size_t i = 0; i < n; ++i) {
            auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " --list --shard " +
                                 std::to_string(i) + "/" + std::to_string(n));
            REQUIRE(r.code == 0);
            auto ids = listed_ids(r.out);
            seen.insert(ids.begin(), ids.end());
            smallest = std::min(smallest, ids.size());
            largest = std::max(largest, ids.size());
        }
        INFO(n << " shards");
        REQUIRE(std::vector<std::size_t>(seen.begin(), seen.end()) == all);
        REQUIRE(largest - smallest <= 1);
    }
}

TEST_CASE("shards merged in any order give byte for byte the CSV of one run") {
    ScratchDir s("sweep-merge");
    write(s / "spec.toml", seven_points());
    const auto one = one_run(s);
    REQUIRE(lines(one).size() == 8);
    for (int i = 0; i < 3; ++i) {
        auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " --shard " + std::to_string(i) +
                             "/3 -j 1 -o " + (s / ("shard-" + std::to_string(i))).string());
        INFO(r.out);
        REQUIRE(r.code == 0);
        REQUIRE(lines(read(s / ("shard-" + std::to_string(i)) / "results.csv")).size() == (i == 0 ? 4u : 3u));
    }
    auto m =
        run_cardsim("sweep --merge " + (s / "shard-2").string() + " " + (s / "shard-0/results.csv").string() +
                    " " + (s / "shard-1").string() + " -o " + (s / "merged").string());
    INFO(m.out);
    REQUIRE(m.code == 0);
    REQUIRE(contains(m.out, "merged 7 rows from 3 results"));
    REQUIRE(read(s / "merged/results.csv") == one);
    // A shard given twice is the same rows: still the one-run CSV.
    REQUIRE(run_cardsim("sweep --merge " + (s / "shard-0").string() + " " + (s / "shard-0").string() + " " +
                        (s / "shard-1").string() + " " + (s / "shard-2").string() + " -o " +
                        (s / "twice.csv").string())
                .code == 0);
    REQUIRE(read(s / "twice.csv") == one);
}

TEST_CASE("merged shards with a failed point exit 1 and say how many failed") {
    ScratchDir s("sweep-merge-failed");
    // Point 1 (no conv unit) fails: the hybrid model needs one.
    write(s / "spec.toml", tiny_model(2) + "[axes]\nunits.conv.count = [1, 0]\n");
    for (int i = 0; i < 2; ++i)
        REQUIRE(run_cardsim("sweep " + (s / "spec.toml").string() + " --shard " + std::to_string(i) +
                            "/2 -j 1 -o " + (s / ("shard-" + std::to_string(i))).string())
                    .code == (i == 1 ? 1 : 0));
    auto m = run_cardsim("sweep --merge " + (s / "shard-0").string() + " " + (s / "shard-1").string() +
                         " -o " + (s / "merged").string());
    INFO(m.out);
    REQUIRE(m.code == 1);
    REQUIRE(contains(m.out, "merged 2 rows from 2 results"));
    REQUIRE(contains(m.out, ": 1 failed"));
    // The ok shard alone merges clean.
    auto ok = run_cardsim("sweep --merge " + (s / "shard-0").string() + " -o " + (s / "ok").string());
    REQUIRE(ok.code == 0);
    REQUIRE(contains(ok.out, ": 0 failed"));
}

TEST_CASE("a merge that cannot write every output replaces none and leaves nothing new") {
    ScratchDir s("sweep-merge-stage");
    write(s / "spec.toml", tiny_model(2) + "[axes]\nddr.channels = [1, 2]\n");
    REQUIRE(run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "a").string()).code == 0);
    // An output folder whose settings file cannot be written (a folder holds its name).
    write(s / "od" / "results.csv", "OLD\n");
    std::filesystem::create_directories(s / "od" / "sweep-settings.txt");
    auto m = run_cardsim("sweep --merge " + (s / "a").string() + " -o " + (s / "od").string());
    INFO(m.out);
    CHECK(m.code == 2);
    CHECK(read(s / "od" / "results.csv") == "OLD\n");
    for (auto& e : std::filesystem::directory_iterator(s / "od"))
        CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
    // Into a new folder under a file-size limit the CSV cannot be written: no folder is left.
    auto limited = shell("trap '' XFSZ; ulimit -f 1; exec " + std::string(CARDSIM_BINARY) +
                         " sweep --merge " + (s / "a").string() + " -o " + (s / "new").string());
    INFO(limited.out);
    CHECK(limited.code == 2);
    CHECK_FALSE(std::filesystem::exists(s / "new"));
}

TEST_CASE("merge refuses results of different sweeps and two different rows for one point") {
    ScratchDir s("sweep-conflict");
    write(s / "a.toml", tiny_model(2) + "[axes]\nddr.channels = [1, 2]\n");
    write(s / "b.toml", tiny_model(2) + "[axes]\nclock.kernel_mhz = [200, 300]\n");
    write(s / "c.toml", tiny_model(2) + "[axes]\nddr.channels = [3, 4]\n");
    for (auto n : {"a", "b", "c"})
        REQUIRE(run_cardsim("sweep " + (s / (std::string(n) + ".toml")).string() + " -o " + (s / n).string())
                    .code == 0);
    auto h = run_cardsim("sweep --merge " + (s / "a" / "results.csv").string() + " " +
                         (s / "b" / "results.csv").string() + " -o " + (s / "m").string());
    REQUIRE(h.code == 2);
    REQUIRE(contains(h.out, "its columns differ"));
    auto c = run_cardsim("sweep --merge " + (s / "a").string() + " " + (s / "c").string() + " -o " +
                         (s / "m").string());
    REQUIRE(c.code == 2);
    REQUIRE(contains(c.out, "expected shards of one sweep, run with the same settings"));
    // Results files alone (no settings beside them): rows for one point must agree.
    auto rows = run_cardsim("sweep --merge " + (s / "a" / "results.csv").string() + " " +
                            (s / "c" / "results.csv").string() + " -o " + (s / "m").string());
    REQUIRE(rows.code == 2);
    REQUIRE(contains(rows.out, "point 0 differs from its row at"));
    REQUIRE(!std::filesystem::exists(s / "m/results.csv"));
    // Shards of one grid run with other settings (tokens) merged into rows that read as one sweep.
    write(s / "d.toml", tiny_model(2) + "[axes]\nddr.channels = [1, 2]\n");
    write(s / "e.toml", tiny_model(3) + "[axes]\nddr.channels = [1, 2]\n");
    REQUIRE(run_cardsim("sweep " + (s / "d.toml").string() + " --shard 0/2 -o " + (s / "d").string()).code ==
            0);
    REQUIRE(run_cardsim("sweep " + (s / "e.toml").string() + " --shard 1/2 -o " + (s / "e").string()).code ==
            0);
    auto mixed = run_cardsim("sweep --merge " + (s / "d").string() + " " + (s / "e").string() + " -o " +
                             (s / "m").string());
    INFO(mixed.out);
    REQUIRE(mixed.code == 2);
    REQUIRE(contains(mixed.out, "sweep-settings.txt differs from"));
    REQUIRE(!std::filesystem::exists(s / "m/results.csv"));
    REQUIRE(run_cardsim("sweep --merge " + (s / "absent").string() + " -o " + (s / "m").string()).code == 2);
}

TEST_CASE("an emitted Slurm job array names every shard, and its tasks run to the one-run CSV") {
    ScratchDir s("sweep-slurm");
    write(s / "spec.toml", seven_points());
    const auto one = one_run(s);
    const auto dir = s / "cluster";
    auto e = run_cardsim("sweep " + (s / "spec.toml").string() + " --emit slurm --shards 3 -j 1 -o " +
                         dir.string());
    INFO(e.out);
    REQUIRE(e.code == 0);
    auto script = read(dir / "sweep.slurm");
    REQUIRE(script.rfind("#!/bin/bash\n", 0) == 0);
    REQUIRE(contains(script, "#SBATCH --array=0-2\n"));
    REQUIRE(contains(script, "--shard \"$task/3\""));
    REQUIRE(contains(script, (s / "spec.toml").string()));
    std::string merge;
    for (auto& l : lines(script))
        if (contains(l, "sweep --merge")) merge = l;
    for (int i = 0; i < 3; ++i)
        REQUIRE(contains(merge, (dir / ("shard-" + std::to_string(i))).string()));
    // Run the array's tasks here, as Slurm would, then the merge line of the script.
    for (int i = 0; i < 3; ++i) {
        auto t =
            shell("SLURM_ARRAY_TASK_ID=" + std::to_string(i) + " bash " + (dir / "sweep.slurm").string());
        INFO(t.out);
        REQUIRE(t.code == 0);
    }
    auto m = shell(merge.substr(merge.find_first_not_of("# ")));
    INFO(m.out);
    REQUIRE(m.code == 0);
    REQUIRE(read(dir / "results.csv") == one);
}

TEST_CASE("an emitted GNU parallel file has one command a shard, and parallel runs them to the one-run CSV") {
    ScratchDir s("sweep-parallel");
    write(s / "spec.toml", seven_points());
    const auto one = one_run(s);
    const auto dir = s / "cluster";
    auto e =
        run_cardsim("sweep " + (s / "spec.toml").string() + " --emit parallel --shards 4 -o " + dir.string());
    INFO(e.out);
    REQUIRE(e.code == 0);
    auto cmds = lines(read(dir / "sweep.parallel"));
    REQUIRE(cmds.size() == 4);
    for (int i = 0; i < 4; ++i) {
        REQUIRE(contains(cmds[std::size_t(i)], "--shard " + std::to_string(i) + "/4"));
        REQUIRE(contains(cmds[std::size_t(i)], (dir / ("shard-" + std::to_string(i))).string()));
    }
    std::string merge;
    for (auto& l : lines(e.out))
        if (contains(l, "sweep --merge")) merge = l.substr(l.find_first_not_of("then: "));
    REQUIRE(!merge.empty());
    if (have_parallel()) {
        auto p = shell("parallel --will-cite --jobs 2 :::: " + (dir / "sweep.parallel").string());
        INFO(p.out);
        REQUIRE(p.code == 0);
    } else {
        WARN("GNU parallel is not installed (scripts/setup.sh installs it): running the commands with sh");
        REQUIRE(shell("sh " + (dir / "sweep.parallel").string()).code == 0);
    }
    auto m = shell(merge);
    INFO(m.out);
    REQUIRE(m.code == 0);
    REQUIRE(read(dir / "results.csv") == one);
}
