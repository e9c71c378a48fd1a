#include "sim/memory/channel_controller.hpp"

#include <algorithm>
#include <bit>
#include <span>

namespace cardsim::sim::memory {
ChannelController::ChannelController(const card::DdrConfig& ddr)
    : core_(ddr),
      buffer_(ddr.geometry.channel_banks(),
              ddr.controller.scheduler == card::SchedulerKind::Fcfs ? 0 : ddr.controller.bank_queue_depth,
              ddr.controller.scheduler == card::SchedulerKind::Fcfs ? 0 : ddr.controller.write_queue),
      scheduler_(make_scheduler(ddr, buffer_)), in_order_(scheduler_->in_order()),
      posted_(ddr.controller.write_queue > 0), high_watermark_(ddr.controller.write_high_watermark),
      banks_per_rank_(ddr.geometry.banks()), bank_free_(ddr.geometry.channel_banks(), 0),
      refreshed_(core_.ranks(), 0) {
    cand_.resize(ddr.geometry.channel_banks());
    groups_ = ddr.geometry.bank_groups;
    eager_groups_ = core_.ranks() * groups_ <= 4;
    ranks_switches_ = scheduler_->ranks_switches();
    picks_sole_ = scheduler_->picks_sole_burst();
    frfcfs_ = dynamic_cast<SchedulerFrFcfs*>(scheduler_.get());
}

void ChannelController::reset(Cycle origin) {
    core_.reset(origin);
    scheduler_->reset(); // a second run on the same controller counts its own write batches
    buffer_.clear();
    requests_.clear();
    free_requests_.clear();
    admission_.clear();
    finished_.reset(64);
    std::fill(bank_free_.begin(), bank_free_.end(), origin);
    admit_floor_ = origin;
    front_blocked_ = false;
    front_writes_ = 0;
    seq_ = 0;
    dirty(~std::uint64_t{0});
}

std::uint32_t ChannelController::alloc_slot() {
    if (free_requests_.empty()) {
        requests_.emplace_back();
        return static_cast<std::uint32_t>(requests_.size() - 1);
    }
    const std::uint32_t slot = free_requests_.back();
    free_requests_.pop_back();
    return slot; // new_request sets every field
}

std::uint32_t ChannelController::new_request(Direction direction, std::uint64_t address, std::uint64_t length,
                                             Cycle arrival, std::uint64_t tag, bool blocking) {
    const std::uint32_t slot = alloc_slot();
    const std::uint32_t shift = core_.address_map().burst_shift();
    Request& r = requests_[slot];
    r.tag = tag;
    r.next = address >> shift;
    r.stop = ((address + length - 1) >> shift) + 1;
    r.length = length;
    r.bursts = r.stop - r.next;
    r.arrival = arrival;
    r.done = arrival;
    r.track.frontier = arrival;
    r.track.split = StallSplit{};
    r.track.first = true;
    r.in_buffer = 0;
    r.direction = direction;
    r.blocking = blocking;
    r.finished = false;
    ChannelStats& st = core_.mutable_stats();
    if (direction == Direction::Read) {
        ++st.read_requests;
        st.read_bytes += length;
    } else {
        ++st.write_requests;
        st.write_bytes += length;
        ++front_writes_;
    }
    admission_.push_back(slot);
    return slot;
}

bool ChannelController::alone(std::uint64_t first, std::uint64_t stop) const {
    if (!admission_.empty() || buffer_.queued(Direction::Read) > 0) return false;
    if (buffer_.queued(Direction::Write) >= high_watermark_ || scheduler_->draining_writes()) return false;
    for (std::int32_t i = buffer_.oldest(Direction::Write); i != RequestBuffer::none; i = buffer_[i].dnext)
        if (buffer_[i].line >= first && buffer_[i].line < stop) return false;
    return true;
}

Cycle ChannelController::access(Direction direction, std::uint64_t address, std::uint64_t length,
                                Cycle arrival, StallSplit* split) {
    if (in_order_) return core_.access(direction, address, length, arrival, split);
    if (length == 0) return arrival;
    advance(arrival);
    const std::uint32_t shift = core_.address_map().burst_shift();
    const std::uint64_t first = address >> shift, stop = ((address + length - 1) >> shift) + 1;
    if (direction == Direction::Read && admission_.empty() && buffer_.queued(Direction::Read) == 0) {
        // A write batch under way goes before this read whatever it is (it runs to its low
        // watermark): serve it first, so that the read may find itself alone.
        next_event(); // the scheduler sees the writes queued now
        while (scheduler_->draining_writes() && step(never)) {
        }
    }
    if (direction == Direction::Read && alone(first, stop)) {
        for (std::uint32_t r = 0; r < core_.ranks(); ++r) {
            const std::uint64_t rank_banks = ((std::uint64_t{1} << banks_per_rank_) - 1)
                                             << (r * banks_per_rank_);
            if ((buffer_.banks_with(Direction::Write) & rank_banks) == 0) core_.catch_up_rank(r, arrival);
        }
        // Behind the write data still crossing the port (the front end is in order).
        const Cycle start = core_.front_free(arrival);
        StallTrack track;
        track.split.queueing = start - arrival;
        track.frontier = start;
        const Cycle end = core_.serve_in_order(first, stop, false, start, &track);
        track.split.data += end - track.frontier;
        ChannelStats& st = core_.mutable_stats();
        ++st.read_requests;
        st.read_bytes += length;
        st.read_latency.add(end - arrival);
        st.read_stalls += track.split;
        if (split) *split += track.split;
        dirty(~std::uint64_t{0}); // rows moved under the kept picks
        return end;
    }
    const std::uint32_t capacity = buffer_.write_capacity();
    if (direction == Direction::Write && capacity > 0 && stop - first > capacity && admission_.empty() &&
        buffer_.queued(Direction::Read) == 0) {
        // A write longer than the queue with no read around: the queued writes drain, then its
        // bursts stream in order (what the drain does with a sequential write) until the queue
        // holds its last `capacity`; it completes when the last one is accepted.
        while (buffer_.queued(Direction::Write) > 0 && step(never)) {
        }
        for (std::uint32_t r = 0; r < core_.ranks(); ++r)
            core_.catch_up_rank(r, arrival);
        StallTrack track;
        track.frontier = arrival;
        // Each streamed burst goes once its data has crossed the port; then the queued ones cross.
        const Cycle end = core_.serve_writes_in_order(first, stop - capacity, arrival, &track);
        const Cycle accepted = std::max(arrival, end - core_.write_latency());
        PortLane& port = core_.write_port();
        Cycle last = accepted;
        for (std::uint64_t line = stop - capacity; line < stop; ++line) {
            if (port.on()) last = std::max(accepted, port.enter(accepted));
            const BurstTarget t = core_.target(line);
            QueuedBurst q;
            q.line = line;
            q.seq = seq_++;
            q.accept = last;
            q.bank = t.bank;
            q.group = t.group;
            q.rank = t.rank;
            q.row = t.row;
            q.direction = Direction::Write;
            buffer_.push(q);
        }
        ChannelStats& st = core_.mutable_stats();
        ++st.write_requests;
        st.write_bytes += length;
        const StallSplit waited = core_.posted_split(last - arrival, stop - first);
        st.write_stalls += waited;
        if (split) *split += waited;
        admit_floor_ = std::max(admit_floor_, accepted);
        dirty(~std::uint64_t{0});
        return last;
    }
    const std::uint32_t slot = new_request(direction, address, length, arrival, 0, true);
    admit();
    while (!requests_[slot].finished)
        if (!step(never)) break;
    const Request& r = requests_[slot];
    if (split) *split += r.track.split;
    const Cycle done = r.done;
    free_requests_.push_back(slot);
    return done;
}

bool ChannelController::serve_at_once(std::uint64_t line, std::uint64_t length, Cycle arrival,
                                      std::uint64_t tag) {
    if (!buffer_.empty() || !admission_.empty() || core_.front_free(arrival) > arrival) return false;
    const BurstTarget t = core_.target(line);
    if (!core_.row_open(t.bank, t.row)) return false;
    const Cycle ready = std::max(arrival, bank_free_[t.bank]);
    const ChannelTiming::Plan p = core_.plan(t, false, ready);
    if (p.cas != std::max(core_.column_floor(false), arrival) || p.cas >= core_.next_refresh(t.rank))
        return false;
    StallTrack track;
    track.frontier = arrival;
    attribute(track, core_.floors(p, t.rank), core_.burst_cycles());
    const Cycle end = core_.commit(p, t, false);
    bank_free_[t.bank] = p.cas;
    if (log_) log_->push_back({tag, line, p.cas, Direction::Read, 0});
    track.split.data += end - track.frontier;
    ChannelStats& st = core_.mutable_stats();
    ++st.read_requests;
    st.read_bytes += length;
    st.read_latency.add(end - arrival);
    st.read_stalls += track.split;
    invalidate();
    push_finished({tag, arrival, end, track.split});
    return true;
}

void ChannelController::submit(Direction direction, std::uint64_t address, std::uint64_t length,
                               Cycle arrival, std::uint64_t tag) {
    if (in_order_) {
        StallSplit split;
        const Cycle done = core_.access(direction, address, length, arrival, &split);
        push_finished({tag, arrival, done, split});
        return;
    }
    advance(arrival);
    if (length == 0) { // nothing to move: complete on arrival
        push_finished({tag, arrival, arrival, {}});
        return;
    }
    const std::uint32_t shift = core_.address_map().burst_shift();
    const std::uint64_t line = address >> shift;
    if (direction == Direction::Read && ((address + length - 1) >> shift) == line &&
        serve_at_once(line, length, arrival, tag))
        return;
    new_request(direction, address, length, arrival, tag, false);
    admit();
    advance(arrival); // what no later arrival can change goes now
}

void ChannelController::admit() {
    while (!admission_.empty()) {
        const std::uint32_t slot = admission_.front();
        Request& r = requests_[slot];
        const BurstTarget t = core_.target(r.next);
        if (!buffer_.has_space(t.bank, r.direction)) {
            front_blocked_ = true;
            return;
        }
        front_blocked_ = false;
        // In order: no earlier than the request before it (`admit_floor_`, a floor the port does not
        // raise), and through the port: a write once its data has crossed, a read once the write
        // data ahead of it has.
        const Cycle base = std::max(r.arrival, admit_floor_);
        PortLane& port = core_.write_port();
        const Cycle accept = !port.on()                        ? base
                             : r.direction == Direction::Write ? port.enter(base)
                                                               : std::max(base, port.crossed());
        admit_floor_ = base;
        // A request's first burst waiting at the front end is queueing (not its bank's preparation).
        if (r.stop - r.next == r.bursts && accept > r.track.frontier &&
            !(r.direction == Direction::Write && posted_)) {
            r.track.split.queueing += accept - r.track.frontier;
            r.track.frontier = accept;
        }
        const std::uint64_t rank_banks = ((std::uint64_t{1} << banks_per_rank_) - 1)
                                         << (t.rank * banks_per_rank_);
        if (((buffer_.banks_with(Direction::Read) | buffer_.banks_with(Direction::Write)) & rank_banks) ==
                0 &&
            accept >= core_.next_refresh(t.rank)) {
            core_.catch_up_rank(t.rank, accept); // the rank is idle: its refreshes due by now are done
            invalidate();                        // their commands took the command bus
        }
        QueuedBurst q;
        q.line = r.next;
        q.seq = seq_++;
        q.accept = accept;
        q.bank = t.bank;
        q.group = t.group;
        q.rank = t.rank;
        q.row = t.row;
        q.request = slot;
        q.tag = r.tag;
        q.direction = r.direction;
        // A hazard: the youngest older burst of the same line in the other direction.
        std::int32_t blocker = RequestBuffer::none;
        const Direction other = r.direction == Direction::Read ? Direction::Write : Direction::Read;
        if (buffer_.queued(t.bank, other) > 0) {
            const std::span<const std::int32_t> queue = buffer_.in_bank(t.bank);
            for (auto j = queue.rbegin(); j != queue.rend(); ++j)
                if (buffer_[*j].line == q.line && buffer_[*j].direction == other) {
                    blocker = *j;
                    break;
                }
        }
        const std::int32_t i = buffer_.push(q);
        if (blocker != RequestBuffer::none) buffer_.block(i, blocker);
        ++r.next;
        const bool done_admitting = r.next == r.stop;
        if (done_admitting) {
            admission_.pop_front();
            if (r.direction == Direction::Write) --front_writes_;
        }
        if (r.direction == Direction::Write && posted_) {
            r.done = accept; // posted: complete when accepted
            if (done_admitting) finish(slot);
        } else {
            ++r.in_buffer;
        }
        touch(std::uint64_t{1} << t.bank);
    }
}

void ChannelController::finish(std::uint32_t slot) {
    Request& r = requests_[slot];
    r.finished = true;
    ChannelStats& st = core_.mutable_stats();
    if (r.direction == Direction::Read) {
        r.track.split.data += r.done - r.track.frontier;
        st.read_latency.add(r.done - r.arrival);
        st.read_stalls += r.track.split;
    } else {
        if (posted_)
            r.track.split = core_.posted_split(r.done - r.arrival, r.bursts);
        else
            r.track.split.data += r.done - r.track.frontier;
        st.write_stalls += r.track.split;
    }
    if (r.blocking) return;
    push_finished({r.tag, r.arrival, r.done, r.track.split});
    free_requests_.push_back(slot);
}

ChannelCompletion ChannelController::take_finished() {
    return finished_.pop_earliest();
}

void ChannelController::find_event() {
    if (buffer_.empty()) {
        clear_event();
        return;
    }
    find_event_after_serving(policy([](auto& s) { return s.serving(); }));
}

void ChannelController::clear_event() {
    event_.kind = Event::None;
    event_.at = never;
    event_.exempt = false;
    event_.ranked = false;
    event_.urgency = 0;
}

void ChannelController::find_event_after_serving(Direction dir) {
    // Written in place: the event is large, and a fresh one would be zeroed on every decision.
    Event& ev = event_;
    clear_event();
    const bool write = dir == Direction::Write;
    // Fast answer: the oldest burst of the direction is a row hit whose column command can go at
    // the earliest cycle any burst could; every other burst is younger, so it goes first.
    if (const std::int32_t i = buffer_.oldest(dir); i != RequestBuffer::none &&
                                                    buffer_[i].blocker == RequestBuffer::none &&
                                                    core_.row_open(buffer_[i].bank, buffer_[i].row)) {
        const QueuedBurst& e = buffer_[i];
        const Cycle ready = std::max(e.accept, bank_free_[e.bank]);
        const BurstTarget t = target_of(e);
        const ChannelTiming::Plan p = core_.plan(t, write, ready);
        // Ranking switches, it goes first only with no preference against it (its bank's switch
        // urgency 0, the smallest): then no pick, nor any burst arriving later (not visible to
        // its bank's decision, younger than it), can go before it.
        if (p.cas == std::max(core_.column_floor(write), e.accept) && p.cas < core_.next_refresh(e.rank) &&
            (!ranks_switches_ || urgency_of(e.bank, i, ready, dir) == 0)) {
            ev.kind = Event::Commit;
            ev.at = p.cas;
            ev.entry = i;
            ev.plan = p;
            ev.target = t;
            ev.ready = ready;
            // Nothing that arrives later can have an earlier column command, nor (being younger)
            // win a tie; it could only change the direction served. A write batch under way runs
            // to its low watermark whatever arrives; a read goes ahead of any batch that later
            // writes start while the channel holds no write (the one approximation: a batch
            // filled from empty before this read's column command starts after it).
            ev.exempt = write ? scheduler_->draining_writes()
                              : buffer_.queued(Direction::Write) == 0 && front_writes_ == 0;
            return;
        }
    }
    if (dir != cand_dir_) {
        cand_dir_ = dir;
        dirty_ = ~std::uint64_t{0};
        incremental_ = 0;
    }
    const std::uint64_t banks = buffer_.banks_with(dir);
    for (std::uint64_t mask = dirty_ & banks; mask != 0; mask &= mask - 1)
        repick(static_cast<std::uint32_t>(std::countr_zero(mask)), dir);
    dirty_ &= ~banks;
    // Rank the picks by a lower bound of their column command (no command bus), plan the best
    // exactly; if the command bus moved it, rank again with its true time. The bound is the pick's
    // own bank part, kept until its bank changes, with its group's part, computed once per rank,
    // group and outcome (`set_exhaustive_ranking`: the whole bound per pick, for tests).
    // The first ranking pass computes the bounds and the best of them at once. The order of
    // (bound, seq) is one unsigned 128-bit key, the bank in the seq part's low 6 bits (a burst's
    // seq stays below 2^58), so the pass has no branch on the comparisons (the picks' order is
    // unpredictable).
    __extension__ using RankKey = unsigned __int128;
    // Below the bound: the pick's `order` (switch urgency, seq, bank), kept with the pick.
    const auto key_of = [](const Candidate& c) { return RankKey{c.bound} << 64 | c.order; };
    constexpr RankKey no_key = ~RankKey{0};
    RankKey best_key = no_key;
    const std::uint64_t valid = banks & cand_valid_;
    if (exhaustive_) {
        for (std::uint64_t mask = valid; mask != 0; mask &= mask - 1) {
            const auto b = static_cast<std::uint32_t>(std::countr_zero(mask));
            Candidate& c = cand_[b];
            c.bound = core_.earliest_cas(c.target, write, c.ready);
            best_key = std::min(best_key, key_of(c));
        }
    } else {
        if (eager_groups_) { // every group's parts at once (one rank of at most 4 groups: 8 of them)
            for (std::uint32_t r = 0; r < core_.ranks(); ++r)
                core_.group_floors(r, write, &group_floor_[r * 16]);
        } else {
            ++group_stamp_;
            for (std::uint64_t mask = valid; mask != 0; mask &= mask - 1) {
                const Candidate& c = cand_[static_cast<std::size_t>(std::countr_zero(mask))];
                const std::size_t k = c.group_key;
                if (group_seen_[k] != group_stamp_) {
                    group_seen_[k] = group_stamp_;
                    group_floor_[k] = core_.group_floor(c.target.rank, c.target.group, write, c.hit);
                }
            }
        }
        for (std::uint64_t mask = valid; mask != 0; mask &= mask - 1) {
            const auto b = static_cast<std::uint32_t>(std::countr_zero(mask));
            Candidate& c = cand_[b];
            c.bound = std::max(c.own, group_floor_[c.group_key]);
            best_key = std::min(best_key, key_of(c));
        }
    }
    for (bool first = true;; first = false) {
        if (!first) {
            best_key = no_key;
            for (std::uint64_t mask = valid; mask != 0; mask &= mask - 1)
                best_key =
                    std::min(best_key, key_of(cand_[static_cast<std::size_t>(std::countr_zero(mask))]));
        }
        const std::uint32_t best = best_key == no_key ? ~0u : static_cast<std::uint32_t>(best_key & 63);
        if (best == ~0u) break;
        Candidate& c = cand_[best];
        const ChannelTiming::Plan p = core_.plan(c.target, write, c.ready);
        if (p.cas != c.bound) { // the command bus moved it: rank it again
            c.bound = p.cas;
            continue;
        }
        ev.kind = Event::Commit;
        ev.at = p.cas;
        ev.entry = c.entry;
        ev.plan = p;
        ev.target = c.target;
        ev.ready = c.ready;
        ev.seq = c.seq;
        ev.urgency = c.urgency;
        ev.ranked = true;
        ev.direction = dir;
        break;
    }
    refresh_first();
}

void ChannelController::refresh_first() {
    Event& ev = event_;
    if (ev.kind == Event::Commit && ev.plan.cas >= core_.next_refresh(ev.target.rank) &&
        !refreshed_[ev.target.rank]) {
        ev.kind = Event::Refresh;
        ev.at = core_.next_refresh(ev.target.rank);
    }
}

void ChannelController::pick(std::uint32_t b, Direction dir) {
    Candidate& c = cand_[b];
    c.entry = RequestBuffer::none;
    cand_valid_ &= ~(std::uint64_t{1} << b);
    // The bank decides when it is free and its oldest burst that may go has entered.
    const std::span<const std::int32_t> queue = buffer_.in_bank(b);
    if (picks_sole_ && queue.size() == 1) {
        // One burst alone (random traffic, mostly): the scheduler's answer is known.
        const QueuedBurst& e = buffer_[queue.front()];
        if (e.direction != dir || e.blocker != RequestBuffer::none) return;
        c.urgency = 0;
        set_candidate(b, queue.front(), std::max(bank_free_[b], e.accept));
        return;
    }
    const auto first = std::find_if(queue.begin(), queue.end(), [&](std::int32_t i) {
        return buffer_[i].direction == dir && buffer_[i].blocker == RequestBuffer::none;
    });
    if (first == queue.end()) return;
    const BankMachine bm = machine(b, std::max(bank_free_[b], buffer_[*first].accept), dir);
    std::uint32_t urgency = 0;
    const std::int32_t entry = policy(
        [&](auto& s) { return ranks_switches_ ? s.next_request_ranked(bm, urgency) : s.next_request(bm); });
    if (entry == RequestBuffer::none) return;
    c.urgency = urgency;
    set_candidate(b, entry, bm.decision);
}

std::uint32_t ChannelController::urgency_of(std::uint32_t b, std::int32_t entry, Cycle ready,
                                            Direction dir) const {
    const Candidate& c = cand_[b];
    if (cand_dir_ == dir && !(dirty_ >> b & 1) && c.entry == entry && c.ready == ready) return c.urgency;
    return policy([&](auto& s) { return s.switch_urgency(machine(b, ready, dir), entry); });
}

BankMachine ChannelController::machine(std::uint32_t b, Cycle decision, Direction dir) const {
    BankMachine bm;
    bm.bank = b;
    bm.open = core_.bank_open(b);
    bm.row = core_.open_row(b);
    bm.decision = decision;
    bm.direction = dir;
    return bm;
}

void ChannelController::set_candidate(std::uint32_t b, std::int32_t entry, Cycle ready) {
    Candidate& c = cand_[b];
    cand_valid_ |= std::uint64_t{1} << b;
    c.entry = entry;
    c.target = target_of(buffer_[entry]);
    c.ready = ready;
    c.seq = buffer_[entry].seq;
    c.own = core_.bank_floor(c.target, c.ready, c.hit);
    c.group_key = static_cast<std::uint16_t>((c.target.rank * 8 + c.target.group) * 2 + (c.hit ? 1 : 0));
    c.order = order_of(c.urgency, c.seq, b);
}

bool ChannelController::repick(std::uint32_t b, Direction dir) {
    const std::uint64_t bit = std::uint64_t{1} << b;
    dirty_ &= ~bit;
    const Candidate& c = cand_[b];
    if (!(incremental_ & bit) || c.entry == RequestBuffer::none || cand_dir_ != dir) {
        pick(b, dir);
        return true;
    }
    incremental_ &= ~bit;
    // The bank's first burst that may go, hence its decision, is the kept one's: only the new
    // youngest burst can change the answer, and only if it may go itself.
    const std::int32_t added = buffer_.youngest_in_bank(b);
    const QueuedBurst& e = buffer_[added];
    if (e.direction != dir || e.blocker != RequestBuffer::none || e.accept > c.ready) return false;
    const BankMachine bm = machine(b, c.ready, dir);
    const std::int32_t kept = c.entry;
    const std::uint32_t kept_urgency = c.urgency;
    const std::int32_t entry = policy([&](auto& s) { return s.next_request_after_push(bm, kept, added); });
    if (entry != kept) set_candidate(b, entry, bm.decision);
    if (!ranks_switches_) return entry != kept;
    // The burst that entered may change the urgency of a row hit (as it stays or becomes the pick).
    set_urgency(b, policy([&](auto& s) { return s.switch_urgency(bm, entry); }));
    return entry != kept || cand_[b].urgency != kept_urgency;
}

bool ChannelController::update_event() {
    // Only bursts entered since the last decision (nothing was served nor refreshed): every other
    // bank's pick and the planned winner's column command are what they were, so the winner is
    // the better of it and the touched banks' new picks.
    const Direction dir = policy([](auto& s) { return s.serving(); });
    if (!event_.ranked || dir != event_.direction) {
        find_event_after_serving(dir);
        return true;
    }
    const bool write = dir == Direction::Write;
    const std::uint64_t touched = touched_ & buffer_.banks_with(dir);
    const std::uint32_t winner_bank = event_.target.bank;
    if (touched >> winner_bank & 1) { // the winner's own bank may pick another burst
        repick(winner_bank, dir);
        if (cand_[winner_bank].entry != event_.entry || cand_[winner_bank].urgency != event_.urgency) {
            dirty_ |= touched;
            incremental_ &= ~touched;
            find_event_after_serving(dir);
            return true;
        }
    }
    Event& best = event_; // updated in place
    best.kind = Event::Commit;
    best.at = best.plan.cas;
    for (std::uint64_t mask = touched & ~(std::uint64_t{1} << winner_bank); mask != 0; mask &= mask - 1) {
        const auto b = static_cast<std::uint32_t>(std::countr_zero(mask));
        if (!repick(b, dir)) continue; // the kept pick: it lost to the kept winner already
        Candidate& c = cand_[b];
        if (c.entry == RequestBuffer::none) continue;
        // Ordered as the ranking orders them: column command, switch urgency, age.
        const auto after_best = [&](Cycle at) {
            if (at != best.at) return at > best.at;
            if (c.urgency != best.urgency) return c.urgency > best.urgency;
            return c.seq > best.seq;
        };
        const Cycle bound = std::max(c.own, core_.group_floor(c.target.rank, c.target.group, write, c.hit));
        if (after_best(bound)) continue;
        const ChannelTiming::Plan p = core_.plan(c.target, write, c.ready);
        if (after_best(p.cas)) continue;
        best.at = p.cas;
        best.entry = c.entry;
        best.plan = p;
        best.target = c.target;
        best.ready = c.ready;
        best.seq = c.seq;
        best.urgency = c.urgency;
    }
    refresh_first();
    return true;
}

Cycle ChannelController::decide() {
    if (touched_ != 0 && !exhaustive_)
        update_event();
    else
        find_event();
    event_valid_ = true;
    touched_ = 0;
    return event_.at;
}

bool ChannelController::step(Cycle limit) {
    const Cycle at = next_event();
    if (at == never || (at >= limit && !event_.exempt)) return false;
    const Event& ev = event_; // nothing below finds a next action: it stays as it is
    if (ev.kind == Event::Refresh) {
        core_.refresh_until(ev.target.rank, std::min(limit - 1, ev.ready));
        refreshed_[ev.target.rank] = 1;
        dirty(~std::uint64_t{0}); // the rank's rows closed
        return true;
    }
    const std::int32_t i = ev.entry;
    // The burst's fields still needed once it left the buffer.
    const QueuedBurst& e = buffer_[i];
    const std::uint32_t bank = e.bank, rank = e.rank, slot = e.request, passed = e.passed;
    const bool write = e.direction == Direction::Write;
    const BurstFloors floors = core_.floors(ev.plan, rank);
    const Cycle end = core_.commit(ev.plan, ev.target, write);
    refreshed_[rank] = 0;
    if (log_) log_->push_back({e.tag, e.line, ev.plan.cas, e.direction, passed});
    policy([&](auto& s) { s.served(i); });
    ChannelStats& st = core_.mutable_stats();
    st.max_passed = std::max(st.max_passed, passed);
    st.write_batches = policy([](auto& s) { return s.write_batches(); });
    if (buffer_.blocked(write ? Direction::Read : Direction::Write) > 0) {
        const std::span<const std::int32_t> queue = buffer_.in_bank(bank);
        for (auto j = std::find(queue.begin(), queue.end(), i) + 1; j != queue.end(); ++j)
            if (buffer_[*j].blocker == i) buffer_.unblock(*j);
    }
    bank_free_[bank] = ev.plan.cas;
    buffer_.erase(i);
    dirty(std::uint64_t{1} << bank);
    if (!write || !posted_) {
        // A posted write's request finished when it was accepted (its slot may be reused since).
        Request& r = requests_[slot];
        attribute(r.track, floors, core_.burst_cycles());
        r.done = std::max(r.done, end);
        if (--r.in_buffer == 0 && r.next == r.stop) finish(slot);
    }
    if (front_blocked_) {
        admit_floor_ = std::max(admit_floor_, ev.plan.cas);
        admit();
    }
    return true;
}

Cycle ChannelController::flush() {
    if (!in_order_) advance(never);
    return core_.flush();
}

} // namespace cardsim::sim::memory
