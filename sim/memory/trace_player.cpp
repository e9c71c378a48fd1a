#include "sim/memory/trace_player.hpp"

#include <algorithm>
#include <functional>

namespace cardsim::sim::memory {

TracePlayer::TracePlayer(const sc_core::sc_module_name& name, const MemoryClock& clock)
    : sc_core::sc_module(name), socket("socket"), time_(clock) {
    SC_THREAD(run);
}

void TracePlayer::arm(RequestSource& source, PlayerOptions options) {
    source_ = &source;
    options_ = options;
    totals_ = PlayerTotals{};
    failure_.reset();
    source_error_ = nullptr;
    in_flight_.reset(options.outstanding);
    start_.notify(sc_core::SC_ZERO_TIME);
}

void TracePlayer::run() {
    for (;;) {
        while (!source_)
            wait(start_);
        try {
            play();
        } catch (...) { // handed to the caller of sc_start(), not to the kernel
            source_error_ = std::current_exception();
        }
        source_ = nullptr;
    }
}

void TracePlayer::count(const MemRequest& r) {
    ++totals_.requests;
    if (r.direction == Direction::Read) {
        ++totals_.reads;
        totals_.read_bytes += r.length;
    } else {
        ++totals_.writes;
        totals_.write_bytes += r.length;
    }
}

void TracePlayer::play_queued() {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const Cycle origin = time_.cycle_at_or_after(now);
    const MemoryClock& clock = time_.clock();
    const bool closed = options_.pacing == Pacing::Closed;
    const std::uint32_t bound = options_.outstanding;
    totals_.start = origin;
    totals_.end = origin;
    std::uint64_t pending = 0;
    MemCompletion c;
    // The tag carries the direction: reads' latencies go into the histogram.
    auto account = [&](const MemCompletion& done) {
        --pending;
        if ((done.tag & 1) == 0) totals_.read_latency.add(done.done - done.arrival);
        totals_.end = std::max(totals_.end, done.done);
    };
    MemRequest r;
    Cycle previous = origin;
    std::uint64_t index = 0;
    while (source_->next(r)) {
        Cycle arrival = closed ? previous : origin + clock.cycles_of_ps(r.time_ps);
        if (bound != 0 && pending == bound && memory_->next_completion(c)) {
            account(c);
            arrival = std::max(arrival, c.done);
        }
        if (closed) previous = arrival;
        const std::uint64_t tag = index++ << 1 | (r.direction == Direction::Write ? 1 : 0);
        if (const auto status = memory_->submit(r, arrival, tag); status != tlm::TLM_OK_RESPONSE) {
            failure_ = {r, status};
            break;
        }
        ++pending;
        count(r);
        if (bound == 0)
            while (memory_->take_served(c))
                account(c);
    }
    while (memory_->next_completion(c))
        account(c);
    wait(time_.time_of(totals_.end) - now);
}

void TracePlayer::play() {
    if (memory_ && !options_.blocking) {
        play_queued();
        return;
    }
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const Cycle origin = time_.cycle_at_or_after(now);
    const MemoryClock& clock = time_.clock();
    const bool closed = options_.pacing == Pacing::Closed;
    const std::uint32_t bound = options_.outstanding;
    totals_.start = origin;
    totals_.end = origin;
    tlm::tlm_generic_payload gp;
    gp.set_data_ptr(nullptr);
    gp.set_byte_enable_ptr(nullptr);
    gp.set_byte_enable_length(0);
    MemRequest r;
    Cycle previous = origin;
    while (source_->next(r)) {
        Cycle arrival = closed ? previous : origin + clock.cycles_of_ps(r.time_ps);
        if (bound != 0 && in_flight_.size() == bound) {
            arrival = std::max(arrival, in_flight_.pop_earliest());
        }
        if (closed) previous = arrival;
        const bool read = r.direction == Direction::Read;
        gp.set_command(read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
        gp.set_address(r.address);
        gp.set_data_length(r.length);
        gp.set_streaming_width(r.length);
        gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        sc_core::sc_time delay = time_.time_of(arrival) - now;
        socket->b_transport(gp, delay);
        if (gp.is_response_error()) {
            failure_ = {r, gp.get_response_status()};
            break;
        }
        const Cycle done = time_.cycle_at_or_after(now + delay);
        if (bound != 0) {
            in_flight_.insert(done);
        }
        count(r);
        if (read) totals_.read_latency.add(done - arrival);
        totals_.end = std::max(totals_.end, done);
    }
    wait(time_.time_of(totals_.end) - now);
}

} // namespace cardsim::sim::memory
