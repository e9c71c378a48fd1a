#pragma once
// The timing core of one DDR4 channel: when each request's bursts complete, computed
// analytically burst by burst (no event per burst). Plain C++: the controller and the SystemC
// channel wrap it.

#include "engine/card/address_map.hpp"
#include "engine/card/card_config.hpp"
#include "sim/memory/channel_stats.hpp"
#include "sim/memory/command_bus.hpp"
#include "sim/memory/mem_request.hpp"
#include "sim/memory/memory_clock.hpp"
#include "sim/memory/port_lane.hpp"
#include "sim/memory/stall_split.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace cardsim::sim::memory {

/// The bank a burst goes to, as the core indexes it: `bank` counts over the channel (rank-major),
/// `group` is the bank group within the rank.
struct BurstTarget {
    std::uint32_t bank = 0;
    std::uint32_t group = 0;
    std::uint32_t rank = 0;
    std::uint32_t row = 0;
};

/// One channel's DRAM timing state: per bank the open row and the earliest ACTIVATE, READ/WRITE
/// and PRECHARGE; per bank group and rank the command spacings (tCCD_S/L, tRRD_S/L, tFAW), the
/// read/write turnaround (tWTR_S/L, tRTW), the rank-to-rank switch (tRTRS), all-bank refresh per
/// rank (tRFC every tREFI, ranks staggered by tREFI / ranks), the command bus (one command per
/// cycle) and the posted write queue of the in-order path. Every time is a memory-clock cycle.
/// No allocation and no virtual call per request or burst.
///
/// Two ways in. `access` is the in-order path (first come, first served): requests in the order
/// it is called, column commands in order, row commands of later bursts early (as a controller
/// with look-ahead does). `plan` / `commit` time one burst chosen by a scheduler
/// (ChannelController), which commits bursts in the order of their column commands.
///
/// A long request on the in-order path is split into 64 B bursts inside `access`. Within an
/// aligned block of bursts that stays in one row of one bank per bank group, once the spacing of
/// the bursts repeats exactly (a full period of row hits with every other constraint slack), the
/// remaining whole periods are advanced in closed form; the result is identical to the
/// burst-by-burst loop (a test asserts it), so weight streams of megabytes cost a few dozen steps
/// per row.
class ChannelTiming {
public:
    enum Outcome : std::uint8_t { Hit, Miss, Conflict };
    /// What one burst would do: PRECHARGE at `pre` (a conflict), ACTIVATE at `act` (unless a
    /// hit), READ/WRITE at `cas`; and the floors its column command passed (for the stall split).
    struct Plan {
        Cycle pre = 0;
        Cycle act = 0;
        Cycle cas = 0;
        Cycle bus = 0;      ///< column spacing of earlier bursts (tCCD_S, tCCD_L)
        Cycle turn = 0;     ///< read/write and rank turnaround
        Cycle prepared = 0; ///< the column command before the command bus placed it
        Outcome outcome = Hit;
    };

    explicit ChannelTiming(const card::DdrConfig& ddr);

    /// Times a request of `length` bytes at channel-local byte `address`, arriving at cycle
    /// `arrival`, on the in-order path. Returns its completion: for a read, the cycle its last
    /// data beat ends; for a write, the cycle the controller accepted its last burst (posted; see
    /// `flush`), or, for a write larger than the write queue (or with no queue), the cycle its
    /// last beat is written. The address range must lie inside the channel (the caller checks).
    /// With `split`, adds where the request's time went.
    Cycle access(Direction direction, std::uint64_t address, std::uint64_t length, Cycle arrival,
                 StallSplit* split = nullptr);

    /// Issues every queued write of the in-order path; returns the cycle the last data beat of
    /// the channel ends.
    Cycle flush();

    /// Forgets all state and statistics: every bank closed and idle at cycle `origin`, the first
    /// refresh of rank r due at origin + tREFI + r x tREFI / ranks.
    void reset(Cycle origin = 0);

    // The burst-level interface a scheduler's controller uses.

    /// Where channel burst `line` goes.
    BurstTarget target(std::uint64_t line) const {
        if (sliced_) { // each field one run of bits at the bottom of its value: a shift and a mask
            const auto field = [&](card::DramField f) {
                const FieldSlice& s = slices_[static_cast<std::size_t>(f)];
                return static_cast<std::uint32_t>((line >> s.shift) & s.mask);
            };
            const std::uint32_t group = field(card::DramField::BankGroup),
                                rank = field(card::DramField::Rank);
            return {rank * bank_count_ + group * banks_per_group_ + field(card::DramField::Bank), group, rank,
                    field(card::DramField::Row)};
        }
        const card::DramCoord c = map_.decode_burst(line);
        return {c.rank * bank_count_ + c.bank_group * banks_per_group_ + c.bank, c.bank_group, c.rank, c.row};
    }
    /// The timing of one burst to `t` that may start at `ready`, given everything committed.
    Plan plan(const BurstTarget& t, bool write, Cycle ready) const;
    /// A lower bound of plan(t, write, ready).cas: the plan without the command bus (which can only
    /// move commands later). Cheaper, for ranking a scheduler's candidates.
    Cycle earliest_cas(const BurstTarget& t, bool write, Cycle ready) const;
    /// earliest_cas split in two, `max(bank_floor(...), group_floor(...))` equal to it: the part
    /// that depends on the burst's bank alone (and on when it may start), and whether it is a
    /// row hit there ...
    Cycle bank_floor(const BurstTarget& t, Cycle ready, bool& hit) const;
    /// ... and the part shared by every burst of `group` in `rank` in that direction and outcome
    /// (column spacing, turnaround, rank switch, and for a miss the rank's ACTIVATE spacing). A
    /// scheduler ranking many banks' picks keeps the first per pick and computes the second per
    /// group.
    Cycle group_floor(std::uint32_t rank, std::uint32_t group, bool write, bool hit) const;
    /// group_floor for every bank group of `rank` at once, the parts they share computed once:
    /// `out[2 g]` for a miss in group g, `out[2 g + 1]` for a hit.
    void group_floors(std::uint32_t rank, bool write, Cycle* __restrict out) const;
    /// Commits a planned burst (its plan must be fresh: nothing committed since); closes the row
    /// after it when `close_after` (or the page policy is closed). Returns its last data beat: for a
    /// read, when that beat has crossed the user port's read lane (`set_port`).
    Cycle commit(const Plan& p, const BurstTarget& t, bool write, bool close_after = false);
    /// The floors of a plan, for `attribute`.
    BurstFloors floors(const Plan& p, std::uint32_t rank) const {
        return {refresh_due_[rank], refresh_end_[rank], p.bus, p.turn, p.prepared, p.cas};
    }
    /// Times bursts [first, stop) of one request in order (the closed-form advance included);
    /// returns the last one's data end. With `track`, splits their time.
    Cycle serve_in_order(std::uint64_t first, std::uint64_t stop, bool write, Cycle ready,
                         StallTrack* track = nullptr);
    /// The cycle rank `r`'s next refresh is due.
    Cycle next_refresh(std::uint32_t r) const { return next_refresh_[r]; }
    /// Performs the due refresh of rank `r`, and every later one due by cycle `t` (idle).
    void refresh_until(std::uint32_t r, Cycle t);
    /// Performs every refresh due by cycle `t` (idle intervals in closed form), all ranks.
    void catch_up(Cycle t);
    /// Performs every refresh of rank `r` due by cycle `t` (idle intervals in closed form).
    void catch_up_rank(std::uint32_t r, Cycle t);
    /// No column command of direction `write` can issue before this cycle, in any bank.
    Cycle column_floor(bool write) const;
    /// Whether `bank` has `row` open.
    bool row_open(std::uint32_t bank, std::uint32_t row) const {
        return banks_[bank].open && banks_[bank].row == row;
    }
    bool bank_open(std::uint32_t bank) const { return banks_[bank].open; }
    std::uint32_t open_row(std::uint32_t bank) const { return banks_[bank].row; }

    const ChannelStats& stats() const { return stats_; }
    /// The statistics, for the controller's own counters.
    ChannelStats& mutable_stats() { return stats_; }
    /// The user port the channel is reached through: read data leaves through `read` (every read
    /// completes when its last beat has crossed), write data enters through `write` (a write burst
    /// may go once its data has crossed; the in-order front end takes nothing else meanwhile).
    /// Lanes that are off: the channel is driven at the EMIF's own interface.
    void set_port(const PortLane& read, const PortLane& write) {
        read_port_ = read;
        write_port_ = write;
        read_port_.reset(last_cas_);
        write_port_.reset(last_cas_);
    }
    const PortLane& read_port() const { return read_port_; }
    PortLane& write_port() { return write_port_; }
    const PortLane& write_port() const { return write_port_; }
    /// The stall split of a posted write of `bursts` bursts accepted `waited` cycles after it
    /// arrived: its data crossing the write lane is data time, the rest (waiting for a slot) queueing.
    StallSplit posted_split(Cycle waited, std::uint64_t bursts) const {
        const Cycle data = write_port_.on() ? std::min(waited, write_port_.cycles(bursts)) : 0;
        return {.queueing = waited - data, .data = data};
    }
    /// The first cycle the in-order front end takes a request arriving at `arrival`: after the
    /// write data crossing the port ahead of it.
    Cycle front_free(Cycle arrival) const {
        return write_port_.on() ? std::max(arrival, write_port_.crossed()) : arrival;
    }
    /// Times write bursts [first, stop) of one request offered to the port at `offered`, in order
    /// (the closed-form advance included): each goes once its data has crossed the write lane.
    /// Returns the last one's data end.
    Cycle serve_writes_in_order(std::uint64_t first, std::uint64_t stop, Cycle offered,
                                StallTrack* track = nullptr);
    /// Turns the closed-form advance of repeating row-hit runs on or off (on by default; off only
    /// to check that both give the same answers).
    void set_fast_path(bool on) { fast_ = on; }
    /// Bytes of the channel.
    std::uint64_t capacity() const { return capacity_; }
    std::uint32_t burst_bytes() const { return 1u << map_.burst_shift(); }
    /// Memory cycles one burst occupies the data bus.
    Cycle burst_cycles() const { return bc_; }
    /// Cycles from a READ to its last data beat, and from a WRITE to its last data beat.
    Cycle read_latency() const { return cl_ + bc_; }
    Cycle write_latency() const { return cwl_ + bc_; }
    const card::AddressMap& address_map() const { return map_; }
    std::uint32_t ranks() const { return rank_count_; }
    /// The rank of the last column command.
    std::uint32_t last_rank() const { return last_rank_; }
    std::uint32_t banks() const { return rank_count_ * bank_count_; }

private:
    struct Bank {
        Cycle act_ok = 0; ///< earliest ACTIVATE (tRC, tRP after precharge, refresh)
        Cycle cas_ok = 0; ///< earliest READ/WRITE to the open row (tRCD)
        Cycle pre_ok = 0; ///< earliest PRECHARGE (tRAS, tRTP, write recovery)
        std::uint32_t row = 0;
        bool open = false;
    };
    /// The per-rank spacings: ACTIVATEs (tRRD_S / tRRD_L, tFAW), column commands per bank group
    /// (tCCD_L), write-to-read (tWTR_S / tWTR_L).
    struct Rank {
        std::array<Cycle, 8> cas_ready_bg{}, act_ready_bg{}, read_ready_bg{};
        std::array<Cycle, 4> faw{};
        std::uint32_t faw_next = 0;
        Cycle act_ready = 0, read_ready = 0;
    };
    struct QueuedWrite {
        BurstTarget target;
        Cycle arrival;
    };

    /// plan, with (`Bus`) or without the command bus.
    template <bool Bus>
    Plan plan_on(const BurstTarget& t, bool write, Cycle ready) const;
    /// Times one burst (refreshing first if it would cross its rank's due refresh); returns its
    /// data end.
    Cycle burst(const BurstTarget& t, bool write, Cycle ready, StallTrack* track);
    /// Times bursts [first, stop) of one request; returns the last one's data end.
    Cycle bursts(std::uint64_t first, std::uint64_t stop, bool write, Cycle ready, StallTrack* track);
    /// As bursts, inside one aligned run block, advancing repeating periods in closed form.
    Cycle run_block(std::uint64_t line, std::uint64_t stop, bool write, Cycle ready, StallTrack* track);
    /// The all-bank refresh of rank `r` due at next_refresh_[r].
    void refresh(std::uint32_t r);
    /// Issues queued writes whose WRITE would start before cycle `t` (idle bus time).
    void drain_before(Cycle t);
    /// Issues every queued write; returns the WRITE cycle of the first (when a slot freed).
    Cycle drain_all();

    /// The bits of one field of the address map, when they are one run: (line >> shift) & mask.
    struct FieldSlice {
        std::uint32_t shift = 0;
        std::uint64_t mask = 0;
    };

    card::AddressMap map_;
    std::array<FieldSlice, 5> slices_{}; ///< per DramField, when `sliced_`
    bool sliced_ = true;                 ///< every field is one run of bits (else map_.decode_burst)
    std::uint64_t capacity_;
    std::uint32_t banks_per_group_;
    std::uint32_t bank_count_;  ///< banks per rank
    std::uint32_t group_count_; ///< bank groups per rank (kept: a division per decision otherwise)
    std::uint32_t rank_count_;
    bool closed_page_;
    bool fast_ = true;
    std::uint64_t run_mask_ = 0; ///< 2^run_bits - 1 when the closed-form advance applies, else 0
    std::uint64_t period_ = 1;   ///< bursts per bank-group period inside a run block

    // Timing parameters, cycles.
    Cycle cl_, cwl_, trcd_, trp_, tras_, trc_, tccd_s_, tccd_l_, trrd_s_, trrd_l_, tfaw_, bc_;
    Cycle trtw_, trtp_, wtr_s_, wtr_l_, wr_, trfc_, trefi_, trtrs_;

    // State.
    std::array<Bank, 64> banks_{};
    std::array<Rank, 4> rank_{};
    std::array<Cycle, 4> next_refresh_{}, refresh_end_{};
    std::array<Cycle, 4> refresh_due_{}; ///< the cycle the last refresh of each rank was due
    Cycle cas_ready_ = 0, write_ready_ = 0;
    Cycle switch_ready_ = 0;   ///< earliest column command of another rank than the last (tRTRS)
    Cycle write_data_end_ = 0; ///< the last write's last beat (a read of another rank waits for it)
    Cycle read_data_end_ = 0;  ///< the last read's last beat (a write of another rank waits for it)
    Cycle last_cas_ = 0;
    PortLane read_port_;  ///< the user port's read lane (off unless set)
    PortLane write_port_; ///< the user port's write lane (off unless set)
    std::uint32_t last_rank_ = 0, last_write_rank_ = 0, last_read_rank_ = 0;
    bool any_burst_ = false;
    bool any_write_ = false;
    bool any_read_ = false;
    bool last_write_ = false;
    CommandBus command_bus_;
    std::vector<QueuedWrite> queue_;
    std::uint32_t queue_head_ = 0;
    std::uint32_t queued_ = 0;
    ChannelStats stats_;
};

// plan and commit run once per burst on every path: inline, for the controller's loop too.

template <bool Bus>
[[gnu::always_inline]] inline ChannelTiming::Plan ChannelTiming::plan_on(const BurstTarget& t, bool write,
                                                                         Cycle ready) const {
    const auto slot = [this](Cycle c) { return Bus ? command_bus_.free_at_or_after(c) : c; };
    const auto column_slot = [this](Cycle c) { return Bus ? command_bus_.free_for_column(c) : c; };
    const Bank& b = banks_[t.bank];
    const Rank& rk = rank_[t.rank];
    const std::uint32_t g = t.group;
    Plan p;
    p.bus = std::max(cas_ready_, rk.cas_ready_bg[g]);
    p.turn = write ? write_ready_ : std::max(rk.read_ready, rk.read_ready_bg[g]);
    if (t.rank != last_rank_) {
        p.turn = std::max(p.turn, switch_ready_);
        // The data bus hands over between ranks: this burst's data starts tRTRS after the last
        // data of the other direction from another rank.
        if (!write && any_write_ && t.rank != last_write_rank_ && write_data_end_ + trtrs_ > cl_)
            p.turn = std::max(p.turn, write_data_end_ + trtrs_ - cl_);
        if (write && any_read_ && t.rank != last_read_rank_ && read_data_end_ + trtrs_ > cwl_)
            p.turn = std::max(p.turn, read_data_end_ + trtrs_ - cwl_);
    }
    Cycle cas = std::max({ready, p.bus, p.turn});
    if (b.open && b.row == t.row) {
        p.outcome = Hit;
        cas = std::max(cas, b.cas_ok);
    } else {
        Cycle act = std::max(ready, b.act_ok);
        p.outcome = Miss;
        if (b.open) {
            p.outcome = Conflict;
            p.pre = slot(std::max(ready, b.pre_ok));
            act = std::max(act, p.pre + trp_);
        }
        act = std::max({act, rk.act_ready, rk.act_ready_bg[g], rk.faw[rk.faw_next]});
        p.act = slot(act);
        cas = std::max(cas, p.act + trcd_);
    }
    p.prepared = cas;
    p.cas = column_slot(cas);
    return p;
}

[[gnu::always_inline]] inline ChannelTiming::Plan ChannelTiming::plan(const BurstTarget& t, bool write,
                                                                      Cycle ready) const {
    return plan_on<true>(t, write, ready);
}

inline Cycle ChannelTiming::earliest_cas(const BurstTarget& t, bool write, Cycle ready) const {
    return plan_on<false>(t, write, ready).cas;
}

inline Cycle ChannelTiming::bank_floor(const BurstTarget& t, Cycle ready, bool& hit) const {
    const Bank& b = banks_[t.bank];
    hit = b.open && b.row == t.row;
    if (hit) return std::max(ready, b.cas_ok);
    Cycle act = std::max(ready, b.act_ok);
    if (b.open) act = std::max(act, std::max(ready, b.pre_ok) + trp_);
    return act + trcd_;
}

inline Cycle ChannelTiming::group_floor(std::uint32_t rank, std::uint32_t group, bool write, bool hit) const {
    const Rank& rk = rank_[rank];
    Cycle floor = std::max(cas_ready_, rk.cas_ready_bg[group]);
    floor = std::max(floor, write ? write_ready_ : std::max(rk.read_ready, rk.read_ready_bg[group]));
    if (rank != last_rank_) {
        floor = std::max(floor, switch_ready_);
        if (!write && any_write_ && rank != last_write_rank_ && write_data_end_ + trtrs_ > cl_)
            floor = std::max(floor, write_data_end_ + trtrs_ - cl_);
        if (write && any_read_ && rank != last_read_rank_ && read_data_end_ + trtrs_ > cwl_)
            floor = std::max(floor, read_data_end_ + trtrs_ - cwl_);
    }
    if (!hit)
        floor =
            std::max(floor, std::max({rk.act_ready, rk.act_ready_bg[group], rk.faw[rk.faw_next]}) + trcd_);
    return floor;
}

inline void ChannelTiming::group_floors(std::uint32_t rank, bool write, Cycle* __restrict out) const {
    const Rank& rk = rank_[rank];
    Cycle shared = std::max(cas_ready_, write ? write_ready_ : rk.read_ready);
    if (rank != last_rank_) {
        shared = std::max(shared, switch_ready_);
        if (!write && any_write_ && rank != last_write_rank_ && write_data_end_ + trtrs_ > cl_)
            shared = std::max(shared, write_data_end_ + trtrs_ - cl_);
        if (write && any_read_ && rank != last_read_rank_ && read_data_end_ + trtrs_ > cwl_)
            shared = std::max(shared, read_data_end_ + trtrs_ - cwl_);
    }
    const Cycle act = std::max(rk.act_ready, rk.faw[rk.faw_next]);
    for (std::uint32_t g = 0; g < group_count_; ++g) {
        Cycle hit = std::max(shared, rk.cas_ready_bg[g]);
        if (!write) hit = std::max(hit, rk.read_ready_bg[g]);
        out[2 * g + 1] = hit;
        out[2 * g] = std::max(hit, std::max(act, rk.act_ready_bg[g]) + trcd_);
    }
}

[[gnu::always_inline]] inline Cycle ChannelTiming::commit(const Plan& p, const BurstTarget& t, bool write,
                                                          bool close_after) {
    Bank& b = banks_[t.bank];
    Rank& rk = rank_[t.rank];
    const std::uint32_t g = t.group;
    if (p.outcome == Hit) {
        ++stats_.row_hits;
    } else {
        if (p.outcome == Miss) {
            ++stats_.row_misses;
        } else {
            ++stats_.row_conflicts;
            command_bus_.take_row(p.pre);
        }
        command_bus_.take_row(p.act);
        b.open = true;
        b.row = t.row;
        b.cas_ok = p.act + trcd_;
        b.pre_ok = p.act + tras_;
        b.act_ok = p.act + trc_;
        rk.act_ready = p.act + trrd_s_;
        rk.act_ready_bg[g] = p.act + trrd_l_;
        rk.faw[rk.faw_next] = p.act + tfaw_;
        rk.faw_next = (rk.faw_next + 1) & 3;
    }
    const Cycle cas = p.cas;
    command_bus_.take(cas);
    cas_ready_ = cas + tccd_s_;
    rk.cas_ready_bg[g] = cas + tccd_l_;
    last_cas_ = cas;
    if (any_burst_) {
        if (write != last_write_) ++stats_.turnarounds;
        if (t.rank != last_rank_) ++stats_.rank_switches;
    }
    any_burst_ = true;
    last_write_ = write;
    last_rank_ = t.rank;
    switch_ready_ = cas + bc_ + trtrs_;
    Cycle end;
    if (write) {
        rk.read_ready = cas + wtr_s_;
        rk.read_ready_bg[g] = cas + wtr_l_;
        b.pre_ok = std::max(b.pre_ok, cas + wr_);
        end = cas + cwl_ + bc_;
        write_data_end_ = end;
        last_write_rank_ = t.rank;
        any_write_ = true;
        ++stats_.write_bursts;
    } else {
        write_ready_ = cas + trtw_;
        b.pre_ok = std::max(b.pre_ok, cas + trtp_);
        end = cas + cl_ + bc_;
        read_data_end_ = end;
        last_read_rank_ = t.rank;
        any_read_ = true;
        ++stats_.read_bursts;
    }
    if (closed_page_ || close_after) { // auto-precharge as soon as allowed
        b.open = false;
        b.act_ok = std::max(b.act_ok, b.pre_ok + trp_);
    }
    stats_.last_data = std::max(stats_.last_data, end);
    if (!write && read_port_.on()) return read_port_.pass(end);
    return end;
}

} // namespace cardsim::sim::memory
