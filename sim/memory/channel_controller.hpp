#pragma once
// One channel's memory controller: a request buffer, a scheduling policy and the timing core.

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_timing.hpp"
#include "sim/memory/fifo_ring.hpp"
#include "sim/memory/in_flight.hpp"
#include "sim/memory/request_buffer.hpp"
#include "sim/memory/scheduler.hpp"
#include "sim/memory/scheduler_frfcfs.hpp"

#include <array>
#include <limits>
#include <memory>
#include <vector>

namespace cardsim::sim::memory {

/// A request the controller has finished: when it arrived and completed, and where its time went.
struct ChannelCompletion {
    std::uint64_t tag = 0;
    Cycle arrival = 0;
    Cycle done = 0;
    StallSplit split;
};

/// One burst as the controller served it (the order of service, for tests and logs).
struct ServedBurst {
    std::uint64_t tag = 0; ///< the tag of the request it belongs to
    std::uint64_t line = 0;
    Cycle cas = 0; ///< its READ or WRITE
    Direction direction = Direction::Read;
    std::uint32_t passed = 0; ///< times it had been passed over
};

/// The controller of one DDR channel (plain C++; DdrChannel wraps it as a TLM target). Requests
/// enter through an in-order front end into the request buffer (a request for a full queue waits
/// there, and so do the requests behind it), the scheduler (`ddr.controller.scheduler`) picks
/// each bank's next burst, and of the banks' picks the one whose column command can go first is
/// timed by the core (ChannelTiming) and committed; bursts are committed in the order of their
/// column commands. An in-order scheduler needs no buffer: every request is timed when it
/// arrives, on the core's in-order path.
///
/// Time only moves forward: the controller commits a burst only when told that no request can
/// arrive before its column command (`step(limit)`), so a request that arrives later still
/// competes for every command after its arrival. Two ways in:
/// - `access` (blocking, as a unit's b_transport): the request is served with what the controller
///   holds and its completion returned at once (later calls cannot overtake it);
/// - `submit` (queued, as the trace player uses it): the request waits in the buffer; completions
///   come out of `take_finished` once `step` has served them.
/// A read alone in the controller (nothing else queued but writes below the high watermark, none
/// to its addresses) is served in address order by the core's in-order path with its closed-form
/// advance: what FR-FCFS does with it, at the cost of a weight stream on the in-order path.
class ChannelController {
public:
    static constexpr Cycle never = std::numeric_limits<Cycle>::max();

    explicit ChannelController(const card::DdrConfig& ddr);

    /// Times a request of `length` bytes at channel-local `address`, arriving at `arrival`, and
    /// returns its completion (the last read beat, or the write accepted). With `split`, adds where
    /// its time went.
    Cycle access(Direction direction, std::uint64_t address, std::uint64_t length, Cycle arrival,
                 StallSplit* split = nullptr);
    /// Queues a request (tagged `tag`) arriving at `arrival`; requests must be submitted in
    /// arrival order. Serves first whatever goes before `arrival`.
    void submit(Direction direction, std::uint64_t address, std::uint64_t length, Cycle arrival,
                std::uint64_t tag);
    /// The cycle of the controller's next action (a column command or a refresh), or `never`.
    Cycle next_event() {
        if (in_order_ || buffer_.empty()) return never;
        return event_valid_ ? event_.at : decide();
    }
    /// Performs the next action if it comes before `limit`; false when nothing does.
    bool step(Cycle limit);
    /// Performs every action before `limit`.
    void advance(Cycle limit) {
        while (step(limit)) {
        }
    }
    /// The earliest completion among served requests not yet taken, or `never`.
    Cycle earliest_finished() const { return finished_.empty() ? never : finished_.earliest().done; }
    /// Takes the served request with the earliest completion (there must be one).
    ChannelCompletion take_finished();
    /// Whether no request waits or is being served.
    bool idle() const { return admission_.empty() && buffer_.empty(); }

    /// Serves everything the controller holds and issues every queued write; returns the cycle the
    /// channel's last data beat ends.
    Cycle flush();
    /// Forgets all requests, state and statistics: idle at cycle `origin`.
    void reset(Cycle origin);

    const ChannelStats& stats() const { return core_.stats(); }
    ChannelTiming& core() { return core_; }
    const ChannelTiming& core() const { return core_; }
    const SchedulerIF& scheduler() const { return *scheduler_; }
    /// The user port the card's units reach the channel through: read data leaves through `read`,
    /// write data enters through `write` (lanes that are off: the controller is driven at the
    /// EMIF's own interface, as `ddr replay` drives it). A write burst is in the controller once
    /// its data has crossed; the in-order front end takes nothing else meanwhile.
    void set_port(const PortLane& read, const PortLane& write) { core_.set_port(read, write); }
    /// Appends every burst served through the buffer to `log` from now on (null to stop).
    void set_served_log(std::vector<ServedBurst>* log) { log_ = log; }
    const RequestBuffer& buffer() const { return buffer_; }
    /// Ranks every bank's pick by its whole plan at each decision instead of by its bank's part
    /// kept across decisions and its group's part (the same choices, slower; for the tests that
    /// check so).
    void set_exhaustive_ranking(bool on) {
        exhaustive_ = on;
        dirty(~std::uint64_t{0});
    }

private:
    /// A request in the controller: its bursts [next, stop) not yet in the buffer, its bursts in
    /// the buffer not yet served, and its completion and stall split so far.
    struct Request {
        std::uint64_t tag = 0;
        std::uint64_t next = 0, stop = 0;
        std::uint64_t length = 0;
        std::uint64_t bursts = 0; ///< stop - the first burst
        Cycle arrival = 0;
        Cycle done = 0;
        StallTrack track;
        std::uint32_t in_buffer = 0;
        Direction direction = Direction::Read;
        bool blocking = false;
        bool finished = false;
    };
    /// The next action, found by `next_event` and kept until the state changes.
    struct Event {
        enum Kind : std::uint8_t { None, Commit, Refresh } kind = None;
        Cycle at = never;
        std::int32_t entry = RequestBuffer::none;
        ChannelTiming::Plan plan;
        BurstTarget target;
        Cycle ready = 0;
        bool exempt = false;       ///< no later arrival can change it: may go before the limit
        bool ranked = false;       ///< the best of the banks' picks (not the oldest burst at once)
        std::uint32_t urgency = 0; ///< the scheduler's switch_urgency of the winner
        std::uint64_t seq = 0;
        Direction direction = Direction::Read;
    };

    /// A fresh request slot.
    std::uint32_t alloc_slot();
    std::uint32_t new_request(Direction direction, std::uint64_t address, std::uint64_t length, Cycle arrival,
                              std::uint64_t tag, bool blocking);
    /// Moves bursts from the front end into the buffer while they fit.
    void admit();
    /// Finds the next action (`event_` is not valid): updated or afresh; returns its cycle.
    Cycle decide();
    /// Computes the next action into `event_`.
    void find_event();
    /// The same, the scheduler having chosen to serve `dir`.
    void find_event_after_serving(Direction dir);
    /// `event_` becomes no action.
    void clear_event();
    /// Brings the kept next action up to date when bursts only entered since (see `touch`).
    bool update_event();
    /// `event_`, a Commit at or past its rank's due refresh, becomes that refresh.
    void refresh_first();
    /// Recomputes bank `b`'s pick in direction `dir`.
    void pick(std::uint32_t b, Direction dir);
    /// Brings bank `b`'s dirty pick up to date (its dirty mark is cleared): from its kept pick
    /// when one burst entered since and nothing else changed (see `incremental_`), else afresh.
    /// False when the pick is the kept one.
    bool repick(std::uint32_t b, Direction dir);
    /// Fills `c`, bank `b`'s pick, for queued burst `entry` decided at `ready`.
    void set_candidate(std::uint32_t b, std::int32_t entry, Cycle ready);
    /// A request is complete: its split is closed and (when queued) it joins the finished heap.
    void finish(std::uint32_t slot);
    /// Adds a completion to the finished ones.
    void push_finished(const ChannelCompletion& c) { finished_.insert(c); }
    /// Serves a one-burst read at once when the controller holds nothing and it is a row hit at
    /// the earliest column slot (nothing that arrives later could go before it); false otherwise.
    bool serve_at_once(std::uint64_t line, std::uint64_t length, Cycle arrival, std::uint64_t tag);
    /// Whether a read of bursts [first, stop) may take the in-order path now.
    bool alone(std::uint64_t first, std::uint64_t stop) const;
    /// The scheduler's switch_urgency of burst `entry` of bank `b` deciding at `ready` in direction
    /// `dir`: the kept pick's when it is that burst and up to date.
    std::uint32_t urgency_of(std::uint32_t b, std::int32_t entry, Cycle ready, Direction dir) const;
    /// What the scheduler sees of bank `b` deciding at `decision` in direction `dir`.
    BankMachine machine(std::uint32_t b, Cycle decision, Direction dir) const;
    BurstTarget target_of(const QueuedBurst& e) const { return {e.bank, e.group, e.rank, e.row}; }
    /// `call(scheduler)`: directly (inlined) when the scheduler is FR-FCFS, else through SchedulerIF.
    template <class Call>
    decltype(auto) policy(Call&& call) const {
        return frfcfs_ ? call(*frfcfs_) : call(*scheduler_);
    }

    /// A bank's pick, kept until its bank's queue, row or decision time, or the direction
    /// served, changes (it is then marked dirty), and its column command's lower bound.
    struct Candidate {
        std::int32_t entry = RequestBuffer::none;
        Cycle bound = 0;
        BurstTarget target;
        Cycle ready = 0;
        std::uint64_t seq = 0;
        Cycle own = 0;               ///< the bank's part of the bound (ChannelTiming::bank_floor)
        bool hit = false;            ///< a row hit in its bank
        std::uint16_t group_key = 0; ///< its rank, bank group and outcome, as an index
        std::uint32_t urgency = 0;   ///< the scheduler's switch_urgency (0 unless it ranks switches)
        std::uint64_t order = 0;     ///< the ranking key's low part (`order_of`), kept with the pick
    };
    /// The low part of a pick's ranking key, below its bound: the switch urgency in 6 bits, the
    /// seq in 52 (a burst's seq stays below 2^52), the bank in 6.
    static std::uint64_t order_of(std::uint32_t urgency, std::uint64_t seq, std::uint32_t b) {
        return std::uint64_t{urgency} << 58 | seq << 6 | b;
    }
    /// Sets bank `b`'s pick's switch urgency (and its ranking key).
    void set_urgency(std::uint32_t b, std::uint32_t urgency) {
        Candidate& c = cand_[b];
        c.urgency = urgency;
        c.order = order_of(urgency, c.seq, b);
    }
    /// Marks bank `b`'s pick for recomputation (all banks: `~0`).
    void dirty(std::uint64_t banks) {
        dirty_ |= banks;
        incremental_ &= ~banks;
        invalidate();
    }
    /// The next action must be found afresh.
    void invalidate() {
        event_valid_ = false;
        touched_ = 0;
    }
    /// Bursts entered banks `banks` and nothing else changed: the next action kept is updated
    /// with those banks' new picks (unless it was invalid already).
    void touch(std::uint64_t banks) {
        incremental_ = (incremental_ & ~banks) | (banks & ~dirty_);
        dirty_ |= banks;
        if (event_valid_) {
            event_valid_ = false;
            touched_ = banks;
        } else if (touched_ != 0) {
            touched_ |= banks;
        }
    }

    ChannelTiming core_;
    RequestBuffer buffer_;
    std::vector<Candidate> cand_;
    std::uint64_t dirty_ = ~std::uint64_t{0};
    /// Banks whose pick was clean when their youngest burst entered, the one change since (a
    /// second burst, or anything else that marks the bank dirty, clears the bank's bit): `repick`
    /// then only weighs that burst against the kept pick.
    std::uint64_t incremental_ = 0;
    Direction cand_dir_ = Direction::Read;
    std::unique_ptr<SchedulerIF> scheduler_;
    SchedulerFrFcfs* frfcfs_ = nullptr; ///< the scheduler, when it is FR-FCFS
    bool in_order_;
    bool posted_;
    std::uint32_t high_watermark_;
    std::uint32_t banks_per_rank_;
    std::vector<Request> requests_;
    std::vector<std::uint32_t> free_requests_;
    FifoRing<std::uint32_t> admission_; ///< requests not yet wholly in the buffer, in arrival order
    /// A completion's key: when it completed.
    struct DoneKey {
        Cycle operator()(const ChannelCompletion& c) const { return c.done; }
    };
    SortedRing<ChannelCompletion, DoneKey> finished_; ///< served requests not yet taken
    std::vector<Cycle> bank_free_;                    ///< per bank: the column command of its last burst
    /// per rank: refreshed since its last burst (a burst that still lands past the next refresh then
    /// goes, the next refresh postponed behind it, so a trefi just above trfc cannot livelock)
    std::vector<std::uint8_t> refreshed_;
    Cycle admit_floor_ = 0; ///< the front end admits in order, none before this cycle
    bool front_blocked_ = false;
    std::uint32_t front_writes_ = 0; ///< write requests not yet wholly in the buffer
    std::uint64_t seq_ = 0;
    Event event_;
    bool event_valid_ = false;
    bool exhaustive_ = false;
    bool ranks_switches_ = false; ///< the scheduler's switch_urgency orders picks of one cycle
    bool picks_sole_ = false;     ///< the scheduler picks a bank's sole burst (`picks_sole_burst`)
    std::uint64_t touched_ = 0;   ///< banks bursts entered since the kept next action (see `touch`)
    /// Per rank, bank group and outcome (hit or not): its part of the bound in this decision,
    /// computed when `group_seen_` holds the decision's stamp.
    std::array<Cycle, 4 * 8 * 2> group_floor_{};
    std::array<std::uint64_t, 4 * 8 * 2> group_seen_{};
    std::uint64_t group_stamp_ = 0;
    std::uint64_t cand_valid_ = 0; ///< banks whose pick (`cand_`) names a burst
    std::uint32_t groups_ = 0;     ///< bank groups per rank
    bool eager_groups_ = false;    ///< few groups: compute every group's parts at each decision
    std::vector<ServedBurst>* log_ = nullptr;
};

} // namespace cardsim::sim::memory
