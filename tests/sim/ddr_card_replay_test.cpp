// The requests a compiled decode step sends to the DDR, recorded on the card and replayed by the
// trace player, give the same DDR time and row outcomes: the player drives the same model.

#include "engine/card/card_config.hpp"
#include "engine/graph/examples.hpp"
#include "engine/lower/lower.hpp"
#include "sim/card/card.hpp"
#include "sim/memory/replay.hpp"
#include "sim/memory/trace_format.hpp"
#include "sim/memory/trace_recorder.hpp"
#include "tests/support/graph_weights.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unistd.h>

using namespace cardsim;

namespace {

const graph::DecoderShape shape{2, 128, 4, 2, 32, 256, 300};
const graph::Bucket bucket{2, 2, 0};
constexpr std::size_t steps = 3, max_positions = 16;

/// Runs `steps` decode steps timing-only: writes each step's token ids and positions, runs it.
class Host : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(Host);
    Host(const sc_core::sc_module_name& name, sim::Card& card, const lower::Compiled& compiled)
        : sc_core::sc_module(name), card_(card), compiled_(compiled) {
        SC_THREAD(run);
    }
    bool ok = true;

private:
    void put(const program::Place& p, const std::vector<std::uint32_t>& values) {
        if (p.bytes == 0) return;
        std::vector<std::byte> bytes(p.bytes, std::byte{0});
        std::memcpy(bytes.data(), values.data(), std::min<std::size_t>(bytes.size(), 4 * values.size()));
        card_.write(p.region, p.offset, bytes);
    }
    void run() {
        for (std::uint32_t s = 0; s < steps && ok; ++s) {
            put(compiled_.io.ids, {5 + 11 * s, 77 + 3 * s});
            put(compiled_.io.positions, {s, s});
            ok = card_.run_step(s, {s, s});
        }
    }
    sim::Card& card_;
    const lower::Compiled& compiled_;
};

/// The figures compared: per channel the end of its last data beat, row hits, misses, conflicts,
/// read and write bursts, refreshes.
std::vector<std::uint64_t> figures(const std::vector<sim::memory::ChannelStats>& channels,
                                   std::uint64_t origin) {
    std::vector<std::uint64_t> v;
    for (const auto& c : channels)
        v.insert(v.end(), {c.last_data - origin, c.row_hits, c.row_misses, c.row_conflicts, c.read_bursts,
                           c.write_bursts, c.refreshes});
    return v;
}

} // namespace

TEST_CASE("a compiled decode step's DDR requests replay to the card run's DDR time", "[ddr][replay]") {
    const auto config = card::default_card_config();
    const test::ScratchDir dir("ddr-card-replay");
    const auto path = dir / "requests.trace";
    sim::memory::TraceContext ctx;
    ctx.address_limit = config.ddr.total_bytes();
    const auto recorded = test::in_child([&] {
        auto g = graph::example_decoder(shape);
        test::GraphWeights w(g);
        auto compiled = lower::lower(g, w, lower::target_of(config), lower::Options{bucket, max_positions});
        sc_core::sc_set_time_resolution(1, sc_core::SC_FS); // as sim::simulate runs the card
        sim::Card card("card", config, compiled.program, compiled.image, sim::Mode::TimingOnly,
                       sim::units::UnitSet::standard(config));
        Host host("host", card, compiled);
        sim::memory::TraceRecorder recorder(path, ctx);
        card.ddr().set_observer(&recorder);
        sc_core::sc_start();
        REQUIRE(host.ok);
        card.ddr().flush();
        recorder.close();
        std::vector<sim::memory::ChannelStats> stats;
        for (std::uint32_t c = 0; c < card.ddr().channels(); ++c)
            stats.push_back(card.ddr().channel(c).timing().stats());
        return figures(stats, 0);
    });
    REQUIRE_FALSE(recorded.empty());
    sim::memory::TraceReader reader(path, sim::memory::TraceFormat::Cardsim, ctx);
    sim::memory::ReplayHarness harness(config.ddr);
    // Through the card's user port, as its units reach the channels.
    harness.memory().set_user_port(sim::memory::user_port_lane(config.ddr, config.clock.kernel_mhz));
    const auto r = harness.run(reader, {sim::memory::Pacing::Timed, 0, true});
    CHECK(r.player.requests > 10 * steps);
    CHECK(figures(r.channels, r.player.start) == recorded);
    // At the EMIF's own interface the writes enter without crossing the port: the DDR time differs.
    harness.memory().set_user_port(sim::memory::PortLane{});
    sim::memory::TraceReader again(path, sim::memory::TraceFormat::Cardsim, ctx);
    const auto emif = harness.run(again, {sim::memory::Pacing::Timed, 0, true});
    CHECK(figures(emif.channels, emif.player.start) != recorded);
    std::printf(
        "replayed %llu requests of %zu decode steps: DDR time %llu memory cycles, equal to the card run\n",
        static_cast<unsigned long long>(r.player.requests), steps,
        static_cast<unsigned long long>(r.cycles()));
}
