#include "sim/memory/channel_timing.hpp"

#include <algorithm>
#include <bit>

namespace cardsim::sim::memory {

ChannelTiming::ChannelTiming(const card::DdrConfig& ddr)
    : map_(card::AddressMap::build(ddr)), capacity_(ddr.channel_bytes()),
      banks_per_group_(ddr.geometry.banks_per_group), bank_count_(ddr.geometry.banks()),
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
    period_ = map_.bank_group_period();
    if (!closed_page_ && map_.run_bits() < 64 && (std::uint64_t{1} << map_.run_bits()) >= 4 * period_)
        run_mask_ = (std::uint64_t{1} << map_.run_bits()) - 1;
    queue_.resize(ddr.controller.write_queue);
    reset(0);
}

void ChannelTiming::reset(Cycle origin) {
    for (auto& b : banks_)
        b = Bank{origin, origin, origin, 0, false};
    cas_ready_bg_.fill(origin);
    act_ready_bg_.fill(origin);
    read_ready_bg_.fill(origin);
    faw_.fill(origin);
    faw_next_ = 0;
    cas_ready_ = act_ready_ = read_ready_ = write_ready_ = origin;
    last_cas_ = origin;
    next_refresh_ = origin + trefi_;
    any_burst_ = false;
    last_write_ = false;
    queue_head_ = 0;
    queued_ = 0;
    stats_ = ChannelStats{};
    stats_.last_data = origin;
}

[[gnu::always_inline]] inline ChannelTiming::Plan
ChannelTiming::plan(std::uint32_t bi, std::uint32_t g, std::uint32_t row, bool write, Cycle ready) const {
    const Bank& b = banks_[bi];
    Cycle cas = std::max({ready, cas_ready_, cas_ready_bg_[g]});
    cas = write ? std::max(cas, write_ready_) : std::max({cas, read_ready_, read_ready_bg_[g]});
    if (b.open && b.row == row) return {0, std::max(cas, b.cas_ok), Hit};
    Cycle act = std::max(ready, b.act_ok);
    Outcome outcome = Miss;
    if (b.open) {
        outcome = Conflict;
        act = std::max(act, std::max(ready, b.pre_ok) + trp_);
    }
    act = std::max({act, act_ready_, act_ready_bg_[g], faw_[faw_next_]});
    return {act, std::max(cas, act + trcd_), outcome};
}

[[gnu::always_inline]] inline Cycle ChannelTiming::commit(const Plan& p, std::uint32_t bi, std::uint32_t g,
                                                          std::uint32_t row, bool write) {
    Bank& b = banks_[bi];
    if (p.outcome == Hit) {
        ++stats_.row_hits;
    } else {
        if (p.outcome == Miss)
            ++stats_.row_misses;
        else
            ++stats_.row_conflicts;
        b.open = true;
        b.row = row;
        b.cas_ok = p.act + trcd_;
        b.pre_ok = p.act + tras_;
        b.act_ok = p.act + trc_;
        act_ready_ = p.act + trrd_s_;
        act_ready_bg_[g] = p.act + trrd_l_;
        faw_[faw_next_] = p.act + tfaw_;
        faw_next_ = (faw_next_ + 1) & 3;
    }
    const Cycle cas = p.cas;
    cas_ready_ = cas + tccd_s_;
    cas_ready_bg_[g] = cas + tccd_l_;
    last_cas_ = cas;
    if (any_burst_ && write != last_write_) ++stats_.turnarounds;
    any_burst_ = true;
    last_write_ = write;
    Cycle end;
    if (write) {
        read_ready_ = cas + wtr_s_;
        read_ready_bg_[g] = cas + wtr_l_;
        b.pre_ok = std::max(b.pre_ok, cas + wr_);
        end = cas + cwl_ + bc_;
        ++stats_.write_bursts;
    } else {
        write_ready_ = cas + trtw_;
        b.pre_ok = std::max(b.pre_ok, cas + trtp_);
        end = cas + cl_ + bc_;
        ++stats_.read_bursts;
    }
    if (closed_page_) { // auto-precharge as soon as allowed
        b.open = false;
        b.act_ok = std::max(b.act_ok, b.pre_ok + trp_);
    }
    stats_.last_data = std::max(stats_.last_data, end);
    return end;
}

Cycle ChannelTiming::burst(std::uint32_t bi, std::uint32_t g, std::uint32_t row, bool write, Cycle ready) {
    for (;;) {
        const Plan p = plan(bi, g, row, write, ready);
        if (p.cas < next_refresh_) return commit(p, bi, g, row, write);
        refresh();
    }
}

void ChannelTiming::refresh() {
    Cycle start = next_refresh_;
    bool any_open = false;
    for (std::uint32_t i = 0; i < bank_count_; ++i)
        if (banks_[i].open) {
            any_open = true;
            start = std::max(start, banks_[i].pre_ok);
        }
    const Cycle end = start + (any_open ? trp_ : 0) + trfc_;
    for (std::uint32_t i = 0; i < bank_count_; ++i) {
        banks_[i].open = false;
        banks_[i].act_ok = std::max(banks_[i].act_ok, end);
    }
    ++stats_.refreshes;
    stats_.refresh_cycles += trfc_;
    next_refresh_ += trefi_;
}

void ChannelTiming::catch_up(Cycle t) {
    if (t < next_refresh_) return;
    refresh();
    if (t < next_refresh_) return;
    // Whole refresh intervals with every bank closed and nothing else to do.
    const std::uint64_t k = (t - next_refresh_) / trefi_ + 1;
    const Cycle last_end = next_refresh_ + (k - 1) * trefi_ + trfc_;
    for (std::uint32_t i = 0; i < bank_count_; ++i)
        banks_[i].act_ok = std::max(banks_[i].act_ok, last_end);
    stats_.refreshes += k;
    stats_.refresh_cycles += k * trfc_;
    next_refresh_ += k * trefi_;
}

void ChannelTiming::drain_before(Cycle t) {
    while (queued_ > 0) {
        const QueuedWrite& w = queue_[queue_head_];
        const Plan p = plan(w.bank, w.group, w.row, true, w.arrival);
        if (p.cas >= next_refresh_) {
            if (next_refresh_ >= t) return;
            refresh();
            continue;
        }
        if (p.cas >= t) return;
        commit(p, w.bank, w.group, w.row, true);
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
        const Cycle end = burst(w.bank, w.group, w.row, true, w.arrival);
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

Cycle ChannelTiming::access(Direction direction, std::uint64_t address, std::uint64_t length, Cycle arrival) {
    if (length == 0) return arrival;
    const std::uint32_t shift = map_.burst_shift();
    const std::uint64_t first = address >> shift;
    const std::uint64_t stop = ((address + length - 1) >> shift) + 1;
    if (queued_ > 0) drain_before(arrival);
    catch_up(arrival);
    if (direction == Direction::Read) {
        ++stats_.read_requests;
        stats_.read_bytes += length;
        const Cycle end = bursts(first, stop, false, arrival);
        stats_.read_latency.add(end - arrival);
        return end;
    }
    ++stats_.write_requests;
    stats_.write_bytes += length;
    if (stop - first > queue_.size()) { // stream straight to the DRAM
        if (queued_ > 0) drain_all();
        return bursts(first, stop, true, arrival);
    }
    Cycle accepted = arrival;
    for (std::uint64_t line = first; line < stop; ++line) {
        if (queued_ == queue_.size()) accepted = std::max(accepted, drain_all());
        const card::DramCoord c = map_.decode_burst(line);
        std::uint32_t tail = queue_head_ + queued_;
        if (tail >= queue_.size()) tail -= static_cast<std::uint32_t>(queue_.size());
        queue_[tail] = {c.bank_group * banks_per_group_ + c.bank, c.bank_group, c.row, arrival};
        ++queued_;
    }
    return accepted;
}

Cycle ChannelTiming::bursts(std::uint64_t line, std::uint64_t stop, bool write, Cycle ready) {
    Cycle end = ready;
    while (line < stop) {
        if (fast_ && run_mask_ != 0) {
            const std::uint64_t block_stop = std::min(stop, (line | run_mask_) + 1);
            if (block_stop - line >= 3 * period_) {
                end = run_block(line, block_stop, write, ready);
                line = block_stop;
                continue;
            }
        }
        end = burst(map_.decode_burst(line), write, ready);
        ++line;
    }
    return end;
}

Cycle ChannelTiming::run_block(std::uint64_t line, std::uint64_t stop, bool write, Cycle ready) {
    const std::uint64_t p = period_;
    Cycle end = ready;
    std::uint64_t done = 0;
    while (line < stop) {
        if (done < p || (line & (p - 1)) != 0 || stop - line < 2 * p) {
            end = burst(map_.decode_burst(line), write, ready);
            ++line;
            ++done;
            continue;
        }
        // One period, burst by burst, watching whether the state advances by a constant.
        const Cycle cas0 = cas_ready_;
        const std::array<Cycle, 8> bg0 = cas_ready_bg_;
        const Cycle last_before = last_cas_;
        const std::uint64_t hits0 = stats_.row_hits;
        const std::uint64_t refreshes0 = stats_.refreshes;
        std::uint32_t visited = 0;
        std::array<std::uint32_t, 8> bank_of{};
        for (std::uint64_t i = 0; i < p; ++i, ++line) {
            const card::DramCoord c = map_.decode_burst(line);
            visited |= 1u << c.bank_group;
            bank_of[c.bank_group] = c.bank_group * banks_per_group_ + c.bank;
            end = burst(c, write, ready);
        }
        done += p;
        const Cycle delta = cas_ready_ - cas0;
        bool periodic = stats_.row_hits - hits0 == p && stats_.refreshes == refreshes0 && delta > 0 &&
                        ready <= last_before && (write ? write_ready_ : read_ready_) <= last_before;
        for (std::uint32_t g = 0; periodic && g < 8; ++g) {
            if (!(visited >> g & 1)) continue;
            periodic = cas_ready_bg_[g] - bg0[g] == delta && banks_[bank_of[g]].cas_ok <= last_before &&
                       (write || read_ready_bg_[g] <= last_before);
        }
        if (!periodic) continue;
        // The recurrence is now cas_i = max(cas_{i-1} + tCCD_S, cas_{same group} + tCCD_L) with
        // nothing else binding, so every further period shifts the whole state by delta. Advance
        // the whole periods that stay before the next refresh.
        std::uint64_t k = (stop - line) / p;
        k = std::min<std::uint64_t>(k, (next_refresh_ - 1 - last_cas_) / delta);
        if (k == 0) continue;
        const Cycle shift = k * delta;
        cas_ready_ += shift;
        last_cas_ += shift;
        for (std::uint32_t g = 0; g < 8; ++g) {
            if (!(visited >> g & 1)) continue;
            cas_ready_bg_[g] += shift;
            const Cycle last_g = cas_ready_bg_[g] - tccd_l_;
            Bank& b = banks_[bank_of[g]];
            if (write) {
                b.pre_ok = std::max(b.pre_ok, last_g + wr_);
                read_ready_bg_[g] = last_g + wtr_l_;
            } else {
                b.pre_ok = std::max(b.pre_ok, last_g + trtp_);
            }
        }
        const std::uint64_t n = k * p;
        stats_.row_hits += n;
        if (write) {
            read_ready_ = last_cas_ + wtr_s_;
            stats_.write_bursts += n;
            end = last_cas_ + cwl_ + bc_;
        } else {
            write_ready_ = last_cas_ + trtw_;
            stats_.read_bursts += n;
            end = last_cas_ + cl_ + bc_;
        }
        stats_.last_data = std::max(stats_.last_data, end);
        line += n;
        done += n;
    }
    return end;
}

} // namespace cardsim::sim::memory
