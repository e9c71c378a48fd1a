// Running sweeps: a row a point in results.csv with the figures `cardsim run` reports for that
// point's config, failed points as rows with their error, full runs with accuracy, traces.

#include "tests/cli/sweep/support.hpp"
#include "tests/support/cli_fixtures.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

using namespace cardsim::test;
using namespace cardsim::test::sweep;

TEST_CASE("a timing-only sweep writes one row a point, in point order, with the figures cardsim run gives "
          "that point") {
    ScratchDir s("sweep-rows");
    write(s / "spec.toml", tiny_model(3) + "[axes]\nddr.channels = [1, 2]\nclock.kernel_mhz = [200, 350]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -j 2 -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 5);
    const auto& h = rows[0];
    REQUIRE(h[0] == "point");
    REQUIRE(h[1] == "model");
    REQUIRE(h[2] == "ddr.channels");
    REQUIRE(h[3] == "clock.kernel_mhz");
    REQUIRE(h[4] == "status");
    REQUIRE(h.back() == "error");
    for (auto c : {"cycles", "tokens_per_second", "roofline_fraction", "bandwidth_gbs", "busy_matvec",
                   "busy_dma", "arena_bytes", "sram_fraction"})
        (void)column(h, c);
    const std::vector<std::pair<std::string, std::string>> points{
        {"1", "200"}, {"1", "350"}, {"2", "200"}, {"2", "350"}};
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& row = rows[i + 1];
        INFO("row " << i);
        REQUIRE(row.size() == h.size());
        REQUIRE(row[0] == std::to_string(i));
        REQUIRE(row[2] == points[i].first);
        REQUIRE(row[3] == points[i].second);
        REQUIRE(row[column(h, "status")] == "ok");
        REQUIRE(row[column(h, "error")].empty());
        double busy = std::stod(row[column(h, "busy_matvec")]);
        REQUIRE(busy > 0);
        REQUIRE(busy <= 1);
        REQUIRE(std::stod(row[column(h, "arena_bytes")]) > 0);
    }
    // The row of point 3 says what `cardsim run` says for ddr.channels=2, clock 350 MHz.
    auto direct =
        run_cardsim("run " + (s / "out/models/hybrid-tiny-seed1").string() +
                    " --timing-only --machine --tokens 3 --set ddr.channels=2 --set clock.kernel_mhz=350");
    REQUIRE(direct.code == 0);
    auto kv = machine_values(direct.out);
    for (auto c :
         {"cycles", "tokens_per_second", "roofline_fraction", "bandwidth_gbs", "ddr_bytes", "arena_bytes"})
        REQUIRE(rows[4][column(h, c)] == kv.at(c));
    // More channels move the same bytes in fewer cycles.
    REQUIRE(std::stod(rows[3][column(h, "cycles")]) < std::stod(rows[1][column(h, "cycles")]));
    REQUIRE(rows[1][column(h, "ddr_bytes")] == rows[3][column(h, "ddr_bytes")]);
    REQUIRE(!std::filesystem::exists(s / "out/.work"));
}

TEST_CASE("a sweep whose only point fails exits 1 and says one failed, on resume too") {
    ScratchDir s("sweep-one-fails");
    // Without a conv unit the card refuses the hybrid model: the point's run fails.
    write(s / "spec.toml", tiny_model(2) + "[axes]\nunits.conv.count = [0]\n");
    const auto cmd = "sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string();
    auto r = run_cardsim(cmd);
    INFO(r.out);
    REQUIRE(r.code == 1);
    REQUIRE(contains(r.out, "1 points: 0 already in results.csv, 1 run now, 1 failed"));
    auto again = run_cardsim(cmd);
    INFO(again.out);
    REQUIRE(again.code == 1);
    REQUIRE(contains(again.out, "1 already in results.csv, 0 run now, 1 failed"));
}

TEST_CASE("a refused point and an invalid combination are rows with their error, and the sweep exits 1") {
    ScratchDir s("sweep-fail");
    // Without a conv unit the card refuses the hybrid model; trfc 9000 and trefi 5000 are each
    // valid alone, not together (trefi must exceed trfc).
    write(s / "spec.toml", tiny_model(2) + "[axes]\n"
                                           "units.conv.count = [1, 0]\n"
                                           "ddr.timing.trfc = [420, 9000]\n"
                                           "ddr.timing.trefi = [9360, 5000]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -j 2 -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 1);
    REQUIRE(contains(r.out, "5 failed"));
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 9);
    const auto& h = rows[0];
    const auto status = column(h, "status"), error = column(h, "error"), cycles = column(h, "cycles");
    for (std::size_t i = 1; i < rows.size(); ++i) {
        const auto& row = rows[i];
        INFO(i << ": " << row[error]);
        const bool no_conv = row[2] == "0", bad_refresh = row[3] == "9000" && row[4] == "5000";
        if (bad_refresh) {
            REQUIRE(row[status] == "error");
            REQUIRE(contains(row[error], "ddr.timing.trefi"));
            REQUIRE(contains(row[error], "not more than trfc"));
        } else if (no_conv) {
            REQUIRE(row[status] == "refused"); // the card refuses the model: exit 1, as check gives
            // The refusal names the model, not the directory the sweep ran in.
            REQUIRE(row[error].rfind("hybrid-tiny-seed1: the card refuses this model: | layer 0, mixer:",
                                     0) == 0);
            REQUIRE(contains(row[error], "Conv"));
            REQUIRE(!contains(row[error], (s / "out").string()));
        } else {
            REQUIRE(row[status] == "ok");
            REQUIRE(!row[cycles].empty());
        }
        if (row[status] != "ok") REQUIRE(row[cycles].empty());
    }
}

TEST_CASE("a full sweep checks every point bit for bit and adds its accuracy against the f64 reference") {
    ScratchDir s("sweep-full");
    write(s / "spec.toml",
          tiny_model(3) + "full = true\n[axes]\nnumerics.scaling = [\"sub32\", \"per_block\"]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -j 2 -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 3);
    const auto& h = rows[0];
    for (std::size_t i = 1; i < rows.size(); ++i) {
        REQUIRE(rows[i][column(h, "status")] == "ok");
        REQUIRE(rows[i][column(h, "bit_exact")] == "yes");
        double top1 = std::stod(rows[i][column(h, "top1_agreement")]);
        REQUIRE(top1 >= 0);
        REQUIRE(top1 <= 1);
        REQUIRE(std::stod(rows[i][column(h, "max_abs_error")]) >= 0);
        REQUIRE(std::stod(rows[i][column(h, "kl")]) >= 0);
    }
    // The two scalings are different arithmetic: their logits differ from the reference differently.
    REQUIRE(rows[1][column(h, "max_abs_error")] != rows[2][column(h, "max_abs_error")]);
    // A timing-only sweep has no accuracy columns.
    write(s / "timing.toml", tiny_model(3) + "[axes]\nddr.channels = [1]\n");
    REQUIRE(run_cardsim("sweep " + (s / "timing.toml").string() + " -o " + (s / "t").string()).code == 0);
    auto th = csv(read(s / "t/results.csv"))[0];
    REQUIRE(std::find(th.begin(), th.end(), "kl") == th.end());
}

TEST_CASE("per-point traces (sweep --traces) are written for every point run") {
    ScratchDir s("sweep-traces");
    write(s / "spec.toml", tiny_model(2) + "[axes]\nddr.channels = [1, 2]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " --traces -o " + (s / "out").string());
    REQUIRE(r.code == 0);
    for (auto id : {"0", "1"}) {
        auto t = read(s / "out/traces" / (std::string("point-") + id + ".trace"));
        INFO(id);
        REQUIRE(!t.empty());
    }
    REQUIRE(read(s / "out/traces/point-0.trace") != read(s / "out/traces/point-1.trace"));
}

TEST_CASE("an array of sequence counts is an axis: each point decodes that many sequences a step") {
    ScratchDir s("sweep-seqs");
    write(s / "spec.toml",
          "tokens = 3\nseqs = [1, 4]\nmodel = { generate = { arch = \"hybrid\", size = \"tiny\", seed = 1 } "
          "}\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 3);
    REQUIRE(rows[0][2] == "seqs");
    REQUIRE(rows[1][2] == "1");
    REQUIRE(rows[2][2] == "4");
    const auto cycles = column(rows[0], "cycles"), rate = column(rows[0], "tokens_per_second");
    auto direct = run_cardsim("run " + (s / "out/models/hybrid-tiny-seed1").string() +
                              " --timing-only --machine --tokens 3 --seqs 4");
    REQUIRE(direct.code == 0);
    REQUIRE(rows[2][cycles] == machine_values(direct.out).at("cycles"));
    REQUIRE(std::stod(rows[2][rate]) > std::stod(rows[1][rate])); // a step of 4 rows beats a step of 1
    write(s / "bad.toml", tiny_model() + "[axes]\nseqs = [1, 2]\n");
    auto b = run_cardsim("sweep " + (s / "bad.toml").string() + " --list");
    REQUIRE(b.code == 2);
    REQUIRE(contains(b.out, "`axes.seqs` is not a config key"));
}

TEST_CASE("an array of token counts is an axis: each point runs with its own token count") {
    ScratchDir s("sweep-tokens");
    write(s / "spec.toml",
          "tokens = [2, 6]\nmodel = { generate = { arch = \"hybrid\", size = \"tiny\", seed = 1 } }\n"
          "[axes]\nddr.channels = [2]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 3);
    REQUIRE(rows[0][2] == "tokens");
    REQUIRE(rows[1][2] == "2");
    REQUIRE(rows[2][2] == "6");
    const auto cycles = column(rows[0], "cycles");
    auto direct = run_cardsim("run " + (s / "out/models/hybrid-tiny-seed1").string() +
                              " --timing-only --machine --tokens 6 --set ddr.channels=2");
    REQUIRE(direct.code == 0);
    REQUIRE(rows[2][cycles] == machine_values(direct.out).at("cycles"));
    REQUIRE(std::stod(rows[2][cycles]) > std::stod(rows[1][cycles]));
    // `tokens` is not a config key: it cannot be written under [axes].
    write(s / "bad.toml", tiny_model() + "[axes]\ntokens = [1, 2]\n");
    auto b = run_cardsim("sweep " + (s / "bad.toml").string() + " --list");
    REQUIRE(b.code == 2);
    REQUIRE(contains(b.out, "`axes.tokens` is not a config key"));
}

TEST_CASE("a sweep with a prompt length reports each point's prefill and decode as cardsim run does") {
    ScratchDir s("sweep-prefill");
    write(s / "spec.toml",
          "tokens = 2\nprompt_len = 8\nchunk = 4\n"
          "model = { generate = { arch = \"hybrid\", size = \"tiny\", shapes_only = true } }\n"
          "[axes]\nddr.channels = [1, 2]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -j 2 -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 3);
    const auto& h = rows[0];
    const auto model = (s / "out/models/hybrid-tiny-shapes").string();
    CHECK(!std::filesystem::exists(model + "/model.safetensors"));
    for (std::size_t p = 0; p < 2; ++p) {
        auto& row = rows[1 + p];
        REQUIRE(row[column(h, "status")] == "ok");
        auto direct = machine_values(run_cardsim("run " + model +
                                                 " --timing-only --machine --tokens 2 --prompt-len 8 "
                                                 "--chunk 4 --set ddr.channels=" +
                                                 std::to_string(p + 1))
                                         .out);
        for (auto c : {"prefill_tokens_per_second", "ttft_seconds", "prefill_bound",
                       "decode_tokens_per_second", "decode_bound", "decode_roofline_fraction"})
            CHECK(row[column(h, c)] == direct.at(c));
    }
    // A full sweep cannot time a prompt it has no ids for.
    write(s / "bad.toml", "prompt_len = 8\nfull = true\nmodel = { generate = { arch = \"dense\" } }\n");
    auto bad = run_cardsim("sweep " + (s / "bad.toml").string() + " --list");
    CHECK(bad.code == 2);
    CHECK(contains(bad.out, "needs timing-only points"));
}

TEST_CASE("a point killed at its timeout takes every process it started with it") {
    ScratchDir s("sweep-timeout");
    // A long prefill, which `cardsim run` simulates in a child process of its own.
    write(s / "spec.toml", "tokens = 1\nprompt_len = 20000\nchunk = 1\n"
                           "model = { generate = { arch = \"hybrid\", size = \"tiny\", seed = 1 } }\n"
                           "[axes]\nddr.channels = [1]\n");
    const auto out = (s / "out").string();
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -j 1 --timeout 2 -o " + out);
    INFO(r.out);
    CHECK(r.code == 1); // the point timed out
    const auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 2);
    CHECK(rows[1][column(rows[0], "status")] == "timeout");
    // Nothing the point started outlives it (a signal sent to the whole group needs no time to land;
    // the scan waits a moment for the kernel to reap).
    std::vector<std::string> left;
    for (int i = 0; i < 20; ++i) {
        left = processes_naming((s / "out").string());
        if (left.empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (auto& p : left)
        FAIL_CHECK("still running: " << p);
}

TEST_CASE(
    "a spec's token count goes to its decoders' points, and an encoder's run without it (it generates none)") {
    ScratchDir s("sweep-encoder-tokens");
    write(s / "spec.toml", "tokens = 2\nconfig = \"" + std::string(CARDSIM_SOURCE_DIR) +
                               "/configs/encoder.toml\"\nmodels = [\n"
                               "  { generate = { arch = \"dense\", size = \"tiny\", seed = 1 } },\n"
                               "  { generate = { arch = \"encoder\", size = \"tiny\", seed = 1 } },\n]\n");
    auto r = run_cardsim("sweep " + (s / "spec.toml").string() + " -o " + (s / "out").string());
    INFO(r.out);
    REQUIRE(r.code == 0);
    auto rows = csv(read(s / "out/results.csv"));
    REQUIRE(rows.size() == 3);
    const auto& h = rows[0];
    for (std::size_t i = 1; i < rows.size(); ++i)
        REQUIRE(rows[i][column(h, "status")] == "ok");
    // Each row is what cardsim run gives: the decoder with --tokens 2, the encoder without it.
    const auto config =
        " --timing-only --machine --config " + std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml";
    auto decoder =
        run_cardsim("run " + (s / "out/models/dense-tiny-seed1").string() + config + " --tokens 2");
    auto encoder = run_cardsim("run " + (s / "out/models/encoder-tiny-seed1").string() + config);
    REQUIRE(decoder.code == 0);
    REQUIRE(encoder.code == 0);
    REQUIRE(rows[1][column(h, "cycles")] == machine_values(decoder.out).at("cycles"));
    REQUIRE(rows[2][column(h, "cycles")] == machine_values(encoder.out).at("cycles"));
}
