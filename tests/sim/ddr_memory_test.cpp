// The DDR memory as TLM-2.0 targets: data through the channels, routing by interleave, the
// annotated delay, errors, the sparse store, and recording a run for replay. Each test case runs
// in its own process (SystemC elaborates once).

#include "engine/card/card_config.hpp"
#include "sim/memory/ddr_memory.hpp"
#include "sim/memory/replay.hpp"
#include "sim/memory/stall_extension.hpp"
#include "sim/memory/trace_format.hpp"
#include "sim/memory/trace_recorder.hpp"
#include "tests/support/scratch_dir.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>

namespace {

using namespace cardsim::sim::memory;

/// An initiator that runs `body` in its thread.
class TestInitiator : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<TestInitiator> socket;
    SC_HAS_PROCESS(TestInitiator);
    TestInitiator(const sc_core::sc_module_name& name, std::function<void(TestInitiator&)> body)
        : sc_core::sc_module(name), socket("socket"), body_(std::move(body)) {
        socket.register_invalidate_direct_mem_ptr(this, &TestInitiator::invalidate);
        SC_THREAD(run);
    }
    /// One blocking transaction; returns its response, adds its time to `delay`.
    tlm::tlm_response_status transact(tlm::tlm_command cmd, std::uint64_t address, unsigned char* data,
                                      std::uint32_t length, sc_core::sc_time& delay) {
        tlm::tlm_generic_payload& gp = last;
        gp.set_command(cmd);
        gp.set_address(address);
        gp.set_data_ptr(data);
        gp.set_data_length(length);
        gp.set_streaming_width(length);
        gp.set_byte_enable_ptr(nullptr);
        gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        socket->b_transport(gp, delay);
        return gp.get_response_status();
    }
    tlm::tlm_generic_payload last; ///< the last transaction, as the target left it
    int invalidations = 0;         ///< the target's DMI invalidations so far

private:
    void run() { body_(*this); }
    void invalidate(sc_dt::uint64, sc_dt::uint64) { ++invalidations; }
    std::function<void(TestInitiator&)> body_;
};

cardsim::card::DdrConfig ddr() {
    return cardsim::card::default_card_config().ddr;
}

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<unsigned char>((i * 131 + seed * 7) ^ (i >> 8));
    return v;
}

} // namespace

TEST_CASE("bytes written through TLM read back, spread over the channels by the interleave", "[ddr][tlm]") {
    const auto d = ddr();
    DdrMemory memory("ddr", d);
    const std::uint64_t at = 3 * d.interleave_bytes - 100; // unaligned, crosses channels
    const auto data = pattern(10 * d.interleave_bytes + 37, 1);
    std::vector<unsigned char> back(data.size());
    std::vector<unsigned char> small(40);
    TestInitiator cpu("cpu", [&](TestInitiator& self) {
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        auto w = data;
        REQUIRE(self.transact(tlm::TLM_WRITE_COMMAND, at, w.data(), static_cast<std::uint32_t>(w.size()),
                              delay) == tlm::TLM_OK_RESPONSE);
        REQUIRE(self.transact(tlm::TLM_READ_COMMAND, at, back.data(), static_cast<std::uint32_t>(back.size()),
                              delay) == tlm::TLM_OK_RESPONSE);
        REQUIRE(self.transact(tlm::TLM_READ_COMMAND, at + 500, small.data(), 40, delay) ==
                tlm::TLM_OK_RESPONSE);
    });
    cpu.socket.bind(memory.socket);
    sc_core::sc_start();
    CHECK(back == data);
    CHECK(std::equal(small.begin(), small.end(), data.begin() + 500));
    // Each byte sits at its card address in the memory's store (what a DMI grant hands out).
    auto stored = memory.store().data(at, data.size());
    for (std::uint64_t i = 0; i < data.size(); i += 97)
        CHECK(std::to_integer<unsigned char>(stored[i]) == data[i]);
    // The channels saw the bytes the split says.
    std::vector<ChannelInterleave::Range> ranges(d.channels);
    memory.interleave().split(at, data.size(), ranges);
    for (std::uint32_t c = 0; c < d.channels; ++c)
        CHECK(memory.channel(c).timing().stats().write_bytes == ranges[c].size());
}

TEST_CASE("the annotated delay is the timing core's completion", "[ddr][tlm]") {
    const auto d = ddr();
    DdrMemory memory("ddr", d);
    const MemoryClock clock(d.speed_mts);
    sc_core::sc_time first, second, late;
    TestInitiator cpu("cpu", [&](TestInitiator& self) {
        unsigned char buf[64];
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        self.transact(tlm::TLM_READ_COMMAND, 0, buf, 64, delay);
        first = delay;
        delay = sc_core::SC_ZERO_TIME;
        self.transact(tlm::TLM_READ_COMMAND, 64 * 4, buf, 64, delay); // same row, same bank group
        second = delay;
        wait(sc_core::sc_time(1, sc_core::SC_US));
        delay = sc_core::sc_time(10, sc_core::SC_NS); // local time offset of a decoupled initiator
        self.transact(tlm::TLM_READ_COMMAND, 64 * 8, buf, 64, delay);
        late = delay;
    });
    cpu.socket.bind(memory.socket);
    sc_core::sc_start();
    const auto& t = d.timing;
    const TimeBase tb(clock);
    CHECK(first == tb.time_of(t.trcd + t.cl + t.burst_cycles()));
    CHECK(second == tb.time_of(t.trcd + t.cl + t.burst_cycles() + t.tccd_l)); // queued behind the first
    const Cycle arrival = tb.cycle_at_or_after(sc_core::sc_time(1010, sc_core::SC_NS));
    CHECK(late == tb.time_of(arrival + t.cl + t.burst_cycles()) - sc_core::sc_time(1, sc_core::SC_US));
}

TEST_CASE("a transaction outside the DDR is an address error named with the region", "[ddr][tlm]") {
    const auto d = ddr();
    DdrMemory memory("ddr", d);
    tlm::tlm_response_status past = tlm::TLM_OK_RESPONSE, be = tlm::TLM_OK_RESPONSE;
    std::string message;
    TestInitiator cpu("cpu", [&](TestInitiator& self) {
        unsigned char buf[128] = {};
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        past = self.transact(tlm::TLM_READ_COMMAND, d.total_bytes() - 64, buf, 128, delay);
        message = memory.describe_error(self.last);
        tlm::tlm_generic_payload gp;
        unsigned char enables[4] = {0xff, 0, 0xff, 0};
        gp.set_command(tlm::TLM_WRITE_COMMAND);
        gp.set_address(0);
        gp.set_data_ptr(buf);
        gp.set_data_length(4);
        gp.set_streaming_width(4);
        gp.set_byte_enable_ptr(enables);
        gp.set_byte_enable_length(4);
        self.socket->b_transport(gp, delay);
        be = gp.get_response_status();
    });
    cpu.socket.bind(memory.socket);
    sc_core::sc_start();
    CHECK(past == tlm::TLM_ADDRESS_ERROR_RESPONSE);
    CHECK_THAT(message,
               Catch::Contains("read of 128 bytes at 0x7ffffffc0") && Catch::Contains("[0, 0x800000000)"));
    CHECK(be == tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
}

TEST_CASE("a weight stream is one transaction that ends with its slowest channel", "[ddr][tlm]") {
    const auto d = ddr();
    DdrMemory memory("ddr", d);
    const std::uint64_t bytes = 4 << 20;
    sc_core::sc_time delay;
    TestInitiator cpu("cpu", [&](TestInitiator& self) {
        delay = sc_core::SC_ZERO_TIME;
        self.transact(tlm::TLM_READ_COMMAND, 0, nullptr, static_cast<std::uint32_t>(bytes),
                      delay); // timing only
    });
    cpu.socket.bind(memory.socket);
    sc_core::sc_start();
    Cycle slowest = 0;
    for (std::uint32_t c = 0; c < d.channels; ++c) {
        CHECK(memory.channel(c).timing().stats().read_bytes == bytes / d.channels);
        CHECK(memory.channel(c).timing().stats().read_requests == 1);
        slowest = std::max(slowest, memory.channel(c).timing().stats().last_data);
    }
    CHECK(delay == TimeBase(MemoryClock(d.speed_mts)).time_of(slowest));
    // Over 90 % of the four channels' peak.
    CHECK(static_cast<double>(bytes) / delay.to_seconds() > 0.9 * 4 * d.channel_peak_bytes_per_second());
}

TEST_CASE("the sparse store allocates only the pages written", "[ddr]") {
    const auto d = ddr();
    DdrMemory memory("ddr", d);
    const std::byte one{0x5a};
    memory.load(d.total_bytes() - 1, {&one, 1});
    CHECK(memory.store().pages() == 1);
    std::byte back[2] = {};
    memory.peek(d.total_bytes() - 2, back);
    CHECK(back[0] == std::byte{0});
    CHECK(back[1] == one);
    CHECK_THROWS_WITH(memory.load(d.total_bytes(), {&one, 1}), Catch::Contains("run past the end"));
}

TEST_CASE("a bulk load commits only its own pages and keeps the bytes around it", "[ddr]") {
    const auto d = ddr();
    DdrMemory memory("ddr", d);
    const std::uint64_t page = SparseStore::page_bytes();
    const std::uint64_t at = 5 * page + 100, n = 3 * SparseStore::bulk_bytes + 100; // neither on a page
    const std::byte before{0x5a};
    memory.load(at - 1, {&before, 1}); // the same page as the load's first byte
    std::vector<std::byte> image(n);
    for (std::uint64_t i = 0; i < n; ++i)
        image[i] = std::byte(i * 7 + 1);
    memory.load(at, image);
    std::vector<std::byte> back(n + 2);
    memory.peek(at - 1, back);
    CHECK(back.front() == before);
    CHECK(back.back() == std::byte{0}); // past the load: never written
    for (std::uint64_t i = 0; i < n; ++i)
        REQUIRE(back[i + 1] == std::byte(i * 7 + 1));
    const std::uint64_t first = (at - 1) / page, last = (at + n - 1) / page;
    CHECK(memory.store().pages() <= last - first + 1);
}

TEST_CASE("a lent range reads its owner's bytes until a write copies them in", "[ddr]") {
    const auto d = ddr();
    DdrMemory memory("ddr", d);
    const std::uint64_t at = 3 * SparseStore::page_bytes() + 8, n = 5000;
    auto owner = std::make_shared<std::vector<std::byte>>(n);
    for (std::uint64_t i = 0; i < n; ++i)
        (*owner)[i] = std::byte(i * 5 + 3);
    const std::byte before{0x11};
    memory.load(at - 1, {&before, 1});
    memory.lend(at, *owner, owner);
    REQUIRE(memory.lending());
    std::vector<std::byte> back(n + 2);
    memory.peek(at - 1, back); // across both edges: the store's byte, the lent ones, a zero
    CHECK(back.front() == before);
    CHECK(back.back() == std::byte{0});
    for (std::uint64_t i = 0; i < n; ++i)
        REQUIRE(back[i + 1] == std::byte(i * 5 + 3));
    // A write inside ends the loan: the bytes are copied in and the write is the DDR's alone.
    const std::byte w{0xee};
    memory.load(at + 10, {&w, 1});
    CHECK_FALSE(memory.lending());
    CHECK((*owner)[10] == std::byte(10 * 5 + 3));
    memory.peek(at - 1, back);
    CHECK(back.front() == before);
    for (std::uint64_t i = 0; i < n; ++i)
        REQUIRE(back[i + 1] == (i == 10 ? w : std::byte(i * 5 + 3)));
    // Past the data: refused.
    CHECK_THROWS_WITH(memory.lend(memory.data_size(), *owner, owner), Catch::Contains("run past"));
}

TEST_CASE("a lent range is granted read-only apart from the rest, and a write grant ends the loan",
          "[ddr][tlm]") {
    const auto d = ddr();
    DdrMemory memory("ddr", d, std::uint64_t{1} << 20);
    const std::uint64_t at = 4096, n = 8192;
    auto owner = std::make_shared<std::vector<std::byte>>(n, std::byte{0x42});
    memory.lend(at, *owner, owner);
    struct Grant {
        bool ok = false, read = false, write = false;
        std::uint64_t first = 0, last = 0;
        const unsigned char* ptr = nullptr;
    };
    Grant inside, below, above, writing, after;
    TestInitiator cpu("cpu", [&](TestInitiator& self) {
        auto ask = [&](tlm::tlm_command cmd, std::uint64_t address, std::uint32_t length) {
            tlm::tlm_generic_payload gp;
            gp.set_command(cmd);
            gp.set_address(address);
            gp.set_data_length(length);
            tlm::tlm_dmi dmi;
            Grant g;
            g.ok = self.socket->get_direct_mem_ptr(gp, dmi);
            g.read = dmi.is_read_allowed();
            g.write = dmi.is_write_allowed();
            g.first = dmi.get_start_address();
            g.last = dmi.get_end_address();
            g.ptr = dmi.get_dmi_ptr();
            return g;
        };
        inside = ask(tlm::TLM_READ_COMMAND, at + 100, 64);
        below = ask(tlm::TLM_READ_COMMAND, 0, 64);
        above = ask(tlm::TLM_WRITE_COMMAND, at + n, 64);
        writing = ask(tlm::TLM_WRITE_COMMAND, at + 100, 64);
        after = ask(tlm::TLM_READ_COMMAND, at + 100, 64);
    });
    cpu.socket.bind(memory.socket);
    sc_core::sc_start();
    CHECK((inside.ok && inside.read && !inside.write));
    CHECK((inside.first == at && inside.last == at + n - 1));
    CHECK(inside.ptr == reinterpret_cast<const unsigned char*>(owner->data())); // in place: no copy
    CHECK((below.ok && below.write && below.first == 0 && below.last == at - 1));
    CHECK((above.ok && above.write && above.first == at + n && above.last == (std::uint64_t{1} << 20) - 1));
    // Asked for writing inside: the loan ends (every grant invalidated), the whole data is granted.
    CHECK(cpu.invalidations == 1);
    CHECK_FALSE(memory.lending());
    CHECK(
        (writing.ok && writing.write && writing.first == 0 && writing.last == (std::uint64_t{1} << 20) - 1));
    CHECK((after.ok && after.write && after.ptr != reinterpret_cast<const unsigned char*>(owner->data())));
    std::vector<std::byte> back(n);
    memory.peek(at, back);
    CHECK(back == *owner);
}

TEST_CASE("a recorded run replays to the same DDR time and row outcomes", "[ddr][replay]") {
    const auto d = ddr();
    const cardsim::test::ScratchDir dir("ddr-record");
    const auto path = dir / "requests.trace";
    TraceContext ctx;
    ctx.address_limit = d.total_bytes();
    DdrMemory memory("recorded", d);
    TraceRecorder recorder(path, ctx);
    memory.set_observer(&recorder);
    ReplayHarness harness(d); // elaborated together: a process elaborates once
    Cycle recorded_end = 0;
    TestInitiator unit("unit", [&](TestInitiator& self) {
        // A unit's traffic: weight streams, small reads, a result write, at kernel-clock times.
        const sc_core::sc_time kernel(10.0 / 3.0, sc_core::SC_NS);
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        for (int i = 0; i < 20; ++i) {
            self.transact(tlm::TLM_READ_COMMAND, 0x100000ull * i, nullptr, 256 * 1024, delay);
            sc_core::sc_time small = delay + kernel * 7.0;
            self.transact(tlm::TLM_READ_COMMAND, 0x40000000ull + 4096ull * i, nullptr, 256, small);
            sc_core::sc_time out = delay + kernel * 3.0;
            self.transact(tlm::TLM_WRITE_COMMAND, 0x80000000ull + 1024ull * i, nullptr, 4096, out);
            wait(kernel * 11.0);
        }
        recorded_end = memory.flush();
    });
    unit.socket.bind(memory.socket);
    sc_core::sc_start();
    memory.set_observer(nullptr);
    recorder.close();
    TraceReader reader(path, TraceFormat::Cardsim, ctx);
    const ReplayResult r = harness.run(reader, {Pacing::Timed, 0, true});
    CHECK(r.player.requests == 60);
    CHECK(r.end - r.player.start == recorded_end); // the recorded run started at cycle 0
    for (std::uint32_t c = 0; c < d.channels; ++c) {
        const auto& a = memory.channel(c).timing().stats();
        const auto& b = r.channels[c];
        CHECK(a.row_hits == b.row_hits);
        CHECK(a.row_conflicts == b.row_conflicts);
        CHECK(a.bytes() == b.bytes());
        CHECK(a.last_data - 0 == b.last_data - r.player.start);
    }
}

TEST_CASE("a transaction's stall extension splits its time from arrival to completion exactly",
          "[ddr][tlm][stalls]") {
    auto d = ddr();
    d.timing.trefi = 2 * d.timing.trfc; // refresh-tight: the stream meets refreshes
    DdrMemory memory("ddr", d);
    const TimeBase time{MemoryClock(d.speed_mts)};
    struct Seen {
        StallSplit split;
        Cycle arrival = 0, done = 0;
        std::uint32_t length = 0;
        std::uint32_t channel = 0;
        std::uint64_t channels = 0;
    };
    std::vector<Seen> seen;
    TestInitiator cpu("cpu", [&](TestInitiator& self) {
        StallExtension ext;
        self.last.set_extension(&ext);
        // One burst in one channel, a stream over all four, a write; each issued 100 ns apart.
        for (std::uint32_t length : {64u, 1u << 20, 4096u}) {
            sc_core::sc_time delay = sc_core::sc_time(100, sc_core::SC_NS) * double(seen.size());
            ext.split = StallSplit{.queueing = 12345}; // stale: the memory must overwrite it
            ext.channel = 99;
            ext.channels = 0;
            const auto cmd = length == 4096 ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND;
            REQUIRE(self.transact(cmd, 0, nullptr, length, delay) == tlm::TLM_OK_RESPONSE);
            seen.push_back(
                {ext.split, ext.arrival, time.cycle_at_or_after(delay), length, ext.channel, ext.channels});
        }
        self.last.clear_extension(&ext);
    });
    cpu.socket.bind(memory.socket);
    sc_core::sc_start();
    REQUIRE(seen.size() == 3);
    for (auto& s : seen) {
        INFO("request of " << s.length << " bytes");
        CHECK(s.done >= s.arrival);
        CHECK(s.split.total() == s.done - s.arrival);
    }
    CHECK(seen[0].split.data > 0);
    CHECK(seen[1].split.refresh > 0); // a refresh every 2 tRFC cannot miss a 1 MiB stream
    CHECK(seen[1].split.data >= seen[1].split.total() / 4);
    // It names the channel of the part its split is of, and every channel the request reached.
    CHECK(seen[0].channels == std::uint64_t{1} << seen[0].channel);  // 64 B: one channel
    CHECK(seen[1].channels == (std::uint64_t{1} << d.channels) - 1); // 1 MiB: all of them
    CHECK(seen[1].channel < d.channels);
}
