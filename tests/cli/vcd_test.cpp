// `cardsim run --vcd` on every architecture and beside every other output: it exits 0, prints no
// simulator warning, and writes a VCD whose busy signals are the run's trace records.

#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/vcd_check.hpp"
#include "traces/reader.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using cardsim::test::contains;
using cardsim::test::high_intervals;
using cardsim::test::parse_vcd;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;

namespace {

/// Generates a tiny checkpoint of `arch` in `dir`.
std::string tiny_model(const ScratchDir& dir, const std::string& arch) {
    auto m = (dir / arch).string();
    REQUIRE(run_cardsim("make-model --arch " + arch + " --size tiny --seed 3 -o " + m).code == 0);
    return m;
}

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

/// What a run's output must not hold: SystemC reports of any kind (`Warning: (W713) ...`, `Error:
/// (E115) ...`, `Info: (I...)`) or any other warning.
void check_no_simulator_reports(const std::string& out) {
    static const std::regex report("\\((W|E|I|F)[0-9]+\\)");
    CHECK_FALSE(std::regex_search(out, report));
    CHECK_FALSE(contains(out, "Warning"));
    CHECK_FALSE(contains(out, "warning"));
}

/// Checks `vcd_file` against the trace the same run wrote: a valid dump, a busy wire per unit of
/// the trace high exactly over the union of its records' intervals, an activity count per DDR
/// channel, and the run's end as its last time.
void check_against_trace(const std::filesystem::path& vcd_file, const std::filesystem::path& trace_file) {
    const auto vcd = parse_vcd(slurp(vcd_file));
    const auto t = cardsim::traces::read_trace(trace_file);
    REQUIRE(!t.records.empty());
    auto ps = [&](std::uint64_t cycle) {
        return static_cast<std::uint64_t>(
            std::llround(static_cast<long double>(cycle) * 1e6L / t.header.clock_mhz));
    };
    std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> spans;
    std::uint64_t last = 0;
    for (auto& r : t.records) {
        if (r.end > r.start) spans[r.unit].emplace_back(r.start, r.end);
        last = std::max(last, r.end);
    }
    CHECK(vcd.last_time == ps(last));
    for (auto& r : t.records)
        CHECK(vcd.vars.count("card." + r.unit + ".busy"));
    for (auto& [unit, s] : spans) {
        INFO(unit);
        std::sort(s.begin(), s.end());
        std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
        for (auto [a, b] : s)
            if (!merged.empty() && a <= merged.back().second)
                merged.back().second = std::max(merged.back().second, b);
            else
                merged.emplace_back(a, b);
        for (auto& [a, b] : merged)
            a = ps(a), b = ps(b);
        CHECK(high_intervals(vcd.vars.at("card." + unit + ".busy"), vcd.last_time) == merged);
    }
    REQUIRE(t.header.ddr_channels);
    for (std::uint32_t c = 0; c < *t.header.ddr_channels; ++c) {
        auto path = "card.ddr.channel" + std::to_string(c) + ".active";
        REQUIRE(vcd.vars.count(path));
        std::uint64_t peak = 0;
        for (auto [time, value] : vcd.vars.at(path).changes)
            peak = std::max(peak, value);
        std::size_t using_it = 0;
        for (auto& r : t.records)
            using_it += r.ddr.at(c).read + r.ddr.at(c).written > 0;
        CHECK((peak > 0) == (using_it > 0));
    }
}

/// Runs `cardsim run MODEL OPTIONS --vcd v.vcd --trace t.trace` in a fresh directory of `d`, checks
/// it ends well and quietly, the VCD against the trace, and that the directory holds the VCD, the
/// trace and `expected_others` only.
void run_and_check(const ScratchDir& d, const std::string& tag, const std::string& model,
                   const std::string& options, std::set<std::string> expected_others = {}) {
    const auto dir = d / tag;
    std::filesystem::create_directories(dir);
    auto r = run_cardsim("run " + model + " " + options + " --vcd " + (dir / "v.vcd").string() + " --trace " +
                         (dir / "t.trace").string());
    INFO(tag << ": " << r.out);
    REQUIRE(r.code == 0);
    check_no_simulator_reports(r.out);
    check_against_trace(dir / "v.vcd", dir / "t.trace");
    expected_others.insert({"v.vcd", "t.trace"});
    std::set<std::string> files;
    for (auto& e : std::filesystem::directory_iterator(dir))
        files.insert(e.path().filename().string());
    CHECK(files == expected_others);
}

} // namespace

TEST_CASE("run --vcd on a dense decoder beside every other output, several sequences and timing-only") {
    const ScratchDir d("vcd-dense");
    const auto m = tiny_model(d, "dense");
    const auto dir = (d / "all").string();
    run_and_check(d, "all", m,
                  "--tokens 3 --seqs 2 --perfetto " + dir + "/p.json --csv " + dir + "/c.csv --report " +
                      dir + "/r.html",
                  {"p.json", "c.csv", "r.html"});
    run_and_check(d, "prefill", m, "--timing-only --prompt-len 16 --chunk 4 --tokens 2");
    run_and_check(d, "timing", m, "--timing-only --tokens 4");
}

TEST_CASE("run --vcd on a hybrid decoder with several sequences (the case of two writers at once)") {
    const ScratchDir d("vcd-hybrid");
    const auto m = tiny_model(d, "hybrid");
    const auto dir = (d / "seqs").string();
    run_and_check(d, "seqs", m, "--tokens 3 --seqs 2 --perfetto " + dir + "/p.json --csv " + dir + "/c.csv",
                  {"p.json", "c.csv"});
    run_and_check(d, "prefill", m, "--timing-only --prompt-len 16 --chunk 8");
    // A VCD alone is the VCD written beside a trace: the other outputs change nothing in it.
    auto alone = run_cardsim("run " + m + " --tokens 3 --seqs 2 --vcd " + (d / "alone.vcd").string());
    INFO(alone.out);
    REQUIRE(alone.code == 0);
    check_no_simulator_reports(alone.out);
    CHECK(slurp(d / "alone.vcd") == slurp(d / "seqs" / "v.vcd"));
}

TEST_CASE("run --vcd on an encoder, with its report") {
    const ScratchDir d("vcd-encoder");
    const auto m = tiny_model(d, "encoder");
    const auto config = std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml";
    const auto dir = (d / "enc").string();
    run_and_check(d, "enc", m, "--config " + config + " --report " + dir + "/r.html", {"r.html"});
    run_and_check(d, "timing", m, "--config " + config + " --timing-only");
}

TEST_CASE("run --vcd into a directory that does not exist fails naming it and leaves no file") {
    const ScratchDir d("vcd-missing");
    const auto m = tiny_model(d, "dense");
    auto r = run_cardsim("run " + m + " --tokens 1 --vcd " + (d / "missing" / "v.vcd").string());
    INFO(r.out);
    CHECK(r.code != 0);
    CHECK(contains(r.out, "missing/v.vcd"));
    check_no_simulator_reports(r.out);
    CHECK(d.files() == std::vector<std::string>{"dense"});
}
