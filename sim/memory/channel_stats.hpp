#pragma once
// What one DDR channel did: bytes, bursts, row-buffer outcomes, refresh, read latencies.

#include "sim/memory/latency_histogram.hpp"
#include "sim/memory/memory_clock.hpp"
#include "sim/memory/stall_split.hpp"

#include <cstdint>

namespace cardsim::sim::memory {

/// Counters of one channel since its last reset. Bytes are the bytes requested; bursts are what
/// moved on the bus (a partial burst counts whole). Row outcomes count bursts: a hit finds its row
/// open, a miss finds the bank closed (ACTIVATE), a conflict finds another row open (PRECHARGE +
/// ACTIVATE).
struct ChannelStats {
    std::uint64_t read_requests = 0;
    std::uint64_t write_requests = 0;
    std::uint64_t read_bytes = 0;
    std::uint64_t write_bytes = 0;
    std::uint64_t read_bursts = 0;
    std::uint64_t write_bursts = 0;
    std::uint64_t row_hits = 0;
    std::uint64_t row_misses = 0;
    std::uint64_t row_conflicts = 0;
    std::uint64_t refreshes = 0;     ///< REFRESH commands of all ranks, idle ones included
    Cycle refresh_cycles = 0;        ///< cycles the ranks spent refreshing (refreshes x tRFC), summed
    std::uint64_t turnarounds = 0;   ///< changes of bus direction between consecutive bursts
    std::uint64_t rank_switches = 0; ///< consecutive bursts to different ranks
    std::uint64_t write_batches = 0; ///< times the write queue was drained (high watermark reached)
    std::uint32_t max_passed = 0;    ///< most times a served burst had been passed over (FR-FCFS)
    Cycle last_data = 0;             ///< cycle the last data beat of any burst ended
    LatencyHistogram read_latency;   ///< per read request: data end - arrival, cycles
    StallSplit read_stalls;          ///< the read requests' time, summed, by what held them up
    StallSplit write_stalls;         ///< the write requests' time (to acceptance), summed

    std::uint64_t bytes() const { return read_bytes + write_bytes; }
    std::uint64_t bursts() const { return read_bursts + write_bursts; }
};

} // namespace cardsim::sim::memory
