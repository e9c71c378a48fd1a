#include "traces/bless.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "traces/diff.hpp"
#include "traces/reader.hpp"
#include "traces/system_diff.hpp"

#include <fmt/core.h>

namespace cardsim::traces {

Blessing prepare_bless(const std::filesystem::path& fresh, const std::filesystem::path& golden) {
    Blessing b{fresh, golden, io::read_file(fresh), {}, false};
    // Check the very bytes that will be installed.
    auto fresh_trace = parse_trace(b.bytes, fresh.string());
    std::error_code ec;
    if (!std::filesystem::exists(golden, ec)) {
        b.changes = fmt::format("{} does not exist yet: blessing creates it with {} commands\n",
                                golden.string(), fresh_trace.records.size());
        return b;
    }
    auto golden_bytes = io::read_file(golden);
    if (golden_bytes == b.bytes) {
        b.identical = true;
        b.changes =
            fmt::format("{} already holds exactly {}: nothing changes\n", golden.string(), fresh.string());
        return b;
    }
    std::optional<Trace> golden_trace;
    try {
        golden_trace = parse_trace(std::move(golden_bytes), golden.string());
    } catch (const Error& e) {
        b.changes =
            fmt::format("{} is not a valid trace ({}): blessing replaces it\n", golden.string(), e.what());
        return b;
    }
    try {
        if (is_system(*golden_trace, fresh_trace)) { // card by card (the strict comparison)
            DiffOptions strict;
            strict.start_tol_pct = 0.0;
            b.changes =
                to_text(diff_system(*golden_trace, fresh_trace, strict), golden.string(), fresh.string());
        } else
            b.changes = to_text(diff(*golden_trace, fresh_trace, 0.0), golden.string(), fresh.string());
    } catch (const Error& e) { // a valid trace of another kind (a system against one card, say)
        b.changes = fmt::format("{} cannot be compared with {} ({}): blessing replaces it\n", golden.string(),
                                fresh.string(), e.what());
    }
    return b;
}

void apply(const Blessing& b) {
    if (b.identical) return;
    io::write_file_atomically(b.golden, b.bytes);
}

} // namespace cardsim::traces
