#pragma once
// The timing core of one DDR4 channel: when each request's bursts complete, computed
// analytically burst by burst (no event per burst). Plain C++: the SystemC channel wraps it.

#include "engine/card/address_map.hpp"
#include "engine/card/card_config.hpp"
#include "sim/memory/channel_stats.hpp"
#include "sim/memory/mem_request.hpp"
#include "sim/memory/memory_clock.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace cardsim::sim::memory {

/// One channel's DRAM timing state: per bank the open row and the earliest ACTIVATE, READ/WRITE
/// and PRECHARGE; per bank group and rank the command spacings (tCCD_S/L, tRRD_S/L, tFAW), the
/// read/write turnaround (tWTR_S/L, tRTW), all-bank refresh (tRFC every tREFI) and the posted
/// write queue. Requests are served in the order `access` is called (column commands in order;
/// row commands of later bursts may issue early, as a controller with look-ahead does). Every
/// time is a memory-clock cycle. No allocation and no virtual call per request or burst.
///
/// A long request is split into 64 B bursts inside `access`. Within an aligned block of bursts
/// that stays in one row of one bank per bank group, once the spacing of the bursts repeats
/// exactly (a full period of row hits with every other constraint slack), the remaining whole
/// periods are advanced in closed form; the result is identical to the burst-by-burst loop (a test
/// asserts it), so weight streams of megabytes cost a few dozen steps per row.
class ChannelTiming {
public:
    explicit ChannelTiming(const card::DdrConfig& ddr);

    /// Times a request of `length` bytes at channel-local byte `address`, arriving at cycle
    /// `arrival`. Returns its completion: for a read, the cycle its last data beat ends; for a
    /// write, the cycle the controller accepted its last burst (posted; see `flush`), or, for a
    /// write larger than the write queue (or with no queue), the cycle its last beat is written.
    /// The address range must lie inside the channel (the caller checks).
    Cycle access(Direction direction, std::uint64_t address, std::uint64_t length, Cycle arrival);

    /// Issues every queued write; returns the cycle the last data beat of the channel ends.
    Cycle flush();

    /// Forgets all state and statistics: every bank closed and idle at cycle `origin`, the first
    /// refresh due at origin + tREFI.
    void reset(Cycle origin = 0);

    const ChannelStats& stats() const { return stats_; }
    /// Turns the closed-form advance of repeating row-hit runs on or off (on by default; off only
    /// to check that both give the same answers).
    void set_fast_path(bool on) { fast_ = on; }
    /// Bytes of the channel.
    std::uint64_t capacity() const { return capacity_; }
    std::uint32_t burst_bytes() const { return 1u << map_.burst_shift(); }
    const card::AddressMap& address_map() const { return map_; }

private:
    enum Outcome : std::uint8_t { Hit, Miss, Conflict };
    struct Bank {
        Cycle act_ok = 0; ///< earliest ACTIVATE (tRC, tRP after precharge, refresh)
        Cycle cas_ok = 0; ///< earliest READ/WRITE to the open row (tRCD)
        Cycle pre_ok = 0; ///< earliest PRECHARGE (tRAS, tRTP, write recovery)
        std::uint32_t row = 0;
        bool open = false;
    };
    /// What one burst would do: ACTIVATE at `act` (unless a hit), READ/WRITE at `cas`.
    struct Plan {
        Cycle act;
        Cycle cas;
        Outcome outcome;
    };
    struct QueuedWrite {
        std::uint32_t bank;
        std::uint32_t group;
        std::uint32_t row;
        Cycle arrival;
    };

    Plan plan(std::uint32_t bank, std::uint32_t group, std::uint32_t row, bool write, Cycle ready) const;
    Cycle commit(const Plan& p, std::uint32_t bank, std::uint32_t group, std::uint32_t row, bool write);
    /// Times one burst (refreshing first if it would cross the due refresh); returns its data end.
    Cycle burst(std::uint32_t bank, std::uint32_t group, std::uint32_t row, bool write, Cycle ready);
    Cycle burst(const card::DramCoord& c, bool write, Cycle ready) {
        return burst(c.bank_group * banks_per_group_ + c.bank, c.bank_group, c.row, write, ready);
    }
    /// Times bursts [first, stop) of one request; returns the last one's data end.
    Cycle bursts(std::uint64_t first, std::uint64_t stop, bool write, Cycle ready);
    /// As bursts, inside one aligned run block, advancing repeating periods in closed form.
    Cycle run_block(std::uint64_t line, std::uint64_t stop, bool write, Cycle ready);
    /// The all-bank refresh due at next_refresh_.
    void refresh();
    /// Performs every refresh due by cycle `t` (idle intervals in closed form).
    void catch_up(Cycle t);
    /// Issues queued writes whose WRITE would start before cycle `t` (idle bus time).
    void drain_before(Cycle t);
    /// Issues every queued write; returns the WRITE cycle of the first (when a slot freed).
    Cycle drain_all();

    card::AddressMap map_;
    std::uint64_t capacity_;
    std::uint32_t banks_per_group_;
    std::uint32_t bank_count_;
    bool closed_page_;
    bool fast_ = true;
    std::uint64_t run_mask_ = 0; ///< 2^run_bits - 1 when the closed-form advance applies, else 0
    std::uint64_t period_ = 1;   ///< bursts per bank-group period inside a run block

    // Timing parameters, cycles.
    Cycle cl_, cwl_, trcd_, trp_, tras_, trc_, tccd_s_, tccd_l_, trrd_s_, trrd_l_, tfaw_, bc_;
    Cycle trtw_, trtp_, wtr_s_, wtr_l_, wr_, trfc_, trefi_;

    // State.
    std::array<Bank, 64> banks_{};
    std::array<Cycle, 8> cas_ready_bg_{}, act_ready_bg_{}, read_ready_bg_{};
    std::array<Cycle, 4> faw_{};
    std::uint32_t faw_next_ = 0;
    Cycle cas_ready_ = 0, act_ready_ = 0, read_ready_ = 0, write_ready_ = 0;
    Cycle last_cas_ = 0;
    Cycle next_refresh_ = 0;
    bool any_burst_ = false;
    bool last_write_ = false;
    std::vector<QueuedWrite> queue_;
    std::uint32_t queue_head_ = 0;
    std::uint32_t queued_ = 0;
    ChannelStats stats_;
};

} // namespace cardsim::sim::memory
