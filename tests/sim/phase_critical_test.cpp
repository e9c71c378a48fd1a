// A unit phase's DDR time is split along its critical channel's chain: the phase's requests on the
// channel of the request that completed last, each less its wait there behind the phase's own
// earlier requests. Requests on other channels run beside that chain and neither add to it nor
// take from it.

#include "sim/card/phase_critical.hpp"

#include <catch2/catch.hpp>

using namespace cardsim;
using sim::PhaseCritical;
using sim::memory::StallExtension;
using sim::memory::StallSplit;

namespace {

/// A DDR request's extension: arriving at `arrival` on `channel` (and reaching only it), split
/// into `queueing` and `data` cycles.
StallExtension request(std::uint64_t arrival, std::uint32_t channel, std::uint64_t queueing,
                       std::uint64_t data) {
    StallExtension e;
    e.arrival = arrival;
    e.channel = channel;
    e.channels = std::uint64_t{1} << channel;
    e.split.queueing = queueing;
    e.split.data = data;
    return e;
}

/// A delay of `ns` nanoseconds after the command's start.
sc_core::sc_time at(double ns) {
    return sc_core::sc_time(ns, sc_core::SC_NS);
}

} // namespace

TEST_CASE("a request's wait behind the phase's own earlier request on its channel is not queueing") {
    PhaseCritical p;
    p.complete(at(10), true, request(0, 0, 0, 50));  // ends at 50
    p.complete(at(20), true, request(0, 0, 50, 50)); // waited 0..50 behind the first: its own data
    REQUIRE(p.ddr);
    CHECK(p.channel == 0);
    CHECK(p.split() == StallSplit{0, 0, 0, 0, 100});
}

TEST_CASE("a wait behind other traffic past the phase's own requests stays queueing") {
    PhaseCritical p;
    p.complete(at(10), true, request(0, 0, 0, 50));  // ends at 50
    p.complete(at(20), true, request(0, 0, 80, 50)); // 0..50 behind its own, 50..80 behind others
    CHECK(p.split() == StallSplit{30, 0, 0, 0, 100});
}

TEST_CASE("requests side by side on another channel neither cancel nor add to the critical chain") {
    PhaseCritical p;
    // Channel 1 moves its own two requests quickly; channel 0's one request waited behind others.
    p.complete(at(5), true, request(0, 1, 0, 40));
    p.complete(at(8), true, request(0, 1, 40, 40));
    p.complete(at(30), true, request(0, 0, 70, 20)); // completes last: channel 0 is critical
    REQUIRE(p.channel == 0);
    // Channel 1's chain (its own data, 80 cycles) neither cancels channel 0's queueing nor joins it.
    CHECK(p.split() == StallSplit{70, 0, 0, 0, 20});
    CHECK(p.chain[1] == StallSplit{0, 0, 0, 0, 80});
}

TEST_CASE("a phase's earlier request on another channel does not shorten a request's queueing") {
    PhaseCritical p;
    p.complete(at(10), true, request(0, 1, 0, 100)); // channel 1 busy until 100 with the phase's own
    p.complete(at(20), true, request(0, 0, 60, 20)); // channel 0: 60 behind others' traffic
    CHECK(p.channel == 0);
    CHECK(p.split().queueing == 60);
}

TEST_CASE("a request over several channels joins the chain of each channel it reached") {
    PhaseCritical p;
    StallExtension stream = request(0, 2, 10, 90); // its split is that of its channel-2 part
    stream.channels = 0b1110;                      // it reached channels 1, 2 and 3
    p.complete(at(50), true, stream);
    p.complete(at(60), true, request(0, 3, 100, 10)); // behind the stream on channel 3: its own
    REQUIRE(p.channel == 3);
    CHECK(p.chain[1] == StallSplit{10, 0, 0, 0, 90});
    CHECK(p.chain[2] == StallSplit{10, 0, 0, 0, 90});
    CHECK(p.split() == StallSplit{10, 0, 0, 0, 100});
    CHECK(p.chain[0] == StallSplit{});
}

TEST_CASE("the critical request is the one that completed strictly last") {
    PhaseCritical p;
    p.complete(at(40), true, request(0, 4, 0, 10));
    p.complete(at(40), true, request(0, 5, 0, 10)); // a tie: the first stays critical
    CHECK(p.channel == 4);
    const StallExtension none;
    p.complete(at(41), false, none); // an SRAM access completing last binds the phase
    CHECK(p.any);
    CHECK_FALSE(p.ddr);
    CHECK(p.chain[0] == StallSplit{}); // and adds nothing to any chain
}
