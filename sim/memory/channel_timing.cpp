#include "sim/memory/channel_timing.hpp"

#include <algorithm>
#include <bit>

namespace cardsim::sim::memory {

ChannelTiming::ChannelTiming(const card::DdrConfig& ddr)
    : map_(card::AddressMap::build(ddr)), capacity_(ddr.channel_bytes()),
      banks_per_group_(ddr.geometry.banks_per_group), bank_count_(ddr.geometry.banks()),
      group_count_(ddr.geometry.bank_groups), rank_count_(ddr.geometry.ranks),
      closed_page_(ddr.controller.page_policy == card::PagePolicy::Closed) {
    const auto& t = ddr.timing;
    cl_ = t.cl;
    cwl_ = t.cwl;
    trcd_ = t.trcd;
    trp_ = t.trp;
    tras_ = t.tras;
    trc_ = Cycle{t.tras} + t.trp;
    tccd_s_ = t.tccd_s;
    tccd_l_ = t.tccd_l;
    trrd_s_ = t.trrd_s;
    trrd_l_ = t.trrd_l;
    tfaw_ = t.tfaw;
    bc_ = t.burst_cycles();
    trtw_ = t.trtw;
    trtp_ = t.trtp;
    wtr_s_ = Cycle{t.cwl} + bc_ + t.twtr_s;
    wtr_l_ = Cycle{t.cwl} + bc_ + t.twtr_l;
    wr_ = Cycle{t.cwl} + bc_ + t.twr;
    trfc_ = t.trfc;
    trefi_ = t.trefi;
    trtrs_ = t.trtrs;
    period_ = map_.bank_group_period();
    std::array<bool, 5> seen{};
    for (const auto& piece : map_.pieces()) {
        const auto f = static_cast<std::size_t>(piece.field);
        if (seen[f] || piece.field_shift != 0 || piece.bits >= 64) sliced_ = false;
        seen[f] = true;
        slices_[f] = {piece.source_shift, (std::uint64_t{1} << piece.bits) - 1};
    }
    if (!closed_page_ && map_.run_bits() < 64 && (std::uint64_t{1} << map_.run_bits()) >= 4 * period_)
        run_mask_ = (std::uint64_t{1} << map_.run_bits()) - 1;
    queue_.resize(ddr.controller.write_queue);
    reset(0);
}

void ChannelTiming::reset(Cycle origin) {
    for (auto& b : banks_)
        b = Bank{origin, origin, origin, 0, false};
    for (auto& r : rank_) {
        r.cas_ready_bg.fill(origin);
        r.act_ready_bg.fill(origin);
        r.read_ready_bg.fill(origin);
        r.faw.fill(origin);
        r.faw_next = 0;
        r.act_ready = r.read_ready = origin;
    }
    for (std::uint32_t r = 0; r < rank_count_; ++r) {
        next_refresh_[r] = origin + trefi_ + r * trefi_ / rank_count_;
        refresh_end_[r] = refresh_due_[r] = origin;
    }
    cas_ready_ = write_ready_ = switch_ready_ = write_data_end_ = read_data_end_ = origin;
    last_cas_ = origin;
    last_rank_ = last_write_rank_ = last_read_rank_ = 0;
    any_burst_ = any_write_ = any_read_ = last_write_ = false;
    command_bus_.reset(origin);
    queue_head_ = 0;
    queued_ = 0;
    stats_ = ChannelStats{};
    stats_.last_data = origin;
    read_port_.reset(origin);
    write_port_.reset(origin);
}

Cycle ChannelTiming::column_floor(bool write) const {
    if (write) return std::max(cas_ready_, write_ready_);
    Cycle lowest = ~Cycle{0};
    for (std::uint32_t r = 0; r < rank_count_; ++r)
        lowest = std::min(lowest, rank_[r].read_ready);
    return std::max(cas_ready_, lowest);
}

[[gnu::always_inline]] inline Cycle ChannelTiming::burst(const BurstTarget& t, bool write, Cycle ready,
                                                         StallTrack* track) {
    // A burst waits for at most one refresh: one that still cannot start before the next refresh
    // (a trefi barely above trfc + tRP + tRCD) goes right after it, the next refresh postponed
    // behind it, as JEDEC allows, so every burst makes progress.
    for (bool refreshed = false;; refreshed = true) {
        const Plan p = plan(t, write, ready);
        if (p.cas < next_refresh_[t.rank] || refreshed) {
            if (track) {
                // Streaming at the burst rate (the common case) needs no floors.
                if (!track->first && p.cas > track->frontier && p.cas - track->frontier <= bc_) {
                    track->split.data += p.cas - track->frontier;
                    track->frontier = p.cas;
                } else {
                    attribute(*track, floors(p, t.rank), bc_);
                }
            }
            return commit(p, t, write);
        }
        refresh(t.rank);
    }
}

void ChannelTiming::refresh(std::uint32_t r) {
    Cycle start = next_refresh_[r];
    bool any_open = false;
    const std::uint32_t first = r * bank_count_, stop = first + bank_count_;
    for (std::uint32_t i = first; i < stop; ++i)
        if (banks_[i].open) {
            any_open = true;
            start = std::max(start, banks_[i].pre_ok);
        }
    start = command_bus_.free_at_or_after(start);
    command_bus_.take_row(start); // PRECHARGE ALL, or the REFRESH
    Cycle end = start + (any_open ? trp_ : 0);
    if (any_open) {
        end = command_bus_.free_at_or_after(end);
        command_bus_.take_row(end); // the REFRESH after tRP
    }
    end += trfc_;
    for (std::uint32_t i = first; i < stop; ++i) {
        banks_[i].open = false;
        banks_[i].act_ok = std::max(banks_[i].act_ok, end);
    }
    refresh_end_[r] = end;
    refresh_due_[r] = next_refresh_[r];
    ++stats_.refreshes;
    stats_.refresh_cycles += trfc_;
    next_refresh_[r] += trefi_;
}

void ChannelTiming::catch_up_rank(std::uint32_t r, Cycle t) {
    if (t < next_refresh_[r]) return;
    refresh(r);
    if (t < next_refresh_[r]) return;
    // Whole refresh intervals with every bank of the rank closed and nothing else to do.
    const std::uint64_t k = (t - next_refresh_[r]) / trefi_ + 1;
    const Cycle last_end = next_refresh_[r] + (k - 1) * trefi_ + trfc_;
    for (std::uint32_t i = r * bank_count_; i < (r + 1) * bank_count_; ++i)
        banks_[i].act_ok = std::max(banks_[i].act_ok, last_end);
    refresh_end_[r] = last_end;
    refresh_due_[r] = last_end - trfc_;
    stats_.refreshes += k;
    stats_.refresh_cycles += k * trfc_;
    next_refresh_[r] += k * trefi_;
}

void ChannelTiming::catch_up(Cycle t) {
    for (std::uint32_t r = 0; r < rank_count_; ++r)
        catch_up_rank(r, t);
}

void ChannelTiming::refresh_until(std::uint32_t r, Cycle t) {
    refresh(r);
    catch_up_rank(r, t);
}

void ChannelTiming::drain_before(Cycle t) {
    while (queued_ > 0) {
        const QueuedWrite& w = queue_[queue_head_];
        const Plan p = plan(w.target, true, w.arrival);
        if (p.cas >= next_refresh_[w.target.rank]) {
            if (next_refresh_[w.target.rank] >= t) return;
            refresh(w.target.rank);
            continue;
        }
        if (p.cas >= t) return;
        commit(p, w.target, true);
        queue_head_ = queue_head_ + 1 == queue_.size() ? 0 : queue_head_ + 1;
        --queued_;
    }
}

Cycle ChannelTiming::drain_all() {
    Cycle first = 0;
    bool have_first = false;
    ++stats_.write_batches;
    while (queued_ > 0) {
        const QueuedWrite& w = queue_[queue_head_];
        const Cycle end = burst(w.target, true, w.arrival, nullptr);
        if (!have_first) {
            first = end - cwl_ - bc_;
            have_first = true;
        }
        queue_head_ = queue_head_ + 1 == queue_.size() ? 0 : queue_head_ + 1;
        --queued_;
    }
    return first;
}

Cycle ChannelTiming::flush() {
    if (queued_ > 0) drain_all();
    return stats_.last_data;
}

Cycle ChannelTiming::access(Direction direction, std::uint64_t address, std::uint64_t length, Cycle arrival,
                            StallSplit* split) {
    if (length == 0) return arrival;
    const std::uint32_t shift = map_.burst_shift();
    const std::uint64_t first = address >> shift;
    const std::uint64_t stop = ((address + length - 1) >> shift) + 1;
    if (queued_ > 0) drain_before(arrival);
    catch_up(arrival);
    StallTrack track;
    track.frontier = arrival;
    Cycle end;
    if (direction == Direction::Read) {
        ++stats_.read_requests;
        stats_.read_bytes += length;
        // Behind the write data still crossing the port (the front end is in order).
        const Cycle start = front_free(arrival);
        track.split.queueing += start - arrival;
        track.frontier = start;
        end = bursts(first, stop, false, start, &track);
        stats_.read_latency.add(end - arrival);
        track.split.data += end - track.frontier;
        stats_.read_stalls += track.split;
    } else {
        ++stats_.write_requests;
        stats_.write_bytes += length;
        if (stop - first > queue_.size()) { // stream straight to the DRAM
            if (queued_ > 0) drain_all();
            end = serve_writes_in_order(first, stop, arrival, &track);
            track.split.data += end - track.frontier;
        } else {
            end = arrival;
            Cycle crossing = 0; // through the port: each burst is in the queue once it has crossed
            for (std::uint64_t line = first; line < stop; ++line) {
                if (queued_ == queue_.size()) end = std::max(end, drain_all());
                if (write_port_.on()) crossing = write_port_.enter(end);
                std::uint32_t tail = queue_head_ + queued_;
                if (tail >= queue_.size()) tail -= static_cast<std::uint32_t>(queue_.size());
                queue_[tail] = {target(line), write_port_.on() ? crossing : arrival};
                ++queued_;
            }
            end = std::max(end, crossing);
            track.split += posted_split(end - arrival, stop - first);
        }
        stats_.write_stalls += track.split;
    }
    if (split) *split += track.split;
    return end;
}

Cycle ChannelTiming::serve_in_order(std::uint64_t first, std::uint64_t stop, bool write, Cycle ready,
                                    StallTrack* track) {
    return bursts(first, stop, write, ready, track);
}

Cycle ChannelTiming::serve_writes_in_order(std::uint64_t first, std::uint64_t stop, Cycle offered,
                                           StallTrack* track) {
    if (first == stop) return offered;
    if (!write_port_.on()) return bursts(first, stop, true, offered, track);
    // Column commands of one stream are at least tCCD_S apart, so when a burst crosses no slower
    // than that, the first burst's crossing is the stream's only constraint (burst k crosses k
    // steps after it, and its WRITE is at least k x tCCD_S after the first's): the closed form
    // applies. A slower port paces the stream burst by burst.
    // The wait for a burst's data to cross is data time (moving the request's bytes), so the
    // floors its WRITE passed then split only what follows.
    const auto wait_for = [&](Cycle ready) {
        if (track && ready > track->frontier) {
            track->split.data += ready - track->frontier;
            track->frontier = ready;
        }
        return ready;
    };
    if (write_port_.keeps_up_with(tccd_s_)) {
        const Cycle ready = wait_for(write_port_.enter(offered));
        if (stop - first > 1) write_port_.enter(offered, stop - first - 1);
        return bursts(first, stop, true, ready, track);
    }
    Cycle end = offered;
    for (std::uint64_t line = first; line < stop; ++line)
        end = bursts(line, line + 1, true, wait_for(write_port_.enter(offered)), track);
    return end;
}

Cycle ChannelTiming::bursts(std::uint64_t line, std::uint64_t stop, bool write, Cycle ready,
                            StallTrack* track) {
    Cycle end = ready;
    while (line < stop) {
        if (fast_ && run_mask_ != 0) {
            const std::uint64_t block_stop = std::min(stop, (line | run_mask_) + 1);
            if (block_stop - line >= 3 * period_) {
                end = run_block(line, block_stop, write, ready, track);
                line = block_stop;
                continue;
            }
        }
        end = burst(target(line), write, ready, track);
        ++line;
    }
    return end;
}

Cycle ChannelTiming::run_block(std::uint64_t line, std::uint64_t stop, bool write, Cycle ready,
                               StallTrack* track) {
    const std::uint64_t p = period_;
    Cycle end = ready;
    std::uint64_t done = 0;
    while (line < stop) {
        if (done < p || (line & (p - 1)) != 0 || stop - line < 2 * p) {
            end = burst(target(line), write, ready, track);
            ++line;
            ++done;
            continue;
        }
        // One period, burst by burst, watching whether the state advances by a constant.
        const BurstTarget first = target(line);
        const std::uint32_t r = first.rank;
        Rank& rk = rank_[r];
        const Cycle cas0 = cas_ready_;
        const std::array<Cycle, 8> bg0 = rk.cas_ready_bg;
        const Cycle last_before = last_cas_;
        const std::uint64_t hits0 = stats_.row_hits;
        const std::uint64_t refreshes0 = stats_.refreshes;
        const Cycle data0 = track ? track->split.data : 0;
        std::uint32_t visited = 0;
        std::array<std::uint32_t, 8> bank_of{};
        std::array<Cycle, 8> cas_of{};
        for (std::uint64_t i = 0; i < p; ++i, ++line) {
            const BurstTarget t = target(line);
            visited |= 1u << t.group;
            bank_of[t.group] = t.bank;
            end = burst(t, write, ready, track);
            cas_of[i] = last_cas_;
        }
        done += p;
        const Cycle delta = cas_ready_ - cas0;
        bool periodic = stats_.row_hits - hits0 == p && stats_.refreshes == refreshes0 && delta > 0 &&
                        ready <= last_before && (write ? write_ready_ : rk.read_ready) <= last_before &&
                        last_rank_ == r;
        for (std::uint32_t g = 0; periodic && g < 8; ++g) {
            if (!(visited >> g & 1)) continue;
            periodic = rk.cas_ready_bg[g] - bg0[g] == delta && banks_[bank_of[g]].cas_ok <= last_before &&
                       (write || rk.read_ready_bg[g] <= last_before);
        }
        if (!periodic) continue;
        // The recurrence is now cas_i = max(cas_{i-1} + tCCD_S, cas_{same group} + tCCD_L) with
        // nothing else binding, so every further period shifts the whole state by delta. Advance
        // the whole periods that stay before the next refresh.
        std::uint64_t k = (stop - line) / p;
        k = std::min<std::uint64_t>(k, (next_refresh_[r] - 1 - last_cas_) / delta);
        if (k == 0) continue;
        const Cycle shift = k * delta;
        cas_ready_ += shift;
        last_cas_ += shift;
        switch_ready_ += shift;
        for (std::uint32_t g = 0; g < 8; ++g) {
            if (!(visited >> g & 1)) continue;
            rk.cas_ready_bg[g] += shift;
            const Cycle last_g = rk.cas_ready_bg[g] - tccd_l_;
            Bank& b = banks_[bank_of[g]];
            if (write) {
                b.pre_ok = std::max(b.pre_ok, last_g + wr_);
                rk.read_ready_bg[g] = last_g + wtr_l_;
            } else {
                b.pre_ok = std::max(b.pre_ok, last_g + trtp_);
            }
        }
        // The column commands of the advanced periods, as series on the command bus.
        std::array<Cycle, 8> firsts{};
        for (std::uint64_t i = 0; i < p; ++i)
            firsts[i] = cas_of[i] + delta;
        command_bus_.take_run(firsts, static_cast<std::uint32_t>(p), delta, k);
        const std::uint64_t n = k * p;
        stats_.row_hits += n;
        if (write) {
            rk.read_ready = last_cas_ + wtr_s_;
            stats_.write_bursts += n;
            end = last_cas_ + cwl_ + bc_;
            write_data_end_ = end;
        } else {
            write_ready_ = last_cas_ + trtw_;
            stats_.read_bursts += n;
            end = last_cas_ + cl_ + bc_;
            read_data_end_ = end;
        }
        stats_.last_data = std::max(stats_.last_data, end);
        if (!write && read_port_.on()) { // the advanced periods' data through the port, in closed form
            std::array<Cycle, 8> ends{};
            for (std::uint64_t i = 0; i < p; ++i)
                ends[i] = cas_of[i] + cl_ + bc_;
            end = read_port_.pass_periods(std::span<const Cycle>(ends.data(), p), delta, k);
        }
        if (track) { // each period as the one before: its own bursts' data, the rest bus spacing
            const Cycle data = (track->split.data - data0) * k;
            track->split.data += data;
            track->split.queueing += shift - data;
            track->frontier = last_cas_;
        }
        line += n;
        done += n;
    }
    return end;
}

} // namespace cardsim::sim::memory
