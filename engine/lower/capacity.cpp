#include "engine/lower/capacity.hpp"

#include <fmt/core.h>

namespace cardsim::lower {

std::string gib(std::uint64_t bytes) {
    const double b = double(bytes);
    if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", b / double(1ull << 30));
    if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", b / double(1ull << 20));
    return fmt::format("{:.1f} KiB", b / 1024.0);
}

std::string Capacity::refusal() const {
    if (fits()) return {};
    const std::string card = fmt::format("the card's {} {} {}", channels,
                                         channels == 1 ? "channel holds" : "channels hold", gib(ddr_bytes));
    if (weights > ddr_bytes)
        return fmt::format("the weights need {} at {}; {}", gib(weights), weight_format, card);
    return fmt::format("the weights need {} at {}, the caches {} and the states {} for {} position{} of {} "
                       "sequence{}, the io and program {}: {} in all; {}",
                       gib(weights), weight_format, gib(caches), gib(state), positions,
                       positions == 1 ? "" : "s", seqs, seqs == 1 ? "" : "s", gib(io + program), gib(total()),
                       card);
}

std::string Capacity::text() const {
    auto pct = [&](std::uint64_t b) { return ddr_bytes ? 100.0 * double(b) / double(ddr_bytes) : 0.0; };
    std::string o = fmt::format("capacity: {} of the card's {} ({} channel{} of {}): {:.1f} %, {}\n",
                                gib(total()), gib(ddr_bytes), channels, channels == 1 ? "" : "s",
                                gib(channel_bytes), pct(total()), fits() ? "fits" : "does not fit");
    o += fmt::format("  weights ({}): {} ({:.1f} %)\n", weight_format, gib(weights), pct(weights));
    if (caches == 0 && state == 0) { // a model that keeps nothing between steps (an encoder)
        o += "  caches and states: none\n";
    } else {
        o += fmt::format("  caches ({} positions x {} sequence{}): {} ({:.1f} %)\n", positions, seqs,
                         seqs == 1 ? "" : "s", gib(caches), pct(caches));
        o += fmt::format("  states: {} ({:.1f} %)\n", gib(state), pct(state));
    }
    o += fmt::format("  io and program: {} ({:.1f} %)\n", gib(io + program), pct(io + program));
    return o;
}

} // namespace cardsim::lower
