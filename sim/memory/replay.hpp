#pragma once
// The memory trace player on its own: the card's DDR model driven by a request stream.

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_stats.hpp"
#include "sim/memory/ddr_memory.hpp"
#include "sim/memory/trace_player.hpp"

#include <memory>
#include <string>
#include <vector>

namespace cardsim::sim::memory {

/// The outcome of one replay.
struct ReplayResult {
    PlayerTotals player;
    std::vector<ChannelStats> channels;
    Cycle end = 0;               ///< last data beat, queued writes included
    double host_seconds = 0;     ///< wall time of the simulation
    double host_cpu_seconds = 0; ///< processor time of this process during the simulation
    /// Simulated cycles from the first arrival to the end.
    Cycle cycles() const { return end - player.start; }
};

/// The DDR memory of a card config with a TracePlayer bound to it: the same DdrMemory module the
/// card uses. SystemC elaborates once per process, so a process builds its harnesses (each with
/// its own `name` for its modules) before the first sc_start, and may run each many times; a run
/// starts from idle banks and empty statistics (the stored bytes stay).
class ReplayHarness {
public:
    explicit ReplayHarness(const card::DdrConfig& ddr, const std::string& name = "ddr");
    ~ReplayHarness();
    /// Plays `source` to its end and drains the write queues. A request the memory refuses is a
    /// cardsim::Error naming the request and why.
    ReplayResult run(RequestSource& source, PlayerOptions options);
    DdrMemory& memory() { return *memory_; }
    const card::DdrConfig& config() const { return ddr_; }

private:
    card::DdrConfig ddr_;
    std::unique_ptr<DdrMemory> memory_;
    std::unique_ptr<TracePlayer> player_;
};

/// The replay summary `cardsim ddr replay` prints: requests, bytes, simulated time, bandwidth per
/// channel and in total (GB/s and % of peak), read latency (mean, p50, p99), row hits / misses /
/// conflicts, refresh time share, the mean stall split of a read and of a write request (queueing,
/// bank preparation, refresh, turnaround, data), the scheduler's write batches, rank switches and
/// most passes of one request, host seconds and requests per host second.
std::string format_summary(const ReplayResult& result, const card::DdrConfig& ddr);

/// Achieved bandwidth of channel `c`, bytes per second, over the replay's simulated time.
double channel_bandwidth(const ReplayResult& result, const card::DdrConfig& ddr, std::uint32_t c);
/// Achieved bandwidth of all channels, bytes per second.
double total_bandwidth(const ReplayResult& result, const card::DdrConfig& ddr);

} // namespace cardsim::sim::memory
