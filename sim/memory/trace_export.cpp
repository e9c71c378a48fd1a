#include "sim/memory/trace_export.hpp"

#include "engine/card/address_map.hpp"
#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <vector>

namespace cardsim::sim::memory {
namespace {

/// The context the writer gets: the spec's request size is the formats' request size, so a whole
/// piece is one DRAMSim3 line and a DRAMSys line without a length.
TraceContext export_context(TraceContext context, const ExportSpec& spec) {
    context.request_bytes = spec.request_bytes;
    return context;
}

} // namespace

TraceExporter::TraceExporter(const std::filesystem::path& path, const ExportSpec& spec,
                             const card::DdrConfig& ddr, TraceContext context)
    : path_(path), spec_(spec), interleave_(ddr.channels, ddr.interleave_bytes, ddr.channel_bytes()),
      writer_(path, spec.format, export_context(context, spec)) {
    if (spec.request_bytes == 0) throw Error("a DDR trace's request size must be at least 1 byte");
    if (spec.channel && *spec.channel >= ddr.channels)
        throw Error(fmt::format("DDR trace of channel {}: the card has channels 0 to {}", *spec.channel,
                                ddr.channels - 1));
}

void TraceExporter::emit(const MemRequest& piece) {
    if (spec_.format == TraceFormat::DramSim3) {
        // DRAMSim3's requests have no length: a shorter piece goes as the whole request it lies in
        // (the burst the memory moves for it either way).
        MemRequest whole = piece;
        whole.address -= whole.address % spec_.request_bytes;
        whole.length = spec_.request_bytes;
        writer_.write(whole);
    } else {
        writer_.write(piece);
    }
    ++requests_;
    bytes_ += piece.length;
}

void TraceExporter::observe(const MemRequest& request) {
    if (!any_ || request.time_ps < first_ps_) first_ps_ = request.time_ps;
    any_ = true;
    const std::uint32_t size = spec_.request_bytes;
    if (!spec_.channel) {
        split_request(request, size, [&](const MemRequest& piece) { emit(piece); });
        return;
    }
    // One channel: its parts of the request, at local addresses (consecutive granules of one
    // channel are consecutive there, so a part is one local range; split pieces stay in it).
    if (request.length == 0) return;
    interleave_.for_each_piece(
        request.address, request.length,
        [&](std::uint32_t channel, std::uint64_t local, std::uint64_t, std::uint64_t n) {
            if (channel != *spec_.channel) return;
            split_request({local, static_cast<std::uint32_t>(n), request.direction, request.time_ps}, size,
                          [&](const MemRequest& piece) { emit(piece); });
        });
}

std::string describe_address_bits(const card::DdrConfig& ddr, bool card_addresses) {
    struct Field {
        std::string name;
        std::uint32_t low, bits;
    };
    const auto map = card::AddressMap::build(ddr);
    std::vector<Field> local{{"byte", 0, map.burst_shift()}};
    for (const auto& p : map.pieces())
        local.push_back({std::string(card::name(p.field)), map.burst_shift() + p.source_shift, p.bits});
    const bool bit_channels = std::has_single_bit(ddr.channels) && std::has_single_bit(ddr.interleave_bytes);
    std::vector<Field> fields;
    if (!card_addresses || ddr.channels == 1) {
        fields = local;
    } else if (!bit_channels) {
        return fmt::format("channel = (address / {}) mod {}, local address = (address / {} / {}) x {} + "
                           "address mod {}; local: {}",
                           ddr.interleave_bytes, ddr.channels, ddr.interleave_bytes, ddr.channels,
                           ddr.interleave_bytes, ddr.interleave_bytes, describe_address_bits(ddr, false));
    } else {
        // Local bits below the granule stay; those above move up by log2(channels), and the
        // channel takes the bits between.
        const auto g = static_cast<std::uint32_t>(std::countr_zero(ddr.interleave_bytes));
        const auto c = static_cast<std::uint32_t>(std::countr_zero(ddr.channels));
        for (const auto& f : local) {
            if (f.low + f.bits <= g)
                fields.push_back(f);
            else if (f.low >= g)
                fields.push_back({f.name, f.low + c, f.bits});
            else {
                fields.push_back({f.name, f.low, g - f.low});
                fields.push_back({f.name, g + c, f.low + f.bits - g});
            }
        }
        fields.push_back({"channel", g, c});
    }
    std::sort(fields.begin(), fields.end(), [](const Field& a, const Field& b) { return a.low > b.low; });
    std::string out;
    for (const auto& f : fields) {
        if (f.bits == 0) continue;
        out += fmt::format("{}{} {}", out.empty() ? "" : ", ", f.name,
                           f.bits == 1 ? fmt::format("{}", f.low)
                                       : fmt::format("{}-{}", f.low, f.low + f.bits - 1));
    }
    return out;
}

} // namespace cardsim::sim::memory
