#include "traces/report/timeline.hpp"

#include "traces/csv.hpp"
#include "traces/lexical.hpp"
#include "traces/report/html.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace cardsim::traces::report {
namespace {

namespace json = boost::json;

/// The cells of one CSV record (RFC 4180 quotes), `line` without its line feed.
std::vector<std::string> cells(std::string_view line) {
    std::vector<std::string> out(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
                out.back() += '"', ++i;
            else if (c == '"')
                quoted = false;
            else
                out.back() += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            out.emplace_back();
        } else {
            out.back() += c;
        }
    }
    return out;
}

/// Adds `bytes` spread evenly over cycles [from, to) to `bins` of `width` cycles each.
void spread(std::vector<double>& bins, double width, std::uint64_t from, std::uint64_t to, double amount) {
    if (to <= from) to = from + 1;
    const double per_cycle = amount / double(to - from);
    auto first = std::size_t(double(from) / width), last = std::size_t(double(to) / width);
    last = std::min(last, bins.size() - 1);
    for (std::size_t b = std::min(first, bins.size() - 1); b <= last; ++b) {
        const double lo = std::max(double(from), double(b) * width);
        const double hi = std::min(double(to), double(b + 1) * width);
        if (hi > lo) bins[b] += (hi - lo) * per_cycle;
    }
}

/// `cycles` as microseconds at `mhz`, as short text.
std::string micros(double cycles, double mhz) {
    return fmt::format("{:.2f} µs", cycles / mhz);
}

} // namespace

std::uint64_t run_cycles(const Trace& t) {
    std::uint64_t c = 0;
    for (auto& r : t.records)
        c = std::max(c, r.end);
    return c;
}

json::array command_columns(const Trace& trace) {
    const std::string csv = to_csv(trace);
    std::vector<std::vector<std::string>> rows;
    for (std::size_t at = 0; at < csv.size();) {
        auto end = csv.find('\n', at);
        if (end == std::string::npos) end = csv.size();
        rows.push_back(cells(std::string_view(csv).substr(at, end - at)));
        at = end + 1;
    }
    json::array columns;
    if (rows.empty()) return columns;
    const auto& header = rows.front();
    for (std::size_t c = 0; c < header.size(); ++c) {
        bool numeric = true;
        for (std::size_t r = 1; r < rows.size() && numeric; ++r) {
            const auto& v = c < rows[r].size() ? rows[r][c] : std::string();
            numeric = v.empty() || parse_u64(v).has_value();
        }
        json::object col;
        col["name"] = header[c];
        if (numeric) {
            json::array values;
            values.reserve(rows.size() - 1);
            for (std::size_t r = 1; r < rows.size(); ++r) {
                const auto& v = c < rows[r].size() ? rows[r][c] : std::string();
                if (v.empty())
                    values.push_back(nullptr);
                else
                    values.push_back(*parse_u64(v));
            }
            col["values"] = std::move(values);
        } else {
            std::map<std::string, std::size_t> code;
            json::array names, codes;
            codes.reserve(rows.size() - 1);
            for (std::size_t r = 1; r < rows.size(); ++r) {
                const auto& v = c < rows[r].size() ? rows[r][c] : std::string();
                auto [it, fresh] = code.emplace(v, names.size());
                if (fresh) names.push_back(json::value(v));
                codes.push_back(it->second);
            }
            col["names"] = std::move(names);
            col["codes"] = std::move(codes);
        }
        columns.push_back(std::move(col));
    }
    return columns;
}

json::object timeline_data(const Trace& trace, std::span<const std::string> operands,
                           std::span<const std::uint64_t> step_end) {
    json::object o;
    o["clock_mhz"] = trace.header.clock_mhz;
    o["cycles"] = run_cycles(trace);
    o["columns"] = command_columns(trace);
    json::array ops;
    for (auto& s : operands)
        ops.push_back(json::value(s));
    o["operands"] = std::move(ops);
    json::array steps;
    for (auto s : step_end)
        steps.push_back(s);
    o["step_end"] = std::move(steps);
    return o;
}

std::string occupancy_svg(const Trace& trace, int bins) {
    const std::uint64_t cycles = run_cycles(trace);
    const double mhz = trace.header.clock_mhz;
    std::vector<std::string> units;
    std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> spans;
    for (auto& r : trace.records) {
        if (!spans.count(r.unit)) units.push_back(r.unit);
        if (r.end > r.start) spans[r.unit].emplace_back(r.start, r.end);
    }
    const int label_w = 130, cell_h = 16, gap = 3, axis_h = 28;
    const int plot_w = 1100, w = label_w + plot_w + 10;
    const int h = int(units.size()) * (cell_h + gap) + axis_h;
    const double width = cycles ? double(cycles) / bins : 1.0; // cycles a cell
    const double cell_w = double(plot_w) / bins;
    std::string o = fmt::format("<svg class=\"occupancy\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
                                "role=\"img\" aria-label=\"unit occupancy over time\">\n",
                                w, h, w, h);
    for (std::size_t u = 0; u < units.size(); ++u) {
        auto& s = spans[units[u]];
        std::sort(s.begin(), s.end());
        std::vector<double> busy(std::size_t(bins), 0.0);
        std::uint64_t from = 0, to = 0, total = 0;
        auto flush = [&] {
            if (to > from) spread(busy, width, from, to, double(to - from)), total += to - from;
        };
        for (auto [a, b] : s) {
            if (a > to) {
                flush();
                from = a, to = b;
            } else {
                to = std::max(to, b);
            }
        }
        flush();
        const int y = int(u) * (cell_h + gap);
        o += fmt::format("<text class=\"lane\" x=\"{}\" y=\"{}\">{}</text>", label_w - 6, y + cell_h - 4,
                         escape(units[u]));
        o += fmt::format(
            "<rect class=\"strip\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" data-tip=\"{}\"/>", label_w,
            y, plot_w, cell_h,
            escape(fmt::format("{}: busy {:.1f} % of the run", units[u],
                               cycles ? 100.0 * double(total) / double(cycles) : 0.0)));
        // Consecutive cells of the same shade (to a per cent) are one rectangle.
        for (int b = 0; b < bins;) {
            const int pct = int(std::lround(100 * std::min(1.0, busy[std::size_t(b)] / width)));
            int e = b + 1;
            while (e < bins && int(std::lround(100 * std::min(1.0, busy[std::size_t(e)] / width))) == pct)
                ++e;
            if (pct > 0)
                o += fmt::format(
                    "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill-opacity=\"{:.2f}\" "
                    "class=\"busy\" data-tip=\"{}\"/>",
                    label_w + b * cell_w, y, (e - b) * cell_w, cell_h, 0.15 + 0.85 * pct / 100.0,
                    escape(fmt::format("{}\n{} to {}\nbusy {} %", units[u], micros(b * width, mhz),
                                       micros(e * width, mhz), pct)));
            b = e;
        }
        o += "\n";
    }
    const int ay = int(units.size()) * (cell_h + gap) + 14;
    for (double t : nice_ticks(0, double(cycles) / mhz, 8)) {
        const double x = label_w + (cycles ? t * mhz / double(cycles) : 0) * plot_w;
        if (x > label_w + plot_w + 0.5) continue;
        o += fmt::format("<text class=\"xtick\" x=\"{:.1f}\" y=\"{}\">{}</text>", x, ay, tick_text(t));
    }
    o += fmt::format("<text class=\"axisname\" x=\"{}\" y=\"{}\">time (µs)</text>\n", label_w - 6, ay);
    return o + "</svg>\n";
}

Chart bandwidth_chart(const Trace& trace, int bins) {
    const std::uint64_t cycles = run_cycles(trace);
    const double mhz = trace.header.clock_mhz;
    const double width = cycles ? double(cycles) / bins : 1.0;
    const bool ddr =
        !trace.records.empty() && trace.header.ddr_channels &&
        std::all_of(trace.records.begin(), trace.records.end(), [](auto& r) { return !r.ddr.empty(); });
    const std::size_t lines = ddr ? *trace.header.ddr_channels : 1;
    std::vector<std::vector<double>> bytes(lines, std::vector<double>(std::size_t(bins), 0.0));
    for (auto& r : trace.records) {
        if (ddr)
            for (std::size_t c = 0; c < lines; ++c)
                spread(bytes[c], width, r.start, r.end, double(r.ddr[c].read + r.ddr[c].written));
        else
            spread(bytes[0], width, r.start, r.end, double(r.read + r.written));
    }
    Chart chart;
    chart.title = "DDR bandwidth over time";
    chart.subtitle =
        ddr ? fmt::format("per channel, read + write; {} intervals of {:.2f} µs", bins, width / mhz)
            : "from the commands' operand bytes (the trace has no ddr fields)";
    chart.x_label = "time (µs)";
    chart.y_label = "GB/s";
    chart.width = 1240;
    chart.height = 360;
    const double seconds = width / (mhz * 1e6);
    for (std::size_t c = 0; c < lines; ++c) {
        Series s{ddr ? fmt::format("channel {}", c) : std::string("read + written")};
        for (int b = 0; b < bins; ++b) {
            const double gbs = bytes[c][std::size_t(b)] / seconds / 1e9;
            s.points.push_back({(b + 0.5) * width / mhz, gbs, "",
                                fmt::format("{}\n{} to {}\n{:.2f} GB/s", s.name, micros(b * width, mhz),
                                            micros((b + 1) * width, mhz), gbs)});
        }
        chart.series.push_back(std::move(s));
    }
    return chart;
}

} // namespace cardsim::traces::report
