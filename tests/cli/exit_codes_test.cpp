// The published exit-code table (docs/exit-codes.md): every row run as written, placeholders
// filled, and its exit code checked; every subcommand has rows for its outcomes.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

using cardsim::test::contains;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;
using cardsim::test::slurp;

namespace {

/// One row of the table: the command as a person types it, the outcome, the exit code.
struct Row {
    std::string command, outcome;
    int code = -1;
};

/// The rows of the command table in docs/exit-codes.md (`| \`cardsim ...\` | outcome | code |`).
std::vector<Row> table_rows() {
    const auto text = slurp(std::string(CARDSIM_SOURCE_DIR) + "/docs/exit-codes.md");
    REQUIRE_FALSE(text.empty());
    std::vector<Row> rows;
    const std::regex row(R"(^\| `(cardsim[^`]*)` \| ([^|]*) \| (\d) \|$)");
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (std::smatch m; std::regex_match(line, m, row))
            rows.push_back({m[1].str(), m[2].str(), std::stoi(m[3].str())});
    return rows;
}

/// `text` with every `$NAME` of `values` replaced (longest names first, so `$TRACE2` is not `$TRACE`).
std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
    for (auto& [name, value] : values)
        for (std::size_t at; (at = text.find(name)) != std::string::npos;)
            text.replace(at, name.size(), value);
    return text;
}

} // namespace

TEST_CASE("every row of the published exit-code table gives its code") {
    const auto rows = table_rows();
    REQUIRE(rows.size() >= 40);
    ScratchDir d("exit-codes");
    const auto dense = make_model(d, "dense"), hybrid = make_model(d, "hybrid"),
               encoder = make_model(d, "encoder"), moe = make_model(d, "hybrid-moe");
    const auto prog = (d / "p.cardsim").string();
    REQUIRE(run_cardsim("compile " + dense + " -o " + prog + " --max-positions 16").code == 0);
    const auto trace = (d / "a.trace").string(), trace2 = (d / "b.trace").string();
    REQUIRE(run_cardsim("run " + dense + " --tokens 2 --trace " + trace).code == 0);
    REQUIRE(run_cardsim("run " + dense + " --tokens 2 --set clock.kernel_mhz=200 --trace " + trace2).code ==
            0);
    const auto requests = (d / "requests.csv").string();
    std::ofstream(requests) << "arrival_s,prompt_tokens,output_tokens\n0,3,2\n0.0001,2,3\n";
    const auto spec = (d / "spec.toml").string();
    std::ofstream(spec) << "name = \"exit\"\ntokens = 2\nmodel = { generate = { arch = \"dense\", size = "
                           "\"tiny\", seed = 1 } }\n[axes]\nddr.channels = [1, 2]\n";
    const auto swept = (d / "swept").string();
    REQUIRE(run_cardsim("sweep " + spec + " -o " + swept).code == 0);
    // A design sweep's two result sets (prefill and decode; serving) on one grid, for `design`.
    const auto design_run = (d / "drun.toml").string(), design_serve = (d / "dserve.toml").string();
    const std::string tiny_dense = "model = { generate = { arch = \"dense\", size = \"tiny\", seed = 1 } }\n";
    std::ofstream(design_run) << "tokens = 2\nprompt_len = 4\nchunk = 4\n"
                              << tiny_dense << "[axes]\nunits.matvec.width = [256, 512]\n";
    std::ofstream(design_serve) << tiny_dense << "[serve]\nrate = 1000.0\ncount = 2\nprompt_len = \"4\"\n"
                                << "output_len = \"2\"\n[axes]\nunits.matvec.width = [256, 512]\n";
    const auto drun = (d / "drun").string(), dserve = (d / "dserve").string();
    REQUIRE(run_cardsim("sweep " + design_run + " -o " + drun).code == 0);
    REQUIRE(run_cardsim("sweep " + design_serve + " -o " + dserve).code == 0);
    // A measured trace (the RTL's cycles beside the model's), where the build has the RTL.
    const auto measured = (d / "measured.trace").string();
    const bool rtl = run_cardsim("run " + dense + " --tokens 2 --rtl matvec --trace " + measured).code == 0;
    int fresh = 0;
    for (auto& row : rows) {
        const auto folder = d / ("dir" + std::to_string(fresh));
        std::filesystem::create_directories(folder);
        const std::vector<std::pair<std::string, std::string>> values{
            {"$REQUESTS", requests},
            {"$ENCODER", encoder},
            {"$HYBRID", hybrid},
            {"$TRACE2", trace2},
            {"$TRACE", trace},
            {"$DENSE", dense},
            {"$PROG", prog},
            {"$SPEC", spec},
            {"$MOE", moe},
            {"$SWEPT", swept},
            {"$DRUN", drun},
            {"$DSERVE", dserve},
            {"$MEASURED", measured},
            {"$NEW", (d / ("new" + std::to_string(fresh))).string()},
            {"$DIR", folder.string()}};
        ++fresh;
        if (!rtl && contains(row.command, "$MEASURED")) continue; // no Verilator in this build
        const auto command = fill(row.command, values);
        const auto before = [&] {
            std::set<std::string> names;
            for (auto& e : std::filesystem::recursive_directory_iterator(folder))
                names.insert(e.path().string());
            return names;
        }();
        auto r = run_cardsim(command.substr(std::string("cardsim").size()) + " < /dev/null");
        INFO(row.command << "  (" << row.outcome << ")\n" << command << "\n" << r.out);
        CHECK(r.code == row.code);
        CHECK_FALSE(contains(r.out, "internal error"));
        if (row.code == 2) { // bad input leaves nothing new in the folder it was pointed at
            std::set<std::string> after;
            for (auto& e : std::filesystem::recursive_directory_iterator(folder))
                after.insert(e.path().string());
            CHECK(after == before);
        }
    }
}

TEST_CASE("the exit-code table covers every subcommand cardsim lists") {
    const auto rows = table_rows();
    auto help = run_cardsim("--help");
    REQUIRE(help.code == 0);
    std::istringstream in(help.out);
    std::size_t listed = 0;
    const std::regex command_line(R"(^  ([a-z-]+) +\S.*$)");
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (!std::regex_match(line, m, command_line)) continue;
        ++listed;
        const std::string name = m[1].str();
        bool ok = false, refused = false;
        for (auto& r : rows)
            if (r.command.rfind("cardsim " + name, 0) == 0) {
                ok = ok || r.code == 0;
                refused = refused || r.code == 2;
            }
        INFO(name);
        CHECK(ok);
        CHECK(refused);
    }
    CHECK(listed >= 15);
}
