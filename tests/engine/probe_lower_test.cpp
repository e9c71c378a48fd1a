// Observing values inside a step: a layer's output is the value its last op writes; lowering
// copies each probe to io right after that op and changes nothing else; the host map describes
// the io map exactly and survives the file format.

#include "engine/error.hpp"
#include "engine/graph/examples.hpp"
#include "engine/graph/probe.hpp"
#include "engine/lower/lower.hpp"
#include "engine/program/loaded.hpp"
#include "engine/program/slots.hpp"
#include "tests/engine/default_card.hpp"
#include "tests/support/graph_weights.hpp"

#include <catch2/catch.hpp>

#include <cstring>

using namespace cardsim;
using namespace cardsim::graph;

namespace {

const DecoderShape shape{3, 128, 4, 2, 32, 256, 300};

lower::Target test_target() {
    lower::Target t;
    t.channels = 4;
    t.interleave_bytes = 1024;
    t.ddr_bytes = 32ull << 30;
    t.sram_bytes = 28u << 20;
    t.caps = test::default_card();
    t.storage.pack = [](std::span<const float> v, std::size_t, std::size_t) {
        std::vector<std::byte> b(4 * v.size());
        std::memcpy(b.data(), v.data(), b.size());
        return b;
    };
    t.storage.packed_bytes = [](std::size_t rows, std::size_t cols) { return 4 * rows * cols; };
    t.storage.cache_row_bytes = [](std::size_t head_dim) { return 2 * head_dim; };
    return t;
}

/// A command without its dependencies (they shift when commands are inserted).
program::Command without_deps(program::Command c) {
    c.deps.clear();
    return c;
}

} // namespace

TEST_CASE("a layer's output is the residual stream its last op writes, after that op") {
    auto g = example_decoder(shape);
    REQUIRE(layer_count(g) == 3);
    for (std::size_t l = 0; l < 3; ++l) {
        auto p = layer_output(g, l);
        REQUIRE(p.layer == l);
        REQUIRE(g.sites[p.after].layer == l);
        REQUIRE((p.after + 1 == g.ops.size() || g.sites[p.after + 1].layer != l)); // its last op
        REQUIRE(std::holds_alternative<Add>(g.ops[p.after]));
        REQUIRE(g.names[p.value.id] == g.names[layer_output(g, 0).value.id]); // one stream, in place
        REQUIRE_FALSE(check(g, p));
    }
    REQUIRE_THROWS_WITH(layer_output(g, 3), "the model has no layer 3 (its layers are 0 .. 2)");
    auto p = layer_output(g, 1);
    p.after -= 1; // an op that does not write the stream
    REQUIRE(check(g, p));
    REQUIRE_THAT(*check(g, p), Catch::Contains("which does not write it"));
}

TEST_CASE("observing layers adds one copy after each layer's last command and changes no other command") {
    auto g = example_decoder(shape);
    test::GraphWeights w(g);
    lower::Options plain(Bucket{1, 1, 0}, 8);
    auto a = lower::lower(g, w, test_target(), plain);
    auto observed = plain;
    observed.probes = {layer_output(g, 0), layer_output(g, 2)};
    auto b = lower::lower(g, w, test_target(), observed);
    // The same program with no probes: Options without them lower as they always did.
    REQUIRE(lower::lower(g, w, test_target(), plain).program == a.program);
    REQUIRE(b.program.commands.size() == a.program.commands.size() + 2);
    std::vector<std::size_t> copies; // b's commands not in a
    std::size_t j = 0;
    for (std::size_t i = 0; i < b.program.commands.size(); ++i) {
        if (j < a.program.commands.size() &&
            without_deps(b.program.commands[i]) == without_deps(a.program.commands[j])) {
            ++j;
            continue;
        }
        copies.push_back(i);
    }
    REQUIRE(j == a.program.commands.size()); // every command of a, in order
    REQUIRE(copies.size() == 2);
    for (std::size_t k = 0; k < 2; ++k) {
        auto& c = b.program.commands[copies[k]];
        REQUIRE(c.opcode == program::Opcode::Copy);
        // Right after the command of the probe's op, which it waits for.
        REQUIRE(b.op_of[copies[k] - 1] == observed.probes[k].after);
        REQUIRE(std::find(c.deps.begin(), c.deps.end(), copies[k] - 1) != c.deps.end());
        auto place = b.io.outputs[b.io.graph_outputs() + k].second;
        auto dst = program::args<program::slots::Copy>(c).operands.dst;
        REQUIRE(dst.region == program::Region::Io);
        REQUIRE(dst.offset == place.offset);
        REQUIRE(dst.bytes == 4 * shape.hidden);
    }
    // The next write of the stream waits for the copy of layer 0 (write after read).
    auto src0 = program::args<program::slots::Copy>(b.program.commands[copies[0]]).operands.src;
    bool waited = false;
    for (std::size_t i = copies[0] + 1; i < b.program.commands.size() && !waited; ++i) {
        auto& c = b.program.commands[i];
        for (auto& o : c.operands)
            if (o.region == program::Region::Arena && o.access != program::Access::Read &&
                o.offset < src0.offset + src0.bytes && src0.offset < o.offset + o.bytes) {
                REQUIRE(std::find(c.deps.begin(), c.deps.end(), copies[0]) != c.deps.end());
                waited = true;
            }
    }
    REQUIRE(waited);
    // The graph's outputs keep their io places.
    for (std::size_t k = 0; k < a.io.outputs.size(); ++k)
        REQUIRE(b.io.outputs[k] == a.io.outputs[k]);
}

TEST_CASE("the host map describes the io map, the bucket and the probes, through the file format") {
    auto g = example_decoder(shape);
    test::GraphWeights w(g);
    lower::Options o(Bucket{1, 1, 0}, 8);
    o.probes = {layer_output(g, 1)};
    o.model = "example decoder";
    o.checkpoint_digest = 0xabcdef;
    auto c = lower::lower(g, w, test_target(), o);
    auto back = program::decode(program::encode(c.program), "lowered");
    REQUIRE(back == c.program);
    auto& h = back.host;
    REQUIRE(h.model == "example decoder");
    REQUIRE(h.checkpoint_digest == 0xabcdef);
    REQUIRE(h.max_positions == 8);
    REQUIRE(h.vocab == 1000); // the embedding table's rows
    REQUIRE(h.entry(program::IoRole::Logits)->value == g.logits->id);
    REQUIRE(h.entry(program::IoRole::Next)->width == 1);
    auto m = program::io_map(h);
    REQUIRE(m.ids == c.io.ids);
    REQUIRE(m.positions == c.io.positions);
    REQUIRE(m.seq_starts == c.io.seq_starts);
    REQUIRE(m.marker_starts == c.io.marker_starts);
    REQUIRE(m.outputs == c.io.outputs);
    REQUIRE(m.probes == c.io.probes);
    // The program region holds what the card fetches, not the host map.
    REQUIRE(c.program.region(program::Region::Program)->size == program::card_bytes(c.program));
    REQUIRE(Bucket{h.tokens, h.seqs, h.markers} == o.bucket);
    auto loaded = program::load(back, c.image, "p", "p.ddr");
    REQUIRE(loaded.io.outputs == c.io.outputs);
    REQUIRE(loaded.io.probes == o.probes);
    auto damaged = c.image;
    damaged.chunks[0].bytes[0] ^= std::byte{1};
    REQUIRE_THROWS_WITH(program::load(back, damaged, "p", "p.ddr"),
                        Catch::StartsWith("p.ddr: the image's digest"));
}

TEST_CASE("a probe that does not stand where it says is refused before lowering") {
    auto g = example_decoder(shape);
    test::GraphWeights w(g);
    lower::Options o(Bucket{1, 1, 0}, 8);
    auto p = layer_output(g, 0);
    p.after = 1; // the first norm, which writes another value
    o.probes = {p};
    REQUIRE_THROWS_WITH(lower::lower(g, w, test_target(), o), Catch::StartsWith("cannot observe a value"));
}
