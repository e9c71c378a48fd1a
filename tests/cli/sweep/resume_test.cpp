// Resuming sweeps: points already in results.csv are not run again, after a clean interrupt, a
// crash (SIGKILL) or a record cut short; a directory of another sweep is refused.

#include "tests/cli/sweep/support.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <set>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>

extern char** environ;

using namespace cardsim::test;
using namespace cardsim::test::sweep;

namespace {

/// Starts `cardsim ARGS...` in the background, its output discarded; returns its pid.
pid_t start_cardsim(std::vector<std::string> args) {
    args.insert(args.begin(), CARDSIM_BINARY);
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    REQUIRE(::posix_spawn(&pid, CARDSIM_BINARY, &fa, nullptr, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

/// The complete data records of a results file (lines after the header that end with `\n`).
std::vector<std::string> records(const std::filesystem::path& file) {
    auto text = read(file);
    if (auto last = text.rfind('\n'); last != std::string::npos) text.resize(last + 1);
    auto l = lines(text);
    if (!l.empty()) l.erase(l.begin());
    return l;
}

/// Waits until `file` has at least `n` records (or fails after 30 s).
void wait_for_records(const std::filesystem::path& file, std::size_t n) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (records(file).size() < n) {
        REQUIRE(std::chrono::steady_clock::now() < until);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

/// The point id of a record.
std::string id_of(const std::string& record) {
    return record.substr(0, record.find(','));
}

/// A spec of `n` channel values (1..n), tiny model, 2 tokens.
std::string channels_spec(int n) {
    std::string v;
    for (int i = 1; i <= n; ++i)
        v += (i > 1 ? ", " : "") + std::to_string(i);
    return tiny_model(2) + "[axes]\nddr.channels = [" + v + "]\n";
}

/// Checks that a finished sweep's file has every point 0..n-1 once, in order, and contains every
/// record of `before` unchanged.
void check_complete(const std::filesystem::path& file, int n, const std::vector<std::string>& before) {
    auto after = records(file);
    REQUIRE(after.size() == std::size_t(n));
    for (int i = 0; i < n; ++i)
        REQUIRE(id_of(after[std::size_t(i)]) == std::to_string(i));
    for (auto& r : before)
        REQUIRE(std::find(after.begin(), after.end(), r) != after.end());
}

} // namespace

TEST_CASE("a rerun runs only the points missing from results.csv and keeps the rows there") {
    ScratchDir s("sweep-seeded");
    write(s / "spec.toml", channels_spec(4));
    const std::string spec = (s / "spec.toml").string();
    REQUIRE(run_cardsim("sweep " + spec + " -o " + (s / "whole").string()).code == 0);
    auto whole = read(s / "whole/results.csv");
    auto all = lines(whole);
    REQUIRE(all.size() == 5);
    // Seed: the header, point 2 with a marker in its cycles (a rerun would overwrite it), and a
    // record cut short by a crash.
    auto header = all[0];
    auto cells = csv(all[3] + "\n")[0];
    REQUIRE(cells[0] == "2");
    cells[column(csv(header + "\n")[0], "cycles")] = "123456789";
    std::string seeded_row;
    for (std::size_t i = 0; i < cells.size(); ++i)
        seeded_row += (i ? "," : "") + cells[i];
    write(s / "part/results.csv", header + "\n" + seeded_row + "\n" + "1,hybrid-tiny-see");
    auto r = run_cardsim("sweep " + spec + " -o " + (s / "part").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    REQUIRE(contains(r.out, "1 already in results.csv, 3 run now"));
    auto part = lines(read(s / "part/results.csv"));
    REQUIRE(part.size() == 5);
    REQUIRE(part[0] == all[0]);
    REQUIRE(part[1] == all[1]);
    REQUIRE(part[2] == all[2]);
    REQUIRE(part[3] == seeded_row); // not run again
    REQUIRE(part[4] == all[4]);
    // A third run has nothing left to do.
    auto again = run_cardsim("sweep " + spec + " -o " + (s / "part").string());
    REQUIRE(contains(again.out, "4 already in results.csv, 0 run now"));
    REQUIRE(lines(read(s / "part/results.csv"))[3] == seeded_row);
    // A quote left open in a finished row is no cut-short append: it would swallow the rows after
    // it, so the rerun refuses the file, naming the line, and keeps it as it was.
    const std::string opened = header + "\n" + all[1] + "\n" + "\"" + all[2] + "\n" + all[3] + "\n";
    write(s / "quoted/results.csv", opened);
    auto quoted = run_cardsim("sweep " + spec + " -o " + (s / "quoted").string());
    INFO(quoted.out);
    CHECK(quoted.code == 2);
    CHECK(contains(quoted.out, "results.csv:3: a quoted cell is not closed"));
    CHECK(read(s / "quoted/results.csv") == opened);
}

TEST_CASE("a sweep killed with SIGKILL mid-run resumes without running its finished points again") {
    ScratchDir s("sweep-killed");
    constexpr int n = 24;
    write(s / "spec.toml", channels_spec(n));
    const auto out = s / "out", file = out / "results.csv";
    pid_t pid = start_cardsim({"sweep", (s / "spec.toml").string(), "-j", "1", "-o", out.string()});
    wait_for_records(file, 3);
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    auto before = records(file);
    REQUIRE(before.size() >= 3);
    INFO(before.size() << " points done before the kill");
    REQUIRE(before.size() < std::size_t(n)); // the test needs the kill to land mid-sweep
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -j 2 -o " + out.string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    REQUIRE(contains(r.out, std::to_string(before.size()) + " already in results.csv, " +
                                std::to_string(n - int(before.size())) + " run now"));
    check_complete(file, n, before);
}

TEST_CASE("an interrupted sweep (SIGTERM) exits 130 with its rows in point order and resumes") {
    ScratchDir s("sweep-term");
    constexpr int n = 24;
    write(s / "spec.toml", channels_spec(n));
    const auto out = s / "out", file = out / "results.csv";
    pid_t pid = start_cardsim({"sweep", (s / "spec.toml").string(), "-j", "2", "-o", out.string()});
    wait_for_records(file, 3);
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 130);
    auto before = records(file);
    REQUIRE(before.size() < std::size_t(n));
    for (std::size_t i = 1; i < before.size(); ++i)
        REQUIRE(std::stoi(id_of(before[i - 1])) < std::stoi(id_of(before[i])));
    REQUIRE(!std::filesystem::exists(out / ".work"));
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + out.string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    REQUIRE(contains(r.out, std::to_string(before.size()) + " already in results.csv"));
    check_complete(file, n, before);
}

TEST_CASE("a sweep whose results cannot be written stops its points, leaves whole records and resumes") {
    ScratchDir s("sweep-full-disk");
    const auto m = (s / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 1 -o " + m).code == 0);
    constexpr int n = 16;
    std::string v;
    for (int i = 1; i <= n; ++i)
        v += (i > 1 ? ", " : "") + std::to_string(i);
    write(s / "spec.toml", "tokens = 2\nmodel = \"" + m + "\"\n[axes]\nddr.channels = [" + v + "]\n");
    const auto out = s / "out", file = out / "results.csv";
    // A file size limit of 4 KiB stands for a full disk: results.csv (about 500 bytes a row) meets it
    // after a few points, every other file stays below it. SIGXFSZ ignored: the write fails instead.
    auto r = shell("bash -c \"trap '' XFSZ; ulimit -f 4; exec " + std::string(CARDSIM_BINARY) + " sweep " +
                   (s / "spec.toml").string() + " -j 2 -o " + out.string() + "\"");
    INFO(r.out);
    REQUIRE(r.code == 2);
    REQUIRE(contains(r.out, "cannot append to `" + file.string() + "`: File too large"));
    // The running points went with it, and so did the work folder.
    REQUIRE(!std::filesystem::exists(out / ".work"));
    CHECK(processes_naming(out.string()).empty());
    // Only whole records: the failed append was cut back.
    const auto text = read(file);
    REQUIRE(!text.empty());
    REQUIRE(text.back() == '\n');
    const auto rows = csv(text);
    for (auto& row : rows)
        REQUIRE(row.size() == rows[0].size());
    auto before = records(file);
    REQUIRE(!before.empty());
    REQUIRE(before.size() < std::size_t(n));
    auto again = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + out.string());
    INFO(again.out);
    REQUIRE(again.code == 0);
    check_complete(file, n, before);
}

TEST_CASE("a resume refuses a directory holding another sweep's results") {
    ScratchDir s("sweep-other");
    write(s / "spec.toml", channels_spec(2));
    const std::string out = (s / "out").string();
    REQUIRE(run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + out).code == 0);
    // Other tokens: the rows would not be comparable.
    write(s / "tokens.toml", tiny_model(5) + "[axes]\nddr.channels = [1, 2]\n");
    auto t = run_cardsim("sweep " + (s / "tokens.toml").string() + " -o " + out);
    REQUIRE(t.code == 2);
    REQUIRE(contains(t.out, "sweep-settings.txt:"));
    REQUIRE(contains(t.out, "tokens=2"));
    REQUIRE(contains(t.out, "tokens=5"));
    // Other values at the same point numbers.
    write(s / "values.toml", tiny_model(2) + "[axes]\nddr.channels = [3, 4]\n");
    auto v = run_cardsim("sweep " + (s / "values.toml").string() + " -o " + out);
    REQUIRE(v.code == 2);
    REQUIRE(contains(v.out,
                     "results.csv:2: point 0 has ddr.channels=1 but this spec's point 0 has ddr.channels=3"));
    // Other axes.
    write(s / "axes.toml", tiny_model(2) + "[axes]\nclock.kernel_mhz = [200, 300]\n");
    auto a = run_cardsim("sweep " + (s / "axes.toml").string() + " -o " + out);
    REQUIRE(a.code == 2);
    REQUIRE(contains(a.out, "results.csv:1: its columns"));
}

TEST_CASE("a resume refuses a model directory regenerated or replaced since its rows were made") {
    ScratchDir s("sweep-model-changed");
    const auto m = (s / "m").string();
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 1 -o " + m).code == 0);
    const std::string out = (s / "out").string();
    for (bool full : {false, true}) {
        const auto dir = out + (full ? "-full" : "");
        write(s / "spec.toml", "tokens = 2\nmodel = \"" + m + "\"\n" + (full ? "full = true\n" : "") +
                                   "[axes]\nddr.channels = [1]\n");
        REQUIRE(run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + dir).code == 0);
        CHECK(run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + dir).code ==
              0); // unchanged: resumes
    }
    // Another seed, the same config: timing-only rows do not depend on the weights, full rows do.
    std::filesystem::remove_all(m);
    REQUIRE(run_cardsim("make-model --arch hybrid --size tiny --seed 2 -o " + m).code == 0);
    write(s / "spec.toml", "tokens = 2\nmodel = \"" + m + "\"\n[axes]\nddr.channels = [1]\n");
    CHECK(run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + out).code == 0);
    write(s / "spec.toml", "tokens = 2\nmodel = \"" + m + "\"\nfull = true\n[axes]\nddr.channels = [1]\n");
    auto full = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + out + "-full");
    CHECK(full.code == 2);
    CHECK(contains(full.out, "sweep-models.txt: a model directory"));
    // Another model under the same path: refused for timing-only rows too.
    std::filesystem::remove_all(m);
    REQUIRE(run_cardsim("make-model --arch dense --size tiny --seed 1 -o " + m).code == 0);
    write(s / "spec.toml", "tokens = 2\nmodel = \"" + m + "\"\n[axes]\nddr.channels = [1]\n");
    auto other = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + out);
    CHECK(other.code == 2);
    CHECK(contains(other.out, "regenerated or replaced"));
}

TEST_CASE("a constraint added to a finished sweep keeps the other points' rows and drops the skipped ones") {
    ScratchDir s("sweep-skip-added");
    write(s / "spec.toml", channels_spec(2));
    const std::string out = (s / "out").string();
    REQUIRE(run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + out).code == 0);
    const auto before = csv(read(s / "out/results.csv"));
    REQUIRE(before.size() == 3); // points 0 and 1: ddr.channels 1 and 2
    write(s / "spec.toml",
          tiny_model(2) + "skip_if = \"ddr.channels == 2\"\n[axes]\nddr.channels = [1, 2]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + out);
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, "1 already in results.csv, 0 run now"));
    const auto after = csv(read(s / "out/results.csv"));
    REQUIRE(after.size() == 2);
    CHECK(after[1] == before[1]); // point 0's row, as it was
}

TEST_CASE("with retry-failed a rerun runs the failed points again, and only those") {
    ScratchDir s("sweep-retry");
    write(s / "spec.toml", tiny_model(2) + "[axes]\nunits.conv.count = [1, 0]\nddr.channels = [1, 2]\n");
    const std::string cmd = "sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string();
    auto first = run_cardsim(cmd);
    REQUIRE(first.code == 1);
    auto rows = records(s / "out/results.csv");
    REQUIRE(contains(run_cardsim(cmd).out, "4 already in results.csv, 0 run now, 2 failed"));
    auto retry = run_cardsim(cmd + " --retry-failed");
    INFO(retry.out);
    REQUIRE(retry.code == 1);
    REQUIRE(contains(retry.out, "2 already in results.csv, 2 run now, 2 failed"));
    REQUIRE(records(s / "out/results.csv") == rows); // the same rows: the failures are deterministic
}
