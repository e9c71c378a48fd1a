#include "cli/sweep/host_times.hpp"

#include "cli/sweep/results.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>

namespace cardsim::cli::sweep {

namespace {

/// The `--machine` keys copied, in column order.
constexpr std::array<std::string_view, 10> host_keys{
    "host_total_seconds",      "host_load_seconds",   "host_compile_seconds", "host_compile_weights",
    "host_simulation_seconds", "host_setup_seconds",  "host_steps_seconds",   "host_golden_seconds",
    "host_reference_seconds",  "host_outputs_seconds"};

/// The column that sweeps before it lacked (their host.csv gains it, empty, when resumed).
constexpr std::string_view added_key = "host_setup_seconds";

/// The header of a host.csv written before `added_key` existed.
CsvRow header_without_added() {
    CsvRow h = HostTimes::header();
    h.erase(std::find(h.begin(), h.end(), added_key));
    return h;
}

} // namespace

CsvRow HostTimes::header() {
    CsvRow h{"point"};
    for (auto k : host_keys)
        h.emplace_back(k);
    return h;
}

HostTimes::HostTimes(std::filesystem::path path) : path_(std::move(path)) {
    if (!std::filesystem::exists(path_)) return;
    auto t = read_csv(path_, /*drop_partial_tail=*/true);
    if (t.header == header_without_added()) { // an older sweep's: its rows gain the column, empty
        t.header = header();
        const auto at = std::find(t.header.begin(), t.header.end(), added_key) - t.header.begin();
        for (auto& r : t.rows)
            r.insert(r.begin() + at, std::string());
    }
    if (t.header != header())
        throw Error(fmt::format("{}: its columns are not a sweep's host times ({}...); expected {}",
                                path_.string(), t.header.empty() ? "" : t.header.front(),
                                csv_line(header())));
    for (auto& r : t.rows) {
        std::size_t id = 0;
        try {
            id = std::stoul(r.front());
        } catch (const std::exception&) {
            throw Error(fmt::format("{}: `{}` is not a point id", path_.string(), r.front()));
        }
        rows_[id] = r;
    }
    // A record cut short (a crash mid-append) was dropped above: rewrite the file without it, or the
    // next append would be glued to the partial line (and an older file gets its new column).
    io::write_file_atomically(path_, csv_text(t));
}

void HostTimes::add(std::size_t id, std::string_view machine_output) {
    const auto kv = key_values(machine_output);
    CsvRow row{std::to_string(id)};
    bool any = false;
    for (auto k : host_keys) {
        auto it = kv.find(k);
        any = any || it != kv.end();
        row.push_back(it == kv.end() ? std::string() : it->second);
    }
    if (!any) return;
    if (!std::filesystem::exists(path_)) append_record(path_, csv_line(header()));
    append_record(path_, csv_line(row));
    rows_[id] = std::move(row);
}

void HostTimes::finish() const {
    if (rows_.empty()) return;
    CsvTable t;
    t.header = header();
    for (auto& [id, r] : rows_)
        t.rows.push_back(r);
    io::write_file_atomically(path_, csv_text(t));
}

} // namespace cardsim::cli::sweep
