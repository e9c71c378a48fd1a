#pragma once
// Plays a stream of memory requests into the DDR memory through TLM, paced closed or timed.

#include "sim/memory/ddr_memory.hpp"
#include "sim/memory/in_flight.hpp"
#include "sim/memory/latency_histogram.hpp"
#include "sim/memory/mem_request.hpp"
#include "sim/memory/time_base.hpp"

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

namespace cardsim::sim::memory {

/// How a player issues requests.
enum class Pacing {
    Closed, ///< as fast as the memory accepts them: each as soon as an outstanding slot frees
    Timed,  ///< at the trace's timestamps (later only when every outstanding slot is busy)
};

/// A player's pacing: the mode, the bound on requests in flight (0 = unbounded), and how it hands
/// requests over: queued (the memory's queued port: the controllers see every request in flight
/// and reorder over them) or blocking (TLM b_transport, as the card's units issue them: each
/// request is served with what the controllers hold when it arrives).
struct PlayerOptions {
    Pacing pacing = Pacing::Closed;
    std::uint32_t outstanding = 64;
    bool blocking = false;
};

/// What a player issued and saw.
struct PlayerTotals {
    std::uint64_t requests = 0;
    std::uint64_t reads = 0;
    std::uint64_t writes = 0;
    std::uint64_t read_bytes = 0;
    std::uint64_t write_bytes = 0;
    Cycle start = 0;               ///< cycle of the first possible arrival
    Cycle end = 0;                 ///< latest completion
    LatencyHistogram read_latency; ///< per read request, arrival to completion, cycles
};

/// A loosely-timed initiator (DRAMSys' trace players are the model): one SC_THREAD that, for each
/// request of its source, computes the arrival (closed: when a slot of `outstanding` frees; timed:
/// the trace time) and hands the request over: queued, through the memory's queued port
/// (`attach`), taking completions back in time order as slots are needed; blocking, by
/// `socket->b_transport` with the arrival as the annotated delay, reading the completion back
/// from the delay. It is the memory's only initiator, so it never synchronises during a run (no
/// event per request); at the end it waits until the last completion. Requests are timing-only
/// (no data). The player can be armed again for another run after sc_start() returns.
class TracePlayer : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<TracePlayer> socket;

    SC_HAS_PROCESS(TracePlayer);
    TracePlayer(const sc_core::sc_module_name& name, const MemoryClock& clock);

    /// The memory whose queued port the player uses (its socket is bound to the same memory).
    void attach(DdrMemory& memory) { memory_ = &memory; }
    /// Plays `source` with `options` during the next sc_start().
    void arm(RequestSource& source, PlayerOptions options);
    const PlayerTotals& totals() const { return totals_; }
    /// Set when the source threw during the run (e.g. a malformed trace line): rethrow it after
    /// sc_start() returns, outside the simulation (SystemC would wrap it in a report).
    std::exception_ptr source_error() const { return source_error_; }
    /// Set when a transaction failed: the failed request and its TLM response.
    const std::optional<std::pair<MemRequest, tlm::tlm_response_status>>& failure() const { return failure_; }

private:
    void run();
    void play();
    /// As play, through the queued port.
    void play_queued();
    /// Counts a request the player handed over.
    void count(const MemRequest& r);

    TimeBase time_;
    DdrMemory* memory_ = nullptr;
    RequestSource* source_ = nullptr;
    PlayerOptions options_;
    PlayerTotals totals_;
    std::optional<std::pair<MemRequest, tlm::tlm_response_status>> failure_;
    std::exception_ptr source_error_;
    sc_core::sc_event start_;
    InFlight in_flight_; ///< completions of the requests in flight
};

} // namespace cardsim::sim::memory
