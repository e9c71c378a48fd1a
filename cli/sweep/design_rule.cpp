#include "cli/sweep/design_rule.hpp"

#include "cli/sweep/table.hpp"
#include "engine/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace cardsim::cli::sweep {

namespace {

std::filesystem::path results_file(const std::filesystem::path& p) {
    return std::filesystem::is_directory(p) ? p / "results.csv" : p;
}

/// The config axes of a results table (every column between `model` and `status` but the run's
/// own axes, which the two sweeps do not share).
std::vector<std::size_t> config_axes(const ResultsTable& r) {
    std::vector<std::size_t> v;
    for (std::size_t c = 2; c < r.status; ++c)
        if (r.table.header[c].rfind("serve.", 0) != 0 && r.table.header[c] != "tokens" &&
            r.table.header[c] != "seqs")
            v.push_back(c);
    return v;
}

/// The number in a cell; a cardsim::Error naming the file, line and column when it is not one.
double cell_number(const ResultsTable& r, const std::filesystem::path& file, std::size_t row,
                   std::string_view col) {
    if (!r.has(col))
        throw Error(fmt::format("{}:1: no column `{}` (expected a design sweep's results: {})", file.string(),
                                col,
                                col == "tokens_per_second" || col.rfind("tpot", 0) == 0
                                    ? "a [serve] sweep, configs/sweeps/design_serve.toml"
                                    : "a prompt_len sweep with the fit columns, configs/sweeps/design.toml"));
    const auto& s = r.at(row, r.column(col));
    auto v = number(s);
    if (!v)
        throw Error(fmt::format("{}:{}: column `{}` is \"{}\"; expected a number", file.string(),
                                r.table.lines[row], col, s));
    return *v;
}

/// `a` relative to `b` as a signed percentage, `-3.1 %`.
std::string percent(double a, double b) {
    return fmt::format("{:+.1f} %", 100.0 * (a - b) / b);
}

} // namespace

std::vector<DesignPoint> join_design_sweeps(const std::filesystem::path& run,
                                            const std::filesystem::path& serve) {
    const auto run_file = results_file(run), serve_file = results_file(serve);
    const auto r = load_results(run_file), s = load_results(serve_file);
    const auto r_axes = config_axes(r), s_axes = config_axes(s);
    auto names = [](const ResultsTable& t, const std::vector<std::size_t>& axes) {
        std::vector<std::string> n;
        for (auto c : axes)
            n.push_back(t.table.header[c]);
        return n;
    };
    if (names(r, r_axes) != names(s, s_axes))
        throw Error(fmt::format("{}:1: axes ({}) differ from those of {} ({}); expected the same grid",
                                serve_file.string(), fmt::join(names(s, s_axes), ", "), run_file.string(),
                                fmt::join(names(r, r_axes), ", ")));
    for (auto col : {"ttft_seconds", "decode_tokens_per_second", "dsp", "alm", "fits"})
        if (!r.has(col))
            throw Error(
                fmt::format("{}:1: no column `{}`; expected a design sweep's run results (a prompt_len "
                            "sweep, configs/sweeps/design.toml)",
                            run_file.string(), col));
    if (!s.has("tpot_p99_ms"))
        throw Error(
            fmt::format("{}:1: no column `tpot_p99_ms`; expected a design sweep's serve results (a [serve] "
                        "sweep, configs/sweeps/design_serve.toml)",
                        serve_file.string()));
    auto key = [](const ResultsTable& t, const std::vector<std::size_t>& axes, std::size_t row) {
        std::vector<std::string> k;
        for (auto c : axes) {
            auto v = number(t.at(row, c));
            k.push_back(v ? fmt::format("{}", *v) : t.at(row, c));
        }
        return k;
    };
    std::map<std::vector<std::string>, std::size_t> served;
    for (auto i : s.ok)
        served.emplace(key(s, s_axes, i), i);
    std::vector<DesignPoint> points;
    for (auto i : r.ok) {
        auto found = served.find(key(r, r_axes, i));
        if (found == served.end()) continue;
        const auto j = found->second;
        DesignPoint p;
        p.point = static_cast<std::size_t>(cell_number(r, run_file, i, "point"));
        for (auto c : r_axes) {
            p.axes.emplace_back(r.table.header[c], r.at(i, c));
            if (r.table.header[c] == "clock.kernel_mhz")
                p.kernel_mhz = cell_number(r, run_file, i, "clock.kernel_mhz");
        }
        p.fits = r.fits(i) && s.fits(j);
        p.decode_tps = cell_number(r, run_file, i, "decode_tokens_per_second");
        p.ttft_s = cell_number(r, run_file, i, "ttft_seconds");
        p.prefill_tps = cell_number(r, run_file, i, "prefill_tokens_per_second");
        p.dsp = static_cast<std::uint64_t>(cell_number(r, run_file, i, "dsp"));
        p.alm = static_cast<std::uint64_t>(cell_number(r, run_file, i, "alm"));
        p.fmax_mhz = cell_number(r, run_file, i, "fmax_mhz");
        p.watts = cell_number(r, run_file, i, "watts");
        p.serve_tps = cell_number(s, serve_file, j, "tokens_per_second");
        p.tpot_p99_ms = cell_number(s, serve_file, j, "tpot_p99_ms");
        points.push_back(std::move(p));
    }
    return points;
}

DesignVerdict choose_design(const std::vector<DesignPoint>& points, const DesignRule& rule) {
    DesignVerdict v;
    v.why.assign(points.size(), "does not fit");
    auto eligible = [&](const DesignPoint& p) {
        return p.fits && !(p.kernel_mhz > 0 && p.kernel_mhz < rule.port_mhz);
    };
    double best_decode = 0;
    for (auto& p : points)
        if (eligible(p)) best_decode = std::max(best_decode, p.decode_tps);
    std::vector<std::size_t> kept;
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (!points[i].fits) continue;
        if (!eligible(points[i])) {
            v.why[i] = fmt::format("clock under {:g} MHz", rule.port_mhz);
            continue;
        }
        if (points[i].decode_tps < (1 - rule.decode_tolerance) * best_decode)
            v.why[i] = "decode " + percent(points[i].decode_tps, best_decode);
        else
            kept.push_back(i);
    }
    if (kept.empty()) return v;
    double best_serve = 0;
    for (auto i : kept)
        best_serve = std::max(best_serve, points[i].serve_tps);
    std::vector<std::size_t> tied;
    for (auto i : kept) {
        if (points[i].serve_tps < (1 - rule.tie_tolerance) * best_serve)
            v.why[i] = "serving " + percent(points[i].serve_tps, best_serve);
        else
            tied.push_back(i);
    }
    double best_ttft = points[tied.front()].ttft_s;
    for (auto i : tied)
        best_ttft = std::min(best_ttft, points[i].ttft_s);
    std::vector<std::size_t> last;
    for (auto i : tied) {
        if (points[i].ttft_s > (1 + rule.tie_tolerance) * best_ttft)
            v.why[i] = "TTFT " + percent(points[i].ttft_s, best_ttft);
        else
            last.push_back(i);
    }
    auto cheapest = *std::min_element(last.begin(), last.end(), [&](auto a, auto b) {
        const auto &pa = points[a], &pb = points[b];
        if (pa.dsp != pb.dsp) return pa.dsp < pb.dsp;
        if (pa.alm != pb.alm) return pa.alm < pb.alm;
        return pa.point < pb.point;
    });
    for (auto i : last)
        v.why[i] = i == cheapest ? "chosen"
                                 : (points[i].dsp != points[cheapest].dsp ? "more DSP blocks" : "more ALMs");
    v.chosen = cheapest;
    return v;
}

std::string design_table(const std::vector<DesignPoint>& points, const DesignVerdict& verdict,
                         const DesignRule& rule) {
    std::string out = "| point |";
    std::string rule_line = "|---|";
    if (!points.empty())
        for (auto& [name, value] : points.front().axes) {
            out += fmt::format(" {} |", name);
            rule_line += "---|";
        }
    out += " fits | DSP | ALM | Fmax MHz | watts | decode tok/s | TTFT s | prefill tok/s | serving tok/s | "
           "TPOT p99 ms | rule |\n";
    rule_line += "---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
    out += rule_line;
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& p = points[i];
        out += fmt::format("| {} |", p.point);
        for (auto& [name, value] : p.axes)
            out += fmt::format(" {} |", value);
        out += fmt::format(
            " {} | {} | {} | {:.0f} | {:.1f} | {:.2f} | {:.2f} | {:.1f} | {:.1f} | {:.2f} | {} |\n",
            p.fits ? "yes" : "no", p.dsp, p.alm, p.fmax_mhz, p.watts, p.decode_tps, p.ttft_s, p.prefill_tps,
            p.serve_tps, p.tpot_p99_ms, verdict.why[i]);
    }
    out += fmt::format(
        "\nrule: among the points that fit{}, decode within {:g} % of the best; then the best serving "
        "tokens/s, then the shortest TTFT (each within {:g} % counts as tied); then the fewest DSP "
        "blocks, then ALMs\n",
        rule.port_mhz > 0
            ? fmt::format(" at a kernel clock of at least {:g} MHz (where a channel's user port carries "
                          "its DRAM's peak)",
                          rule.port_mhz)
            : std::string(),
        100 * rule.decode_tolerance, 100 * rule.tie_tolerance);
    if (!verdict.chosen) {
        out += "chosen: none (no point fits)\n";
        return out;
    }
    const auto& c = points[*verdict.chosen];
    out += fmt::format(
        "chosen: point {}: decode {:.2f} tokens/s, TTFT {:.2f} s, serving {:.1f} tokens/s (p99 TPOT "
        "{:.2f} ms), {} DSP blocks\n",
        c.point, c.decode_tps, c.ttft_s, c.serve_tps, c.tpot_p99_ms, c.dsp);
    out += "as options:";
    for (auto& [name, value] : c.axes)
        out += fmt::format(" --set {}={}", name, value);
    out += "\n";
    return out;
}

} // namespace cardsim::cli::sweep
