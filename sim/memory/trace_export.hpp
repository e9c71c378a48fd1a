#pragma once
// Exporting the requests a DdrMemory receives as a trace another DRAM simulator reads: split into
// fixed-size requests, with card addresses or one channel's local addresses.

#include "engine/card/card_config.hpp"
#include "sim/memory/channel_interleave.hpp"
#include "sim/memory/ddr_memory.hpp"
#include "sim/memory/trace_format.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace cardsim::sim::memory {

/// What an exported trace holds: its format, the size its requests are split to, and which
/// addresses (every channel at card addresses, or one channel at its local addresses).
struct ExportSpec {
    TraceFormat format = TraceFormat::Cardsim;
    std::uint32_t request_bytes = 64;     ///< requests are split at multiples of this (a burst, 64 B)
    std::optional<std::uint32_t> channel; ///< none: all channels, card addresses; N: channel N only, local
};

/// Calls f(piece) for each piece of `request` split at the multiples of `size` bytes (the first
/// and last piece may be shorter when the request is not aligned): the pieces cover the request's
/// bytes exactly once, in address order, with its direction and time. `size` >= 1.
template <class F>
void split_request(const MemRequest& request, std::uint32_t size, F&& f) {
    std::uint64_t address = request.address;
    const std::uint64_t end = request.address + request.length;
    while (address < end) {
        const std::uint64_t next = (address / size + 1) * size;
        const std::uint64_t stop = next < end ? next : end;
        f(MemRequest{address, static_cast<std::uint32_t>(stop - address), request.direction,
                     request.time_ps});
        address = stop;
    }
}

/// Writes every request it observes, split by `split_request`, to a trace (a TraceWriter: to a
/// temporary file renamed by `close()`, flushed every 1 MiB, so a trace of any size streams to
/// disk). With a channel chosen, each request's part on that channel is written at its
/// channel-local addresses (the interleave's `locate`) and the other channels' parts are left
/// out. DRAMSim3's requests have no length: there a shorter piece is written as the aligned
/// request that holds it. It counts what it wrote and keeps the first arrival, so a caller can say what the
/// file holds.
class TraceExporter final : public RequestObserver {
public:
    /// `context` gives the formats' clocks (its request_bytes is replaced by the spec's).
    TraceExporter(const std::filesystem::path& path, const ExportSpec& spec, const card::DdrConfig& ddr,
                  TraceContext context);
    void observe(const MemRequest& request) override;
    /// Finishes the file (renamed into place); I/O failures are cardsim::Errors naming the file.
    void close() { writer_.close(); }
    /// Finishes the file into its temporary (TraceWriter::stage), for `publish` with its siblings.
    void stage() { writer_.stage(); }
    /// Renames the staged file into place.
    void publish() { writer_.publish(); }

    const ExportSpec& spec() const { return spec_; }
    const std::filesystem::path& path() const { return path_; }
    /// Requests written (after splitting) and their bytes.
    std::uint64_t requests() const { return requests_; }
    std::uint64_t bytes() const { return bytes_; }
    /// The earliest arrival observed, ps (0 before any).
    std::uint64_t first_ps() const { return first_ps_; }
    /// The writer, for its counters (bytes formatted, bytes on disk).
    const TraceWriter& writer() const { return writer_; }

private:
    void emit(const MemRequest& piece);
    std::filesystem::path path_;
    ExportSpec spec_;
    ChannelInterleave interleave_;
    TraceWriter writer_;
    std::uint64_t requests_ = 0;
    std::uint64_t bytes_ = 0;
    std::uint64_t first_ps_ = 0;
    bool any_ = false;
};

/// Where the fields of a DRAM address sit in the addresses of an exported trace, as a user sets
/// another simulator's address map: `row 19-34, bank 17-18, column 12-16, channel 10-11, column
/// 8-9, bankgroup 6-7, byte 0-5` (most significant first) for card addresses of the default card,
/// the same without the channel and shifted down for one channel's local addresses. Built from
/// the config's address map, interleave granule and channel count; a channel count or granule that
/// is not a power of two is said in words (the channel is then no bit field).
std::string describe_address_bits(const card::DdrConfig& ddr, bool card_addresses);

} // namespace cardsim::sim::memory
