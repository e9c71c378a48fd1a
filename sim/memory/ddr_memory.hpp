#pragma once
// The card's DDR memory as one TLM-2.0 target: routes each transaction to its channels.

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_interleave.hpp"
#include "sim/memory/ddr_channel.hpp"
#include "sim/memory/mem_request.hpp"
#include "sim/memory/port_lane.hpp"
#include "sim/memory/sparse_store.hpp"

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

namespace cardsim::sim::memory {

/// Sees every transaction the memory receives (e.g. to record a replayable trace).
class RequestObserver {
public:
    virtual ~RequestObserver() = default;
    /// A request arriving at `request.time_ps`: the memory-clock edge at or after
    /// sc_time_stamp() + delay, in ps.
    virtual void observe(const MemRequest& request) = 0;
};

/// A request served through the memory's queued port: when it arrived and completed, and where
/// its time went (of a request split over channels, the part that completed last).
struct MemCompletion {
    std::uint64_t tag = 0;
    Cycle arrival = 0;
    Cycle done = 0;
    StallSplit split;
};

/// The DDR memory top (DRAMSys style): any number of initiators (units, players) bind their
/// initiator sockets to `socket`; a transaction addresses the card's DDR space (0 .. channels x
/// capacity) and is routed by the channel interleave. A transaction inside one granule is
/// forwarded to its channel with the address made channel-local; a larger one (a weight stream
/// of megabytes) is split into one timing-only transaction per channel it touches — each a
/// contiguous channel-local range — and completes when the last channel does. The memory holds the
/// bytes of the whole address space in one sparse store (card addresses, not channel-local), so a
/// transaction's data is one copy, and a DMI request (`get_direct_mem_ptr`) is granted for the
/// whole space, read and write: units then reach operands in place and time them with
/// data-less transactions. A lent range (`lend`: the image's weights, held once) is granted apart,
/// read-only, and the rest of the space around it read and write. The annotated delay is the
/// time to completion, as in DdrChannel. Out-of-range addresses, byte enables and short streaming
/// widths are TLM error responses; `describe_error` turns one into a sentence.
///
/// Beside the blocking TLM socket (each transaction served with what the controllers hold when
/// it arrives), the queued port (`submit`, `next_completion`) lets an initiator with many
/// requests in flight hand them over without waiting for each: the controllers then reorder over
/// all of them, and completions come back in time order. It runs without events (the trace
/// player uses it); one initiator uses it at a time, submitting in arrival order.
class DdrMemory : public sc_core::sc_module {
public:
    tlm_utils::multi_passthrough_target_socket<DdrMemory> socket;

    /// The DDR of `ddr`; it keeps data for its first `data_bytes` (the whole address space by
    /// default; a card passes what its program's regions span, a replay 0), so a run reserves host
    /// address space for what it can touch, not for the configured capacity. Timing covers the
    /// whole address space; data past `data_bytes` is an address error.
    DdrMemory(const sc_core::sc_module_name& name, const card::DdrConfig& ddr,
              std::uint64_t data_bytes = ~std::uint64_t{0});

    std::uint32_t channels() const { return static_cast<std::uint32_t>(channels_.size()); }
    DdrChannel& channel(std::uint32_t i) {
        stale_ = ~std::uint64_t{0}; // the caller may change it
        return *channels_[i];
    }
    const DdrChannel& channel(std::uint32_t i) const { return *channels_[i]; }
    const ChannelInterleave& interleave() const { return interleave_; }
    /// Bytes of the whole DDR address space.
    std::uint64_t size() const { return interleave_.total_bytes(); }
    /// Bytes from address 0 that hold data (`data_bytes`, at most `size`).
    std::uint64_t data_size() const { return data_size_; }
    const MemoryClock& clock() const { return channels_[0]->time_base().clock(); }

    /// Issues every channel's queued writes; returns the cycle the last data beat of any channel
    /// ends (the memory is idle from then on).
    Cycle flush();
    /// Every channel is reached through a user port whose lanes (each direction) are `lane`
    /// (`user_port_lane`); unset, the channels are driven at the EMIF's own interface.
    void set_user_port(const PortLane& lane);
    /// Resets every channel's timing and statistics to idle at cycle `origin`; keeps the data.
    void reset(Cycle origin);
    /// Writes bytes without timing (loading the DDR image).
    void load(std::uint64_t address, std::span<const std::byte> bytes);
    /// Commits the host pages of [address, address + length) before a load writes them all (see
    /// SparseStore::prepare); the bytes do not change.
    void prepare(std::uint64_t address, std::uint64_t length);
    /// Makes the bytes [address, address + bytes.size()) (inside the data) read `bytes` in place,
    /// kept alive by `owner`, instead of copying them: a card's weights are then held once, by the
    /// compiled image. The range stays lent while only read: reads and read-only DMI grants go to
    /// `bytes`, which the owner keeps unchanged meanwhile. The first write anywhere in it (by a
    /// transaction, a DMI request for writing, `load`) copies the lent bytes into the memory's own
    /// store, ends the loan and invalidates every DMI grant, so a write never reaches `bytes`.
    /// What the store held in the range before is hidden while it is lent. A second loan first
    /// ends the one before (as a write would).
    void lend(std::uint64_t address, std::span<const std::byte> bytes, std::shared_ptr<const void> owner);
    /// True while a range is lent (no write has reached it yet).
    bool lending() const { return lent_.has_value(); }
    /// Reads bytes without timing.
    void peek(std::uint64_t address, std::span<std::byte> bytes) const;
    /// The bytes of the whole address space.
    const SparseStore& store() const { return store_; }
    /// Every later transaction is shown to `observer` (null to stop).
    void set_observer(RequestObserver* observer) { observer_ = observer; }
    /// A sentence for a failed transaction: what, where, and why.
    std::string describe_error(const tlm::tlm_generic_payload& gp) const;

    /// Queues `request` (timing only), arriving at memory cycle `arrival`, tagged `tag`. Returns
    /// TLM_OK_RESPONSE, or TLM_ADDRESS_ERROR_RESPONSE for a request outside the DDR (not queued).
    tlm::tlm_response_status submit(const MemRequest& request, Cycle arrival, std::uint64_t tag);
    /// Serves until the queued request that completes first is complete and hands it over; false
    /// when no request is queued.
    bool next_completion(MemCompletion& out);
    /// Hands over a queued request that is already complete (not necessarily the first); false
    /// when there is none.
    bool take_served(MemCompletion& out);

private:
    void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    unsigned int transport_dbg(int id, tlm::tlm_generic_payload& gp);
    bool get_direct_mem_ptr(int id, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);

    tlm_utils::multi_passthrough_initiator_socket<DdrMemory> to_channel_;
    std::vector<std::unique_ptr<DdrChannel>> channels_;
    ChannelInterleave interleave_;
    std::uint64_t data_size_;
    SparseStore store_;
    /// A lent range (`lend`): its address, its bytes in place, and what keeps them alive.
    struct Lent {
        std::uint64_t address = 0;
        std::span<const std::byte> bytes;
        std::shared_ptr<const void> owner;
        bool overlaps(std::uint64_t a, std::uint64_t n) const {
            return n > 0 && a < address + bytes.size() && address < a + n;
        }
    };
    std::optional<Lent> lent_;
    bool granted_ = false; ///< a DMI grant was made since the last invalidation
    /// Copies the lent bytes into the store, ends the loan and invalidates every DMI grant.
    void end_loan();
    /// Tells every initiator its DMI grants end (when any were made).
    void invalidate_grants();
    /// Reads [address, address + out.size()) of the data: the lent range from its bytes, the rest
    /// from the store.
    void read_data(std::uint64_t address, std::span<std::byte> out) const;
    /// Writes `in` at `address` into the store, ending a loan it reaches first.
    void write_data(std::uint64_t address, std::span<const std::byte> in);
    /// A request of the queued port until all its channel parts complete.
    struct Ticket {
        std::uint64_t tag = 0;
        Cycle arrival = 0;
        Cycle done = 0;
        StallSplit split;
        std::uint32_t parts = 0;
    };
    /// Merges a channel's completed part into its ticket; true (and `out`) when the request is done.
    bool merge(const ChannelCompletion& part, MemCompletion& out);

    std::vector<Ticket> tickets_;
    std::vector<std::uint32_t> free_tickets_;
    tlm::tlm_generic_payload part_;                ///< reused for per-channel parts
    std::vector<ChannelInterleave::Range> ranges_; ///< reused per split request
    std::vector<Cycle> finished_at_, acts_at_;     ///< next_completion's view of each channel, kept
    /// Channels whose view may be out of date (one bit each; every bit past 64 channels): those
    /// the queued port submitted to since, all of them after anything else reached the channels.
    std::uint64_t stale_ = ~std::uint64_t{0};
    RequestObserver* observer_ = nullptr;
};

} // namespace cardsim::sim::memory
