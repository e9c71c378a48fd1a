// Lowering a graph into a program and a DDR image: operands inside their regions, a program that
// re-reads identically, identical bytes on a second compile, merged matvecs, refusals.

#include "engine/error.hpp"
#include "engine/graph/examples.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/lower/lower.hpp"
#include "engine/program/slots.hpp"
#include "tests/engine/default_card.hpp"
#include "tests/support/graph_weights.hpp"

#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <cstring>
#include <map>

using namespace cardsim;
using namespace cardsim::graph;

using cardsim::test::GraphWeights;

namespace {

/// A target like the default card, storing weights as raw f32 (the packer is the numerics'
/// concern; lowering only places its bytes).
lower::Target test_target() {
    lower::Target t;
    t.channels = 4;
    t.interleave_bytes = 1024;
    t.ddr_bytes = 32ull << 30;
    t.sram_bytes = 28u << 20;
    t.caps = test::default_card();
    t.config_digest = 0x1234;
    t.storage.pack = [](std::span<const float> v, std::size_t, std::size_t) {
        std::vector<std::byte> b(4 * v.size());
        std::memcpy(b.data(), v.data(), b.size());
        return b;
    };
    t.storage.packed_bytes = [](std::size_t rows, std::size_t cols) { return 4 * rows * cols; };
    t.storage.cache_row_bytes = [](std::size_t head_dim) { return 2 * head_dim; };
    return t;
}

} // namespace

TEST_CASE("a lowered decoder step re-reads identically and every operand lies inside its region") {
    auto g = example_decoder(DecoderShape{2, 256, 4, 2, 64, 512, 1000});
    GraphWeights w(g);
    auto c = lower::lower(g, w, test_target(), lower::Options{Bucket{2, 2, 0}, 64});
    auto bytes = program::encode(c.program);
    auto back = program::decode(bytes, "lowered"); // decode checks every operand against the map
    REQUIRE(back == c.program);
    REQUIRE(c.program.image_digest == program::digest(c.image));
    REQUIRE(program::decode_image(program::encode(c.image)) == c.image);
    // Every weight matrix starts on a stripe (one granule on each channel).
    for (auto& chunk : c.image.chunks)
        REQUIRE(chunk.address % 64 == 0);
    // The outputs are copied to io last.
    REQUIRE(c.program.commands.back().opcode == program::Opcode::Copy);
}

TEST_CASE("every DDR placement starts on the card's burst, whatever its size") {
    auto g = example_decoder(DecoderShape{2, 256, 4, 2, 64, 512, 1000});
    GraphWeights w(g);
    auto t = test_target();
    t.line = 128; // a burst of 16 beats of 64 bits (`ddr.timing.burst_length = 16`)
    auto c = lower::lower(g, w, t, lower::Options{Bucket{3, 3, 0}, 37});
    std::vector<std::uint64_t> offsets;
    for (auto& chunk : c.image.chunks)
        offsets.push_back(chunk.address);
    for (auto& p : c.states)
        offsets.push_back(p.offset);
    auto& io = c.io;
    for (auto& p : {io.ids, io.positions, io.seq_starts, io.qtype, io.marker_rows, io.marker_starts})
        offsets.push_back(p.offset);
    for (auto& [v, p] : io.outputs)
        offsets.push_back(p.offset);
    for (auto& r : c.program.regions)
        if (r.space == program::Space::Ddr) offsets.push_back(r.base);
    REQUIRE(offsets.size() > 10);
    for (auto o : offsets) {
        INFO(o);
        REQUIRE(o % 128 == 0);
    }
    // On a 64-byte burst, some of them are not on a 128-byte line: the burst is what they follow.
    auto d = lower::lower(g, w, test_target(), lower::Options{Bucket{3, 3, 0}, 37});
    bool off = false;
    for (auto& [v, p] : d.io.outputs)
        off |= p.offset % 128 != 0;
    for (auto& p : {d.io.ids, d.io.positions, d.io.seq_starts, d.io.qtype})
        off |= p.offset % 128 != 0;
    REQUIRE(off);
}

TEST_CASE("compiling twice gives identical bytes") {
    auto g = example_decoder(DecoderShape{1, 128, 2, 1, 64, 256, 500});
    GraphWeights w(g);
    auto a = lower::lower(g, w, test_target(), lower::Options{Bucket{1, 1, 0}, 32});
    auto b = lower::lower(g, w, test_target(), lower::Options{Bucket{1, 1, 0}, 32});
    REQUIRE(program::encode(a.program) == program::encode(b.program));
    REQUIRE(program::encode(a.image) == program::encode(b.image));
}

namespace {

/// The graph's weights, every read of which fails naming its tensor.
class Unreadable final : public WeightSource {
public:
    explicit Unreadable(const GraphWeights& w) : w_(w) {}
    std::size_t tensor_count() const override { return w_.tensor_count(); }
    const std::string& name(W w) const override { return w_.name(w); }
    std::span<const std::size_t> shape(W w) const override { return w_.shape(w); }
    void read_f32(W w, const View&, std::span<float>) const override {
        throw Error(fmt::format("{}: cannot read it", name(w)));
    }
    void read_f64(W w, const View&, std::span<double>) const override {
        throw Error(fmt::format("{}: cannot read it", name(w)));
    }

private:
    const GraphWeights& w_;
};

/// The message of the cardsim::Error lowering `g` over `w` throws ("" when it throws none).
std::string lowering_error(const Graph& g, const WeightSource& w) {
    try {
        lower::lower(g, w, test_target(), lower::Options{Bucket{1, 1, 0}, 32});
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE(
    "lowering gives the same bytes, and reports the same failed weight, on one host thread as on four") {
    auto g = example_decoder(DecoderShape{2, 128, 2, 1, 64, 256, 500});
    GraphWeights w(g);
    Unreadable bad(w);
    kernels::set_host_threads(1);
    auto one = lower::lower(g, w, test_target(), lower::Options{Bucket{1, 1, 0}, 32});
    auto one_error = lowering_error(g, bad);
    kernels::set_host_threads(4);
    auto four = lower::lower(g, w, test_target(), lower::Options{Bucket{1, 1, 0}, 32});
    auto four_error = lowering_error(g, bad);
    kernels::set_host_threads(0);         // back to CARDSIM_HOST_THREADS or the host's cores
    REQUIRE(one.image.chunks.size() > 4); // enough weights to spread over four threads
    REQUIRE(program::encode(one.image) == program::encode(four.image));
    REQUIRE(program::encode(one.program) == program::encode(four.program));
    // Every weight fails: the error is the first one's in placement order, whichever thread ran it.
    REQUIRE(!one_error.empty());
    REQUIRE(four_error == one_error);
}

TEST_CASE("the projections of one matrix become one matvec writing each value") {
    Graph g;
    auto x = g.val(Rows::Tokens, 64), q = g.val(Rows::Tokens, 32), k = g.val(Rows::Tokens, 32),
         v = g.val(Rows::Tokens, 64);
    g.push(Embed{Weight{0, Whole{false}}, x});
    g.push(Gemm{x, Weight{1, RowRange{0, 32, true}}, std::nullopt, Epilogue::None, q});
    g.push(Gemm{x, Weight{1, RowRange{32, 32, true}}, std::nullopt, Epilogue::None, k});
    g.push(Gemm{x, Weight{1, RowRange{64, 64, true}}, std::nullopt, Epilogue::None, v});
    auto s = g.val(Rows::Tokens, 32);
    g.push(Add{q, k, s});
    auto o = g.val(Rows::Tokens, 64);
    g.push(Add{v, v, o});
    g.logits = s;
    g.next = o;
    GraphWeights w(g);
    w.set(1, {128, 64});
    auto c = lower::lower(g, w, test_target(), lower::Options{Bucket{3, 3, 0}, 16});
    std::size_t matvecs = 0;
    for (auto& cmd : c.program.commands)
        if (cmd.opcode == program::Opcode::Matvec) {
            ++matvecs;
            auto a = program::args<program::slots::Matvec>(cmd);
            REQUIRE(cmd.dims == std::vector<std::uint64_t>{3, 128, 64, 32, 32}); // rows, n, k, n1, n2
            REQUIRE(a.dims.n1 == 32);
            REQUIRE(a.dims.n2 == 32);
            REQUIRE(a.operands.out.region == program::Region::Arena);
            REQUIRE(a.operands.out2.region == program::Region::Arena);
            REQUIRE(a.operands.out3.region == program::Region::Arena);
        }
    REQUIRE(matvecs == 1);
    // The two adds read disjoint values and may run in either order; each waits for the matvec.
    auto& add1 = c.program.commands[2];
    REQUIRE(add1.opcode == program::Opcode::Add);
    REQUIRE(add1.deps == std::vector<std::uint32_t>{1});
}

TEST_CASE("lowering refuses what the card cannot run, listing every refusal") {
    auto g = example_encoder(EncoderShape{1, 64, 2, 96, 100, 3, 128});
    GraphWeights w(g);
    try {
        lower::lower(g, w, test_target(), lower::Options{Bucket{8, 2, 2}, 16});
        FAIL("lowered an encoder on a card without its units");
    } catch (const Error& e) {
        std::string m = e.what();
        REQUIRE(m.find("the card refuses this model:") != std::string::npos);
        REQUIRE(m.find("layer 0, ffn: the engine has no unit for GELU") != std::string::npos);
    }
}

TEST_CASE("an arena larger than the card's SRAM is refused with both sizes") {
    auto g = example_decoder(DecoderShape{1, 128, 2, 1, 64, 256, 500});
    GraphWeights w(g);
    auto t = test_target();
    t.sram_bytes = 1024;
    REQUIRE_THROWS_WITH(lower::lower(g, w, t, lower::Options{Bucket{1, 1, 0}, 8}),
                        Catch::Contains("and the card's SRAM holds 1024 bytes"));
}
