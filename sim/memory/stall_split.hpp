#pragma once
// Where the time of a memory request went: queueing, bank preparation, refresh, turnaround, data.

#include "sim/memory/memory_clock.hpp"

#include <algorithm>

namespace cardsim::sim::memory {

/// A request's time from arrival to completion, in memory cycles, split by what held it up. The
/// parts add up to completion - arrival exactly.
struct StallSplit {
    Cycle queueing = 0;   ///< waiting behind other requests: the controller's queue and front end,
                          ///< the column-command spacing of others' bursts, the command bus
    Cycle bank = 0;       ///< bank preparation: PRECHARGE and ACTIVATE (tRP, tRCD, tRAS, tRC, tRRD, tFAW)
    Cycle refresh = 0;    ///< its rank refreshing
    Cycle turnaround = 0; ///< bus turnaround: read/write (tWTR, tRTW) and rank to rank (tRTRS)
    Cycle data = 0;       ///< CAS latency and its own bursts at the burst rate
    Cycle total() const { return queueing + bank + refresh + turnaround + data; }
    StallSplit& operator+=(const StallSplit& o) {
        queueing += o.queueing;
        bank += o.bank;
        refresh += o.refresh;
        turnaround += o.turnaround;
        data += o.data;
        return *this;
    }
    friend bool operator==(const StallSplit&, const StallSplit&) = default;
};

/// The attribution of one request's bursts as they are timed: `frontier` is the column command
/// up to which the request's time is already split (its arrival before the first burst).
struct StallTrack {
    StallSplit split;
    Cycle frontier = 0;
    bool first = true;
};

/// The floors a burst's column command passed, in the order they bind: the last refresh of its
/// rank (due at `refresh_due`, done at `refresh_end`), the column spacing of earlier bursts
/// (`bus`), the read/write and rank turnaround (`turn`), the bank's PRECHARGE/ACTIVATE
/// (`prepared`); then the command bus moved it to `cas`.
struct BurstFloors {
    Cycle refresh_due = 0;
    Cycle refresh_end = 0;
    Cycle bus = 0;
    Cycle turn = 0;
    Cycle prepared = 0;
    Cycle cas = 0;
};

/// Splits the time from `t.frontier` to the burst's column command: after the request's first
/// burst, up to one burst time (`burst_cycles`) is its own data at the burst rate; the rest goes,
/// floor by floor, to refresh, queueing, turnaround, bank preparation and the command bus
/// (queueing). Refresh is at most the refresh's own span, from its due cycle to its end: a
/// request that waited behind others' bursts across a refresh waited for them before it was due
/// (queueing). A burst whose column command is not later than the frontier adds nothing.
inline void attribute(StallTrack& t, const BurstFloors& f, Cycle burst_cycles) {
    if (f.cas <= t.frontier) return;
    Cycle at = t.frontier;
    if (!t.first) {
        if (f.cas - at <= burst_cycles) { // streaming at the burst rate: all its own data
            t.split.data += f.cas - at;
            t.frontier = f.cas;
            return;
        }
        t.split.data += burst_cycles;
        at += burst_cycles;
    }
    t.first = false;
    auto upto = [&](Cycle floor, Cycle& into) {
        const Cycle to = std::clamp(floor, at, f.cas);
        into += to - at;
        at = to;
    };
    upto(f.refresh_due, t.split.queueing);
    upto(f.refresh_end, t.split.refresh);
    upto(f.bus, t.split.queueing);
    upto(f.turn, t.split.turnaround);
    upto(f.prepared, t.split.bank);
    t.split.queueing += f.cas - at;
    t.frontier = f.cas;
}

} // namespace cardsim::sim::memory
