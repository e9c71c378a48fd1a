#pragma once
// The bursts a channel's controller holds between arrival and service, with the buffer counters
// that bound them (per bank and direction, as DRAMSys' BufferCounter does).

#include "sim/memory/mem_request.hpp"
#include "sim/memory/memory_clock.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace cardsim::sim::memory {

/// One burst waiting in a controller: where it goes, which way, when it entered, whose it is.
struct QueuedBurst {
    std::uint64_t line = 0;    ///< channel-local burst number (address >> burst shift)
    std::uint64_t seq = 0;     ///< admission order: smaller is older
    std::uint64_t tag = 0;     ///< the tag of the request it belongs to
    Cycle accept = 0;          ///< cycle the burst entered the buffer
    std::uint32_t bank = 0;    ///< bank of the channel, rank-major (rank x banks + bank)
    std::uint32_t group = 0;   ///< bank group within its rank
    std::uint32_t rank = 0;    ///< rank of the channel
    std::uint32_t row = 0;     ///< row within its bank
    std::uint32_t request = 0; ///< the controller's slot of the request the burst belongs to
    std::uint32_t passed = 0;  ///< times a younger burst of its bank was served before it
    std::int32_t blocker = -1; ///< an older queued burst of the same line, other direction (a hazard)
    Direction direction = Direction::Read;
    std::int32_t dprev = -1, dnext = -1; ///< neighbours in the direction's queue, oldest first
};

/// The bursts a controller holds: a fixed pool of entries, each bank's listed in an array of its
/// own and each direction's threaded into a queue, oldest first (nothing is allocated after
/// construction). A bank's array is what the scheduler scans at every pick: contiguous indices,
/// so the loads of a scan do not wait on one another as a linked list's would. The counters bound
/// what it may hold: `bank_depth` reads per bank, and `write_capacity` posted writes per channel;
/// without posting (capacity 0) writes share the bank depth with reads. Indices stay valid until
/// the entry is erased.
class RequestBuffer {
public:
    static constexpr std::int32_t none = -1;

    RequestBuffer(std::uint32_t banks, std::uint32_t bank_depth, std::uint32_t write_capacity);

    /// Whether a burst of `direction` to `bank` fits now.
    bool has_space(std::uint32_t bank, Direction direction) const {
        if (direction == Direction::Write && write_capacity_ > 0) return queued_[1] < write_capacity_;
        return bank_entries_[bank] < bank_depth_;
    }
    /// Stores a burst at the young end of its bank's and its direction's queues; returns its index.
    std::int32_t push(const QueuedBurst& burst);
    /// Removes entry `i`.
    void erase(std::int32_t i);
    /// Forgets every entry.
    void clear();

    QueuedBurst& operator[](std::int32_t i) { return pool_[static_cast<std::size_t>(i)]; }
    const QueuedBurst& operator[](std::int32_t i) const { return pool_[static_cast<std::size_t>(i)]; }

    /// The entries of `bank`, oldest first.
    std::span<const std::int32_t> in_bank(std::uint32_t bank) const {
        return {bank_order_.data() + std::size_t{bank} * bank_room_, bank_count_[bank]};
    }
    /// The oldest entry of `bank`, or none.
    std::int32_t oldest_in_bank(std::uint32_t bank) const {
        return bank_count_[bank] ? bank_order_[std::size_t{bank} * bank_room_] : none;
    }
    /// The youngest entry of `bank`, or none.
    std::int32_t youngest_in_bank(std::uint32_t bank) const {
        return bank_count_[bank] ? bank_order_[std::size_t{bank} * bank_room_ + bank_count_[bank] - 1] : none;
    }
    /// Marks entry `i` as waiting for entry `blocker` (an older burst of its line, other direction).
    void block(std::int32_t i, std::int32_t blocker) {
        pool_[static_cast<std::size_t>(i)].blocker = blocker;
        ++blocked_[index(pool_[static_cast<std::size_t>(i)].direction)];
    }
    /// Entry `i` no longer waits.
    void unblock(std::int32_t i) {
        pool_[static_cast<std::size_t>(i)].blocker = none;
        --blocked_[index(pool_[static_cast<std::size_t>(i)].direction)];
    }
    /// Entries of `direction` waiting for an older burst of their line.
    std::uint32_t blocked(Direction direction) const { return blocked_[index(direction)]; }
    /// The oldest entry of `direction`, or none; follow `dnext` for younger ones.
    std::int32_t oldest(Direction direction) const { return dir_head_[index(direction)]; }
    /// Entries of `direction` in the channel.
    std::uint32_t queued(Direction direction) const { return queued_[index(direction)]; }
    /// Entries of `direction` in `bank`.
    std::uint32_t queued(std::uint32_t bank, Direction direction) const {
        return per_bank_[bank][index(direction)];
    }
    /// Entries of `bank` (either direction) in another row than `row`; kept for one row per bank
    /// (counted again when asked about another).
    std::uint32_t off_row(std::uint32_t bank, std::uint32_t row) const {
        return ref_row_[bank] == row ? off_row_[bank] : recount_off_row(bank, row);
    }
    /// Banks holding at least one entry of `direction`, one bit per bank.
    std::uint64_t banks_with(Direction direction) const { return mask_[index(direction)]; }
    bool empty() const { return queued_[0] + queued_[1] == 0; }
    std::uint32_t banks() const { return static_cast<std::uint32_t>(bank_count_.size()); }
    std::uint32_t bank_depth() const { return bank_depth_; }
    std::uint32_t write_capacity() const { return write_capacity_; }

private:
    /// 0 for reads, 1 for writes: the enumerators' own values (no compare).
    static std::size_t index(Direction d) {
        static_assert(static_cast<int>(Direction::Read) == 0 && static_cast<int>(Direction::Write) == 1);
        return static_cast<std::size_t>(d);
    }
    /// off_row counted afresh, `row` kept as the bank's reference row.
    std::uint32_t recount_off_row(std::uint32_t bank, std::uint32_t row) const;

    std::vector<QueuedBurst> pool_;
    std::vector<std::int32_t> free_;
    /// Each bank's entries, oldest first, in `bank_room_` places a bank (its reads' depth and every
    /// posted write), `bank_count_` of them used.
    std::vector<std::int32_t> bank_order_;
    std::vector<std::uint32_t> bank_count_;
    std::uint32_t bank_room_;
    std::vector<std::uint32_t> bank_entries_; ///< entries counted against the bank depth
    std::vector<std::array<std::uint32_t, 2>> per_bank_;
    std::array<std::int32_t, 2> dir_head_{none, none}, dir_tail_{none, none};
    std::array<std::uint32_t, 2> queued_{};
    std::array<std::uint32_t, 2> blocked_{};
    std::array<std::uint64_t, 2> mask_{};
    /// Per bank: the row off_row counts against, and its entries in other rows (a cache).
    mutable std::vector<std::uint32_t> ref_row_, off_row_;
    std::uint32_t bank_depth_;
    std::uint32_t write_capacity_;
};

// push and erase run once per burst: inline, for the controller's loop.

inline std::int32_t RequestBuffer::push(const QueuedBurst& burst) {
    const std::int32_t i = free_.back();
    free_.pop_back();
    QueuedBurst& e = pool_[static_cast<std::size_t>(i)];
    e = burst;
    const std::uint32_t b = e.bank;
    const std::size_t d = index(e.direction);
    bank_order_[std::size_t{b} * bank_room_ + bank_count_[b]++] = i;
    e.dprev = dir_tail_[d];
    e.dnext = none;
    if (e.dprev != none)
        pool_[static_cast<std::size_t>(e.dprev)].dnext = i;
    else
        dir_head_[d] = i;
    dir_tail_[d] = i;
    if (e.direction == Direction::Read || write_capacity_ == 0) ++bank_entries_[b];
    if (e.row != ref_row_[b]) ++off_row_[b];
    ++per_bank_[b][d];
    ++queued_[d];
    mask_[d] |= std::uint64_t{1} << b;
    return i;
}

inline void RequestBuffer::erase(std::int32_t i) {
    QueuedBurst& e = pool_[static_cast<std::size_t>(i)];
    const std::uint32_t b = e.bank;
    const std::size_t d = index(e.direction);
    // Plain loops: a bank holds a few bursts (one, mostly, under random traffic), too few for
    // std::find's unrolling or a call to memmove to pay.
    std::int32_t* at = bank_order_.data() + std::size_t{b} * bank_room_;
    std::int32_t* const last = at + --bank_count_[b];
    while (*at != i)
        ++at;
    for (; at != last; ++at)
        *at = at[1];
    if (e.dprev != none)
        pool_[static_cast<std::size_t>(e.dprev)].dnext = e.dnext;
    else
        dir_head_[d] = e.dnext;
    if (e.dnext != none)
        pool_[static_cast<std::size_t>(e.dnext)].dprev = e.dprev;
    else
        dir_tail_[d] = e.dprev;
    if (e.blocker != none) --blocked_[d];
    if (e.direction == Direction::Read || write_capacity_ == 0) --bank_entries_[b];
    if (e.row != ref_row_[b]) --off_row_[b];
    if (--per_bank_[b][d] == 0) mask_[d] &= ~(std::uint64_t{1} << b);
    --queued_[d];
    free_.push_back(i);
}

} // namespace cardsim::sim::memory
