// `cardsim run` on a compiled program and with layer checks, as a user runs them: a program runs
// without its checkpoint to the same tokens and the same trace as the direct run; given the
// checkpoint it is checked bit for bit; a damaged image, another checkpoint, another card config or
// an old program file is refused naming the file; `--check-layers` reads every layer back.

#include "tests/support/cli_fixtures.hpp"
#include "tests/support/run_cardsim.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using cardsim::test::contains;
using cardsim::test::make_model;
using cardsim::test::run_cardsim;
using cardsim::test::ScratchDir;
using cardsim::test::slurp;

namespace {

void spit(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary);
    out << bytes;
}

/// The line of `out` that starts with `key`.
std::string line_of(const std::string& out, const std::string& key) {
    auto at = out.find("\n" + key);
    if (at == std::string::npos) return {};
    auto end = out.find('\n', at + 1);
    return out.substr(at + 1, end - at - 1);
}

} // namespace

TEST_CASE("a compiled program runs without its checkpoint to the tokens and the trace of the direct run") {
    const ScratchDir d("program-run-same");
    auto m = make_model(d, "hybrid");
    auto prog = (d / "p.cardsim").string();
    // The direct run of a 4-token prompt and 3 tokens sizes its caches for its 6 steps.
    REQUIRE(run_cardsim("compile " + m + " --max-positions 6 -o " + prog).code == 0);
    auto direct =
        run_cardsim("run " + m + " --tokens 3 --no-reference --trace " + (d / "direct.trace").string());
    INFO(direct.out);
    REQUIRE(direct.code == 0);
    auto alone = run_cardsim("run " + prog + " --tokens 3 --trace " + (d / "program.trace").string());
    INFO(alone.out);
    REQUIRE(alone.code == 0);
    REQUIRE_FALSE(line_of(direct.out, "generated: ").empty());
    REQUIRE(line_of(alone.out, "generated: ") == line_of(direct.out, "generated: "));
    REQUIRE(line_of(alone.out, "card: ") == line_of(direct.out, "card: "));
    // The same header and records; the `run.*` meta lines record each run's own facts (what was
    // checked, the program file), so they differ where the runs do, and only there.
    auto run_meta = [](const std::string& trace, const std::string& key) {
        std::string kept, value;
        std::istringstream in(trace);
        for (std::string l; std::getline(in, l);) {
            if (l.rfind("meta run.", 0) != 0)
                kept += l + "\n";
            else if (l.rfind("meta " + key + "=", 0) == 0)
                value = l;
        }
        return std::pair{kept, value};
    };
    const auto program_trace = slurp(d / "program.trace"), direct_trace = slurp(d / "direct.trace");
    REQUIRE(run_meta(program_trace, "").first == run_meta(direct_trace, "").first);
    for (auto key : {"run.model", "run.card"}) {
        INFO(key);
        REQUIRE_FALSE(run_meta(direct_trace, key).second.empty());
        REQUIRE(run_meta(program_trace, key).second == run_meta(direct_trace, key).second);
    }
    REQUIRE(contains(run_meta(direct_trace, "run.summary").second, "\"bit_exact\":true"));
    REQUIRE(contains(run_meta(program_trace, "run.summary").second, "\"bit_exact\":null"));
    REQUIRE(contains(alone.out, "model: hybrid decoder (qwen3_5)\nprogram: " + prog));
    REQUIRE(
        contains(alone.out, "bit-exact: not checked (a program alone has no checkpoint: pass --model DIR"));
    REQUIRE_FALSE(contains(alone.out, "accuracy vs f64"));
    auto machine = run_cardsim("run --program " + prog + " --tokens 3 --machine");
    REQUIRE(contains(machine.out, "bit_exact=unchecked\n"));
    // With the checkpoint beside it: checked bit for bit and against the f64 reference.
    auto checked = run_cardsim("run " + prog + " --model " + m + " --tokens 3");
    INFO(checked.out);
    REQUIRE(checked.code == 0);
    REQUIRE(contains(checked.out, "bit-exact: yes"));
    REQUIRE(contains(checked.out, "accuracy vs f64 reference over 3 steps"));
    REQUIRE(line_of(checked.out, "generated: ") == line_of(direct.out, "generated: "));
    // The argument order does not matter: the directory is the checkpoint, the file the program.
    REQUIRE(run_cardsim("run " + m + " --program " + prog + " --tokens 3 --no-reference").code == 0);
}

TEST_CASE("an encoder program runs with a prompt its bucket holds and refuses one it does not") {
    const ScratchDir d("program-run-encoder");
    auto m = make_model(d, "encoder");
    auto config = std::string(CARDSIM_SOURCE_DIR) + "/configs/encoder.toml";
    auto prog = (d / "e.cardsim").string();
    REQUIRE(
        run_cardsim("compile " + m + " --config " + config + " --bucket tokens=8,seqs=1,markers=2 -o " + prog)
            .code == 0);
    auto r =
        run_cardsim("run " + prog + " --model " + m + " --config " + config + " --prompt 1,2,3,4,5,6,7,8");
    INFO(r.out);
    REQUIRE(r.code == 0);
    REQUIRE(contains(r.out, "bit-exact: yes"));
    auto none = run_cardsim("run " + prog + " --config " + config);
    REQUIRE(none.code == 2);
    REQUIRE(contains(none.out, "the program runs 8 tokens at once: pass --prompt with 8 ids"));
    auto short_prompt = run_cardsim("run " + prog + " --config " + config + " --prompt 1,2,3");
    REQUIRE(short_prompt.code == 2);
    REQUIRE(contains(short_prompt.out, "the program's bucket holds 8 tokens, 1 sequences and 2 markers"));
}

TEST_CASE("a damaged image, another checkpoint, another config or a short cache is refused naming the file") {
    const ScratchDir d("program-run-refused");
    auto m = make_model(d, "dense");
    auto prog = (d / "p.cardsim").string();
    REQUIRE(run_cardsim("compile " + m + " --max-positions 8 -o " + prog).code == 0);
    auto image = slurp(prog + ".ddr");
    // A flipped bit in the image's weights: its digest is not the one the program names.
    auto damaged = image;
    damaged[damaged.size() / 2] = char(damaged[damaged.size() / 2] ^ 1);
    spit(prog + ".ddr", damaged);
    auto r = run_cardsim("run " + prog + " --tokens 2");
    REQUIRE(r.code == 2);
    REQUIRE(contains(r.out, prog + ".ddr: the image's digest is "));
    REQUIRE(contains(r.out, "but " + prog + " runs on the image with digest"));
    // Cut short, or a byte set where the file's data area holds zeros: refused naming the file.
    spit(prog + ".ddr", image.substr(0, image.size() - 100));
    auto cut = run_cardsim("run " + prog + " --tokens 2");
    REQUIRE(cut.code == 2);
    REQUIRE(contains(cut.out, prog + ".ddr: chunk "));
    REQUIRE(contains(cut.out, "run past the file's end"));
    auto gap = image;
    gap[65535] = char(1); // the last byte before the data area (64 KiB in), after the chunk table
    spit(prog + ".ddr", gap);
    auto padded = run_cardsim("run " + prog + " --tokens 2");
    REQUIRE(padded.code == 2);
    REQUIRE(contains(padded.out, prog + ".ddr: nonzero bytes between the chunk table's end"));
    spit(prog + ".ddr", image);
    // The image digest in the program's header (bytes 24 .. 31) damaged instead: the checksum.
    auto program = slurp(prog);
    auto bad_header = program;
    bad_header[24] = char(bad_header[24] ^ 0x40);
    spit(d / "h.cardsim", bad_header);
    spit(d / "h.cardsim.ddr", image);
    auto h = run_cardsim("run " + (d / "h.cardsim").string() + " --tokens 2");
    REQUIRE(h.code == 2);
    REQUIRE(contains(h.out, "h.cardsim: checksum: the file ends in checksum")); // the whole file's
    // No image at all.
    spit(d / "n.cardsim", program);
    auto missing = run_cardsim("run " + (d / "n.cardsim").string());
    REQUIRE(missing.code == 2);
    REQUIRE(contains(missing.out, "n.cardsim.ddr is missing"));
    // Another checkpoint of the same architecture and shape: the digest tells them apart.
    auto other = make_model(d, "dense", 3);
    auto o = run_cardsim("run " + prog + " --model " + other + " --tokens 2");
    REQUIRE(o.code == 2);
    REQUIRE(contains(o.out, prog + ": the program was compiled from the checkpoint with digest"));
    REQUIRE(contains(o.out, "it is another checkpoint"));
    // Another knob point than the one it was compiled for.
    auto k = run_cardsim("run " + prog + " --tokens 2 --knob scaling=sub32");
    REQUIRE(k.code == 2);
    REQUIRE(contains(k.out, "the program was compiled for the card config with digest"));
    // ... and compiled for it, it runs.
    REQUIRE(run_cardsim("compile " + m + " --max-positions 8 --knob scaling=sub32 -o " + prog).code == 0);
    REQUIRE(run_cardsim("run " + prog + " --model " + m + " --tokens 2 --knob scaling=sub32").code == 0);
    // More steps than its caches hold.
    auto long_run = run_cardsim("run " + prog + " --tokens 20 --knob scaling=sub32");
    REQUIRE(long_run.code == 2);
    REQUIRE(contains(long_run.out, "the run needs 23 positions"));
    REQUIRE(contains(long_run.out, "compile it with --max-positions 23"));
}

TEST_CASE("a version 1 program file is refused with what to do, and a file that is no program by its magic") {
    const ScratchDir d("program-run-old");
    auto m = make_model(d, "dense");
    auto prog = (d / "p.cardsim").string();
    REQUIRE(run_cardsim("compile " + m + " -o " + prog).code == 0);
    auto bytes = slurp(prog);
    bytes[8] = 1; // the version field
    spit(d / "old.cardsim", bytes);
    auto r = run_cardsim("run " + (d / "old.cardsim").string());
    REQUIRE(r.code == 2);
    REQUIRE(contains(r.out, "old.cardsim: header: format version 1, this build reads version 4"));
    REQUIRE(contains(r.out, "compile the model again"));
    spit(d / "junk.cardsim", std::string(100, 'x')); // longer than a header, with no magic
    auto junk = run_cardsim("run " + (d / "junk.cardsim").string());
    REQUIRE(junk.code == 2);
    REQUIRE(contains(junk.out, "junk.cardsim: header: wrong magic"));
    auto nothing = run_cardsim("run " + (d / "absent").string());
    REQUIRE(nothing.code == 2);
    REQUIRE(contains(nothing.out, "absent: no such checkpoint directory or program file"));
}

TEST_CASE("run --check-layers reads every layer's output back and checks it bit for bit") {
    const ScratchDir d("program-run-layers");
    for (auto [arch, all] : {std::pair{"dense", "0 1"}, std::pair{"hybrid", "0 1 2 3"}}) {
        auto m = make_model(d, arch);
        auto r = run_cardsim("run " + m + " --tokens 3 --no-reference --check-layers all");
        INFO(r.out);
        REQUIRE(r.code == 0);
        REQUIRE(contains(r.out, std::string("layers read back each step: ") + all + "\n"));
        REQUIRE(contains(r.out, "bit-exact: yes (every output and every checked layer's output equals"));
        auto some = run_cardsim("run " + m + " --tokens 2 --no-reference --check-layers 1,1,0 --machine");
        REQUIRE(some.code == 0);
        REQUIRE(contains(some.out, "layers_checked=0,1\n"));
        REQUIRE(contains(some.out, "bit_exact=yes\n"));
        REQUIRE(contains(some.out, "mismatch=\n"));
    }
    auto m = make_model(d, "hybrid", 4);
    auto bad = run_cardsim("run " + m + " --check-layers 9");
    REQUIRE(bad.code == 2);
    REQUIRE(contains(bad.out, "--check-layers: the model has no layer 9 (its layers are 0 .. 3)"));
    auto word = run_cardsim("run " + m + " --check-layers first");
    REQUIRE(word.code == 2);
    REQUIRE(contains(word.out, "--check-layers: `first` is not a layer index"));
    // Compiled into a program, the layers are checked when the checkpoint is given beside it.
    auto prog = (d / "l.cardsim").string();
    REQUIRE(run_cardsim("compile " + m + " --max-positions 8 --check-layers 0,2 -o " + prog).code == 0);
    auto dis = run_cardsim("disasm " + prog);
    REQUIRE(contains(dis.out, "layer 0\n"));
    REQUIRE(contains(dis.out, "layer 2\n"));
    auto checked = run_cardsim("run " + prog + " --model " + m + " --tokens 2 --no-reference");
    INFO(checked.out);
    REQUIRE(checked.code == 0);
    REQUIRE(contains(checked.out, "layers read back each step: 0 2\n"));
    REQUIRE(contains(checked.out, "bit-exact: yes"));
    auto again = run_cardsim("run " + prog + " --check-layers 1");
    REQUIRE(again.code == 2);
    REQUIRE(contains(again.out, "pass --check-layers to cardsim compile"));
}
