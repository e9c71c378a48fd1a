// The channels' user port (ddr.port_bits at the kernel clock, sim/memory/port_lane.hpp): as fast as
// the DRAM on the default card, so it moves no read; slower, it bounds a channel's bandwidth at its
// own rate; and its closed form over a stream's periods equals the burst-by-burst answer.

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_controller.hpp"
#include "sim/memory/channel_timing.hpp"
#include "sim/memory/port_lane.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

using namespace cardsim::sim::memory;
using cardsim::card::DdrConfig;

cardsim::card::CardConfig card(std::initializer_list<const char*> sets = {}) {
    std::vector<cardsim::card::Override> o;
    for (auto s : sets)
        o.push_back(cardsim::card::parse_override(s));
    return cardsim::card::load_card_config({}, o);
}

PortLane lane_of(const cardsim::card::CardConfig& c) {
    return user_port_lane(c.ddr, c.clock.kernel_mhz);
}

/// A mixed read sequence: streams, row conflicts and random lines, at times that overlap.
struct Read {
    std::uint64_t address, length;
    Cycle arrival;
};
std::vector<Read> reads() {
    std::vector<Read> r;
    std::uint64_t x = 12345;
    Cycle t = 0;
    for (int i = 0; i < 400; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const std::uint64_t kind = x >> 62;
        const std::uint64_t length = kind == 0 ? 64 : kind == 1 ? 4096 : kind == 2 ? 64 * 1024 : 512;
        const std::uint64_t address = ((x >> 20) % ((1ull << 30) / length)) * length;
        r.push_back({address, length, t});
        t += (x >> 40) % 600;
    }
    return r;
}

/// Completions of `reads()` on one channel controller of card `c`, through its port or not.
std::vector<Cycle> completions(const cardsim::card::CardConfig& c, bool port) {
    ChannelController ctl(c.ddr);
    if (port) ctl.set_port(lane_of(c), lane_of(c));
    std::vector<Cycle> done;
    for (const auto& r : reads())
        done.push_back(ctl.access(Direction::Read, r.address, r.length, r.arrival));
    return done;
}

} // namespace

TEST_CASE("the default card's port is exactly as fast as a channel: a burst a kernel cycle", "[ddr][port]") {
    const auto c = card();
    CHECK(c.ddr.port_bits == 512);
    const PortLane lane = lane_of(c);
    CHECK(lane.step() == static_cast<double>(c.ddr.timing.burst_length / 2)); // 4 memory cycles
}

TEST_CASE("a port as fast as the dram moves no read, under either scheduler", "[ddr][port]") {
    for (const char* scheduler : {"ddr.controller.scheduler=frfcfs", "ddr.controller.scheduler=fcfs"}) {
        INFO(scheduler);
        for (const char* clock : {"clock.kernel_mhz=300", "clock.kernel_mhz=331", "clock.kernel_mhz=600"}) {
            INFO(clock);
            const auto c = card({scheduler, clock});
            CHECK(completions(c, true) == completions(c, false));
        }
    }
}

TEST_CASE("a slower port bounds a read stream at its own rate", "[ddr][port]") {
    for (double mhz : {150.0, 100.0, 37.5}) {
        INFO(mhz << " MHz");
        const auto c = card({"clock.kernel_mhz=300"});
        ChannelController ctl(c.ddr);
        const PortLane lane = user_port_lane(c.ddr, mhz);
        ctl.set_port(lane, lane);
        constexpr std::uint64_t bytes = 1 << 20, bursts = bytes / 64;
        const Cycle done = ctl.access(Direction::Read, 0, bytes, 0);
        // The port moves 64 B a kernel cycle: no faster than bursts x step; and it starts with the
        // first burst's data, so no later than an unhindered DRAM's first burst plus that.
        const double step = c.ddr.clock_mhz() / mhz;
        const auto& t = c.ddr.timing;
        CHECK(static_cast<double>(done) >= static_cast<double>(bursts) * step);
        const Cycle first_data = t.trcd + t.cl + t.burst_length / 2;
        CHECK(static_cast<double>(done) <= std::ceil(first_data + static_cast<double>(bursts) * step + step));
        CHECK(ctl.stats().read_bursts == bursts);
    }
}

TEST_CASE("a port's closed form over a stream's periods equals burst by burst", "[ddr][port]") {
    // Steps that are whole cycles and steps that are not (4.8 at 250 MHz, 4.36... at 275).
    for (double mhz : {300.0, 311.0, 275.0, 250.0, 225.0, 200.0, 150.0, 97.0}) {
        INFO(mhz << " MHz");
        const auto c = card();
        const PortLane lane = user_port_lane(c.ddr, mhz);
        ChannelTiming fast(c.ddr), slow(c.ddr);
        slow.set_fast_path(false);
        fast.set_port(lane, PortLane{});
        slow.set_port(lane, PortLane{});
        Cycle t = 0;
        for (std::uint64_t length : {64ull << 20, 4096ull, 1ull << 20, 192ull, 8ull << 20}) {
            const Cycle a = fast.access(Direction::Read, 1ull << 24, length, t);
            const Cycle b = slow.access(Direction::Read, 1ull << 24, length, t);
            REQUIRE(a == b);
            t += (a - t) / 2; // the next arrives while the port still drains
        }
    }
}

TEST_CASE("a lane's periods in closed form equal passing their bursts one by one", "[ddr][port]") {
    for (double step : {4.0, 3.5, 6.0, 8.25, 13.0, 4.8, 1200.0 / 275.0, 1200.0 / 225.0}) {
        for (Cycle delta : {Cycle{16}, Cycle{24}, Cycle{50}}) {
            INFO("step " << step << ", delta " << delta);
            PortLane a(step, 4), b(step, 4);
            const std::vector<Cycle> ends{100, 104, 110, 112};
            for (Cycle e : ends) {
                a.pass(e);
                b.pass(e);
            }
            Cycle last = 0;
            for (Cycle k = 1; k <= 37; ++k)
                for (Cycle e : ends)
                    last = b.pass(e + k * delta);
            CHECK(a.pass_periods(ends, delta, 37) == last);
        }
    }
}

TEST_CASE("a write crosses the port a beat a kernel cycle before the controller has it", "[ddr][port]") {
    for (const char* scheduler : {"ddr.controller.scheduler=frfcfs", "ddr.controller.scheduler=fcfs"}) {
        // Whole-cycle steps (4, 16) and steps that are not (4.8, 4.36...): a write's bursts cross a
        // step apart, not a rounded cycle apart.
        for (double mhz : {300.0, 275.0, 250.0, 75.0}) {
            INFO(scheduler << ", " << mhz << " MHz");
            const auto c = card({scheduler});
            ChannelController ctl(c.ddr);
            const PortLane lane = user_port_lane(c.ddr, mhz);
            ctl.set_port(lane, lane);
            const Cycle arrival = 1000;
            StallSplit split;
            const Cycle done = ctl.access(Direction::Write, 0, 2048, arrival, &split);
            // Posted: accepted once its 32 bursts have crossed, and that is data time, not queueing.
            CHECK(done == arrival + lane.cycles(32));
            CHECK(std::abs(static_cast<double>(done - arrival) - 32 * user_port_lane(c.ddr, mhz).step()) <
                  1.0);
            CHECK(split.data == done - arrival);
            CHECK(split.queueing == 0);
        }
    }
}

TEST_CASE("a slow port paces a long write: no burst reaches the dram before its data crossed",
          "[ddr][port]") {
    for (const char* scheduler : {"ddr.controller.scheduler=frfcfs", "ddr.controller.scheduler=fcfs"}) {
        for (double mhz : {150.0, 250.0}) {
            INFO(scheduler << ", " << mhz << " MHz");
            const auto c = card({scheduler});
            ChannelController ctl(c.ddr);
            const PortLane lane = user_port_lane(c.ddr, mhz);
            ctl.set_port(lane, lane);
            constexpr std::uint64_t bytes = 1 << 20, bursts = bytes / 64;
            StallSplit split;
            const Cycle accepted = ctl.access(Direction::Write, 0, bytes, 0, &split);
            const Cycle last_beat = ctl.flush();
            // Its time is mostly its data crossing the port, not bank preparation (the refreshes
            // that stall the stream when they fall are refresh time).
            CHECK(split.total() == accepted);
            CHECK(static_cast<double>(split.data) >= 0.9 * static_cast<double>(split.total()));
            CHECK(static_cast<double>(split.bank) <= 0.01 * static_cast<double>(split.total()));
            // Every burst's data crosses before its WRITE: the last is written at least CWL and
            // its own beats after all of them crossed.
            CHECK(accepted >= lane.cycles(bursts));
            CHECK(last_beat >= lane.cycles(bursts) + c.ddr.timing.cwl + c.ddr.timing.burst_length / 2);
            CHECK(ctl.stats().write_bursts == bursts);
        }
    }
}

TEST_CASE("a read behind a write waits for its data to cross, blocking or queued, under either scheduler",
          "[ddr][port]") {
    for (const char* scheduler : {"ddr.controller.scheduler=frfcfs", "ddr.controller.scheduler=fcfs"}) {
        INFO(scheduler);
        const auto c = card({scheduler});
        const PortLane lane = user_port_lane(c.ddr, 75.0); // 16 memory cycles a burst
        ChannelController blocking(c.ddr), queued(c.ddr);
        blocking.set_port(lane, lane);
        queued.set_port(lane, lane);
        // A 1 KiB write at cycle 0 crosses until cycle 256; a read of another bank arrives at 10.
        const std::uint64_t read_at = 1ull << 24;
        blocking.access(Direction::Write, 0, 1024, 0);
        StallSplit blocking_split;
        const Cycle read_done = blocking.access(Direction::Read, read_at, 64, 10, &blocking_split);
        queued.submit(Direction::Write, 0, 1024, 0, 1);
        queued.submit(Direction::Read, read_at, 64, 10, 2);
        queued.flush();
        Cycle queued_read = 0;
        StallSplit queued_split;
        while (queued.earliest_finished() != ChannelController::never) {
            const auto done = queued.take_finished();
            if (done.tag == 2) {
                queued_read = done.done;
                queued_split = done.split;
            }
        }
        CHECK(read_done == queued_read);
        // The wait behind the write's data is queueing on both paths.
        CHECK(blocking_split.queueing >= lane.cycles(16) - 10);
        CHECK(queued_split.queueing == blocking_split.queueing);
        CHECK(queued_split.total() == blocking_split.total());
        CHECK(read_done >= lane.cycles(16) + c.ddr.timing.cl + c.ddr.timing.burst_length / 2);
    }
}

TEST_CASE("a write never crosses the port faster than a step, however its arrival falls against the last "
          "crossing",
          "[ddr][port]") {
    for (const char* scheduler : {"ddr.controller.scheduler=frfcfs", "ddr.controller.scheduler=fcfs"}) {
        for (double mhz : {275.0, 225.0}) {
            INFO(scheduler << ", " << mhz << " MHz");
            const auto c = card({scheduler});
            const PortLane lane = user_port_lane(c.ddr, mhz);
            ChannelController ctl(c.ddr);
            ctl.set_port(lane, lane);
            // Each write arrives at the cycle the one before it was reported done (its crossing
            // rounded up): it still takes a whole step to cross.
            Cycle at = 6;
            for (int i = 0; i < 20; ++i) {
                const Cycle done = ctl.access(Direction::Write, 64 * static_cast<std::uint64_t>(i), 64, at);
                CHECK(static_cast<double>(done - at) >= lane.step());
                at = done;
            }
        }
    }
}
