// Exporting DDR requests as traces (sim/memory/trace_export): splitting into fixed-size requests
// keeps every byte exactly once, at card addresses and per channel, in every format that carries
// lengths; the address bits are where the card puts them; and the export of a 0.8B-sized decode
// step streams to disk as it is written instead of piling up in memory.

#include "engine/card/card_config.hpp"
#include "engine/graph/examples.hpp"
#include "engine/lower/lower.hpp"
#include "sim/card/simulation.hpp"
#include "sim/memory/channel_interleave.hpp"
#include "sim/memory/trace_export.hpp"
#include "sim/memory/trace_format.hpp"
#include "tests/support/graph_weights.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <utility>
#include <vector>

using namespace cardsim;
namespace mem = cardsim::sim::memory;

namespace {

/// Byte ranges [begin, end).
using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

/// Sorted, with touching ranges joined; fails the test when two overlap (a byte twice).
Ranges joined(Ranges r) {
    std::sort(r.begin(), r.end());
    Ranges out;
    for (const auto& x : r) {
        if (!out.empty()) REQUIRE(x.first >= out.back().second);
        if (!out.empty() && x.first == out.back().second)
            out.back().second = x.second;
        else
            out.push_back(x);
    }
    return out;
}

/// Random requests that do not overlap: unaligned starts, lengths from 1 byte to 3 granules and
/// more, both directions, times not in order.
std::vector<mem::MemRequest> random_requests(std::uint64_t seed, std::size_t count) {
    std::mt19937_64 rng(seed);
    std::vector<mem::MemRequest> out;
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < count; ++i) {
        at += rng() % 5000;
        const auto length = static_cast<std::uint32_t>(1 + rng() % (i % 7 == 0 ? 20000 : 300));
        out.push_back(
            {at, length, rng() % 3 ? mem::Direction::Read : mem::Direction::Write, (rng() % 100000) * 833});
        at += length;
    }
    return out;
}

Ranges ranges_of(const std::vector<mem::MemRequest>& requests) {
    Ranges r;
    for (const auto& q : requests)
        r.emplace_back(q.address, q.address + q.length);
    return r;
}

/// Every request of a trace file.
std::vector<mem::MemRequest> read_all(const std::filesystem::path& path, mem::TraceFormat format,
                                      const mem::TraceContext& ctx) {
    mem::TraceReader reader(path, format, ctx);
    std::vector<mem::MemRequest> out;
    mem::MemRequest r;
    while (reader.next(r))
        out.push_back(r);
    return out;
}

mem::TraceContext context_of(const card::DdrConfig& ddr) {
    mem::TraceContext ctx;
    ctx.memory_mts = ddr.speed_mts;
    ctx.player_mhz = ddr.speed_mts / 2;
    ctx.address_limit = ddr.total_bytes();
    return ctx;
}

} // namespace

TEST_CASE("splitting a request at multiples of the request size covers each of its bytes exactly once",
          "[ddr][export]") {
    const auto requests = random_requests(7, 3000);
    for (std::uint32_t size : {64u, 32u, 100u, 4096u}) {
        for (const auto& q : requests) {
            std::uint64_t next = q.address;
            std::size_t pieces = 0;
            mem::split_request(q, size, [&](const mem::MemRequest& p) {
                REQUIRE(p.address == next); // in order, no gap, no overlap
                REQUIRE(p.length >= 1);
                REQUIRE(p.length <= size);
                REQUIRE((p.address / size) == ((p.address + p.length - 1) / size)); // one request's worth
                if (p.address != q.address) REQUIRE(p.address % size == 0);
                REQUIRE(p.direction == q.direction);
                REQUIRE(p.time_ps == q.time_ps);
                next += p.length;
                ++pieces;
            });
            REQUIRE(next == q.address + q.length);
            REQUIRE(pieces == (q.address + q.length - 1) / size - q.address / size + 1);
        }
    }
}

TEST_CASE("an exported trace holds every requested byte exactly once, at card addresses and per channel",
          "[ddr][export]") {
    const auto ddr = card::default_card_config().ddr;
    const auto ctx = context_of(ddr);
    const test::ScratchDir dir("ddr-export-bytes");
    const auto requests = random_requests(11, 2000);
    const Ranges expected = joined(ranges_of(requests));
    const mem::ChannelInterleave interleave(ddr.channels, ddr.interleave_bytes, ddr.channel_bytes());
    for (auto format : {mem::TraceFormat::Cardsim, mem::TraceFormat::DramSys}) {
        INFO(mem::name(format));
        // All channels: the pieces, at card addresses, are the requests' bytes.
        {
            mem::TraceExporter all(dir / "all", {format, 64, std::nullopt}, ddr, ctx);
            for (const auto& q : requests)
                all.observe(q);
            all.close();
            const auto pieces = read_all(dir / "all", format, ctx);
            CHECK(pieces.size() == all.requests());
            std::uint64_t bytes = 0;
            for (const auto& p : pieces) {
                CHECK(p.length <= 64);
                bytes += p.length;
            }
            CHECK(bytes == all.bytes());
            CHECK(joined(ranges_of(pieces)) == expected);
        }
        // One trace per channel at local addresses: mapped back, together they are the requests' bytes.
        Ranges back;
        for (std::uint32_t c = 0; c < ddr.channels; ++c) {
            const auto path = dir / fmt::format("channel{}", c);
            mem::TraceExporter one(path, {format, 64, c}, ddr, ctx);
            for (const auto& q : requests)
                one.observe(q);
            one.close();
            for (const auto& p : read_all(path, format, ctx)) {
                const std::uint64_t g = interleave.granule();
                REQUIRE(p.address / g == (p.address + p.length - 1) / g); // inside one granule
                const std::uint64_t global = interleave.global(c, p.address);
                REQUIRE(interleave.locate(global).channel == c);
                back.emplace_back(global, global + p.length);
            }
        }
        CHECK(joined(back) == expected);
    }
}

TEST_CASE("the address bits of an exported trace are where the card's interleave and address map put them",
          "[ddr][export]") {
    auto ddr = card::default_card_config().ddr;
    // The default card: 64 B bursts, bank groups above them, 1 KiB interleave over 4 channels.
    CHECK(mem::describe_address_bits(ddr, true) ==
          "row 19-34, bank 17-18, column 12-16, channel 10-11, column 8-9, bankgroup 6-7, byte 0-5");
    CHECK(mem::describe_address_bits(ddr, false) ==
          "row 17-32, bank 15-16, column 8-14, bankgroup 6-7, byte 0-5");
    // What the description says agrees with the interleave: channel bits 10-11.
    const mem::ChannelInterleave interleave(ddr.channels, ddr.interleave_bytes, ddr.channel_bytes());
    for (std::uint64_t a : {0x0ull, 0x400ull, 0x800ull, 0xc00ull, 0x123456c40ull})
        CHECK(interleave.locate(a).channel == ((a >> 10) & 3));
    ddr.channels = 2;
    ddr.interleave_bytes = 4096;
    CHECK(mem::describe_address_bits(ddr, true) ==
          "row 18-33, bank 16-17, column 13-15, channel 12, column 8-11, bankgroup 6-7, byte 0-5");
    ddr.channels = 3;
    CHECK_THAT(mem::describe_address_bits(ddr, true), Catch::StartsWith("channel = (address / 4096) mod 3"));
}

namespace {

/// Forwards to an exporter and, after every request, measures how much of the trace written so
/// far is not yet in the file on disk: what the export holds in memory.
class DiskWatch final : public mem::RequestObserver {
public:
    explicit DiskWatch(mem::TraceExporter& exporter) : exporter_(exporter) {}
    void observe(const mem::MemRequest& request) override {
        exporter_.observe(request);
        const auto& w = exporter_.writer();
        const auto on_disk = std::filesystem::file_size(w.partial_path());
        max_unwritten = std::max(max_unwritten, w.formatted_bytes() - on_disk);
        ++requests;
    }
    std::uint64_t max_unwritten = 0;
    std::uint64_t requests = 0;

private:
    mem::TraceExporter& exporter_;
};

} // namespace

TEST_CASE("the DDR trace of a 0.8B decode step streams to disk as it is written", "[ddr][export]") {
    // A dense decoder of the 0.8B hybrid's dimensions (models/synthetic.cpp: hidden 1024, 24
    // layers, 8 heads of 256, 2 KV heads, MLP 3584, vocabulary 248 320): 645 M weights a step.
    const graph::DecoderShape shape{24, 1024, 8, 2, 256, 3584, 248320};
    const auto config = card::default_card_config();
    auto g = graph::example_decoder(shape);
    test::GraphWeights w(g);
    const auto compiled = lower::lower(g, w, lower::target_of(config), lower::Options{{1, 1, 0}, 1});
    const test::ScratchDir dir("ddr-export-stream");
    const auto path = dir / "step.ddr";
    mem::TraceExporter exporter(path, {mem::TraceFormat::Cardsim, 64, std::nullopt}, config.ddr,
                                context_of(config.ddr));
    DiskWatch watch(exporter);
    sim::RunPlan plan;
    plan.mode = sim::Mode::TimingOnly;
    plan.inputs = [](std::size_t, const sim::StepOutputs*) {
        return sim::StepInputs{{1}, {0}, {}, {}, {}, {}, {}, {}};
    };
    plan.ddr_observer = &watch;
    const auto r = sim::simulate(config, compiled, plan);
    REQUIRE_FALSE(r.fault);
    exporter.close();
    const auto size = std::filesystem::file_size(path);
    std::uint64_t moved = 0;
    for (const auto& c : r.channels)
        moved += c.read_bytes + c.write_bytes;
    std::printf(
        "0.8B decode step: %llu card requests, %llu trace requests of 64 B, %.1f MB of trace; at most "
        "%.2f MB not yet on disk\n",
        static_cast<unsigned long long>(watch.requests), static_cast<unsigned long long>(exporter.requests()),
        double(size) / 1e6, double(watch.max_unwritten) / 1e6);
    CHECK(exporter.bytes() == moved); // every byte the card moved is in the trace
    CHECK(exporter.requests() >= moved / 64);
    CHECK(size > 100'000'000);
    // The writer keeps at most its 1 MiB buffer and a record, plus stdio's buffer, off the disk:
    // a writer that held the trace until close would have all 100+ MB of it unwritten.
    CHECK(watch.max_unwritten < (1u << 20) + (64u << 10));
    CHECK_FALSE(std::filesystem::exists(exporter.writer().partial_path()));
}
