#include "cli/report_sweep.hpp"

#include "cli/sweep/csv.hpp"
#include "cli/sweep/plot.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"
#include "traces/reader.hpp"
#include "traces/report/html.hpp"
#include "traces/report/run_page.hpp"
#include "traces/report/svg_chart.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace cardsim::cli {
namespace {

using traces::report::Chart;
using traces::report::escape;
using traces::report::Series;

/// A sweep's results.csv with its columns found (the layout sweep_results.hpp documents).
struct Results {
    sweep::CsvTable table;
    std::vector<std::size_t> axes; ///< axis columns, and `model` when the sweep has several models
    std::vector<std::size_t> ok;   ///< rows whose status is ok
    std::size_t status = 0;
    std::size_t column(std::string_view name) const {
        auto it = std::find(table.header.begin(), table.header.end(), name);
        return std::size_t(it - table.header.begin());
    }
    bool has(std::string_view name) const { return column(name) < table.header.size(); }
    const std::string& at(std::size_t row, std::size_t col) const { return table.rows[row][col]; }
};

Results load(const std::filesystem::path& file) {
    Results r;
    r.table = sweep::read_csv(file, /*drop_partial_tail=*/true);
    const auto& h = r.table.header;
    if (h.size() < 3 || h[0] != "point" || h[1] != "model" || !r.has("status") || !r.has("tokens_per_second"))
        throw Error(
            fmt::format("{}:1: not a sweep's results (expected the columns point, model, the axes, status, "
                        "tokens_per_second, ...)",
                        file.string()));
    r.status = r.column("status");
    std::set<std::string> models;
    for (std::size_t i = 0; i < r.table.rows.size(); ++i) {
        models.insert(r.at(i, 1));
        if (r.at(i, r.status) == "ok") r.ok.push_back(i);
    }
    if (models.size() > 1) r.axes.push_back(1);
    for (std::size_t c = 2; c < r.status; ++c)
        r.axes.push_back(c);
    return r;
}

/// `s` as a number, if all of it is one.
std::optional<double> number(const std::string& s) {
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return std::nullopt;
    return v;
}

bool numeric(const Results& r, std::size_t col) {
    return std::all_of(r.ok.begin(), r.ok.end(), [&](auto i) { return number(r.at(i, col)).has_value(); });
}

/// The distinct values of `col` over the ok rows, in first-appearance order (numbers sorted).
std::vector<std::string> distinct(const Results& r, std::size_t col) {
    std::vector<std::string> v;
    for (auto i : r.ok)
        if (std::find(v.begin(), v.end(), r.at(i, col)) == v.end()) v.push_back(r.at(i, col));
    if (numeric(r, col))
        std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return *number(a) < *number(b); });
    return v;
}

/// The axis label of a figure, as the plots name it.
std::string label(std::string_view figure) {
    if (figure == "tokens_per_second") return "tokens/s (simulated card)";
    if (figure == "roofline_fraction") return "roofline fraction (DDR bytes / peak bandwidth / time)";
    if (figure == "max_abs_error") return "max |logit error| vs f64 reference";
    if (figure == "kl") return "KL(reference || card), nats";
    if (figure == "top1_agreement") return "top-1 agreement with f64 reference";
    return std::string(figure);
}

/// The axes with more than one value among the ok rows.
std::vector<std::size_t> varying(const Results& r) {
    std::vector<std::size_t> v;
    for (auto c : r.axes)
        if (distinct(r, c).size() > 1) v.push_back(c);
    return v;
}

/// A point's tooltip: its id, axis values and the figure.
std::string point_tip(const Results& r, std::size_t row, std::string_view figure) {
    std::string s = fmt::format("point {}", r.at(row, 0));
    for (auto c : r.axes)
        s += fmt::format("\n{} = {}", r.table.header[c], r.at(row, c));
    s += fmt::format("\ntokens/s {}", r.at(row, r.column("tokens_per_second")));
    if (figure != "tokens_per_second") s += fmt::format("\n{} {}", figure, r.at(row, r.column(figure)));
    return s;
}

std::string subtitle(const Results& r) {
    std::vector<std::string> seen;
    for (std::size_t i = 0; i < r.table.rows.size(); ++i)
        if (std::find(seen.begin(), seen.end(), r.at(i, 1)) == seen.end()) seen.push_back(r.at(i, 1));
    std::string models;
    for (auto& m : seen)
        models += (models.empty() ? "" : ", ") + m;
    const auto failed = r.table.rows.size() - r.ok.size();
    return fmt::format("{}; {} points{}", models, r.ok.size(),
                       failed ? fmt::format(" ({} failed, not shown)", failed) : "");
}

/// `figure` against `axis`: a line per combination of the other varying axes (one cloud of points
/// when there are more than ten), as `cardsim plot` draws it.
Chart axis_chart(const Results& r, std::size_t axis, std::string_view figure) {
    const std::size_t fig = r.column(figure);
    const bool num = numeric(r, axis);
    const auto xs = distinct(r, axis);
    std::map<std::string, std::vector<std::size_t>> series;
    std::vector<std::string> order;
    const auto others = varying(r);
    for (auto i : r.ok) {
        std::string key;
        for (auto c : others)
            if (c != axis)
                key += fmt::format("{}{}={}", key.empty() ? "" : " ", r.table.header[c], r.at(i, c));
        if (!series.count(key)) order.push_back(key);
        series[key].push_back(i);
    }
    const bool cloud = series.size() > 10;
    if (cloud) series = {{"every point", r.ok}}, order = {"every point"};
    Chart chart;
    chart.title = fmt::format("{} against {}", label(figure), r.table.header[axis]);
    chart.subtitle = subtitle(r);
    chart.x_label = r.table.header[axis];
    chart.y_label = label(figure);
    if (!num)
        chart.categories = xs;
    else if (xs.size() <= 12) // ticks at the swept values, as the plots have them
        for (auto& v : xs)
            chart.x_ticks.push_back(*number(v));
    for (auto& key : order) {
        auto rows = series[key];
        auto x_of = [&](std::size_t i) {
            return num ? *number(r.at(i, axis))
                       : double(std::find(xs.begin(), xs.end(), r.at(i, axis)) - xs.begin());
        };
        std::stable_sort(rows.begin(), rows.end(), [&](auto a, auto b) { return x_of(a) < x_of(b); });
        Series s{key.empty() ? r.table.header[axis] : key};
        s.line = !cloud;
        for (auto i : rows)
            s.points.push_back({x_of(i), number(r.at(i, fig)).value_or(NAN), "", point_tip(r, i, figure)});
        chart.series.push_back(std::move(s));
    }
    return chart;
}

/// The rows and Pareto front of an accuracy figure against tokens/s.
struct Front {
    std::vector<std::size_t> rows;  ///< rows with both figures
    std::vector<std::size_t> front; ///< indices into rows, by increasing tokens/s
};

Front front_of(const Results& r, std::string_view figure) {
    const std::size_t x = r.column("tokens_per_second"), y = r.column(figure);
    Front f;
    std::vector<std::pair<double, double>> pts;
    for (auto i : r.ok)
        if (auto a = number(r.at(i, x)), b = number(r.at(i, y)); a && b) {
            f.rows.push_back(i);
            pts.emplace_back(*a, *b);
        }
    f.front = sweep::pareto_front(pts, figure != "top1_agreement");
    return f;
}

/// The varying axis values of a row, `a/b/c` (its point id when nothing varies).
std::string axis_values(const Results& r, std::size_t row) {
    std::string s;
    for (auto c : varying(r))
        s += (s.empty() ? "" : "/") + r.at(row, c);
    return s.empty() ? r.at(row, 0) : s;
}

/// An accuracy figure against tokens/s, every point labelled, the Pareto front drawn over them.
Chart pareto_chart(const Results& r, std::string_view figure, const Front& f) {
    const std::size_t x = r.column("tokens_per_second"), y = r.column(figure);
    Chart chart;
    chart.title = fmt::format("{} against tokens/s, Pareto front marked", label(figure));
    std::string legend;
    for (auto c : varying(r))
        legend += (legend.empty() ? "" : "/") + r.table.header[c];
    chart.subtitle = fmt::format("{}; labels: {}", subtitle(r), legend.empty() ? "point" : legend);
    chart.x_label = label("tokens_per_second");
    chart.y_label = label(figure);
    Series points{"point (#id)"}, front{"Pareto front"};
    points.line = false;
    front.emphasis = true;
    double lo = 0, hi = 0;
    for (std::size_t k = 0; k < f.rows.size(); ++k) {
        auto i = f.rows[k];
        const double px = *number(r.at(i, x)), py = *number(r.at(i, y));
        if (py > 0) lo = lo == 0 ? py : std::min(lo, py), hi = std::max(hi, py);
        if (std::find(f.front.begin(), f.front.end(), k) == f.front.end())
            points.points.push_back({px, py, "#" + r.at(i, 0), point_tip(r, i, figure)});
    }
    for (auto k : f.front) {
        auto i = f.rows[k];
        front.points.push_back({*number(r.at(i, x)), *number(r.at(i, y)),
                                fmt::format("#{} {}", r.at(i, 0), axis_values(r, i)),
                                point_tip(r, i, figure)});
    }
    chart.log_y = figure != "top1_agreement" && lo > 0 && hi / lo > 30;
    chart.series = {std::move(points), std::move(front)};
    return chart;
}

/// A results cell: a fraction shown to 6 significant digits (the exact value sorts it and shows
/// on hover), anything else as it is.
std::string cell(const std::string& value, bool status) {
    auto v = number(value);
    const bool fraction = v && value.find_first_of(".eE") != std::string::npos;
    if (!fraction) return fmt::format("<td{}>{}</td>", status ? " class=\"status\"" : "", escape(value));
    return fmt::format("<td data-sort=\"{0}\" data-tip=\"{0}\">{1}</td>", escape(value),
                       fmt::format("{:.6g}", *v));
}

/// How a row's point ended, for its row class: ok, refused by the card, or failed.
std::string_view row_state(const Results& r, std::size_t row) {
    const auto& status = r.at(row, r.status);
    if (status == "ok") return "ok";
    const auto e = r.column("error");
    if (e < r.table.header.size() && r.at(row, e).find("refuses") != std::string::npos) return "refused";
    return "failed";
}

} // namespace

SweepReportFiles write_sweep_report(const std::filesystem::path& results,
                                    const std::filesystem::path& output) {
    const bool is_dir = std::filesystem::is_directory(results);
    const auto file = is_dir ? results / "results.csv" : results;
    const auto dir = is_dir ? results : results.parent_path();
    if (!std::filesystem::is_regular_file(file))
        throw Error(
            fmt::format("cardsim report: `{}` is not a trace, a results.csv or a sweep directory holding one",
                        results.string()));
    auto r = load(file);
    SweepReportFiles out{output, {}};

    // Run pages of the points whose traces the sweep kept.
    const auto points_dir_name = output.stem().string() + "_points";
    const auto points_dir = output.parent_path() / points_dir_name;
    std::map<std::size_t, std::string> link, trouble; // row -> href / why there is no page
    for (std::size_t i = 0; i < r.table.rows.size(); ++i) {
        const auto trace = dir / "traces" / fmt::format("point-{}.trace", r.at(i, 0));
        if (!std::filesystem::is_regular_file(trace)) continue;
        try {
            auto t = traces::read_trace(trace);
            auto facts = traces::report::recorded(t.header, trace.string());
            std::filesystem::create_directories(points_dir);
            const auto page = points_dir / fmt::format("point-{}.html", r.at(i, 0));
            traces::report::write_run_page(page, {t, facts, fmt::format("sweep point {}", r.at(i, 0)), {}});
            out.point_pages.push_back(page);
            link[i] = fmt::format("{}/point-{}.html", points_dir_name, r.at(i, 0));
        } catch (const Error& e) {
            trouble[i] = e.what();
        }
    }

    // Charts, as `cardsim plot` draws them.
    std::vector<Chart> charts;
    std::vector<std::pair<std::string, Front>> fronts;
    std::set<std::size_t> on_front;
    if (!r.ok.empty()) {
        for (auto axis : r.axes) {
            if (distinct(r, axis).size() < 2) continue;
            for (std::string_view fig : {"tokens_per_second", "roofline_fraction"})
                if (r.has(fig)) charts.push_back(axis_chart(r, axis, fig));
        }
        for (std::string_view fig : {"max_abs_error", "kl", "top1_agreement"}) {
            if (!r.has(fig)) continue;
            auto f = front_of(r, fig);
            if (f.rows.empty()) continue;
            charts.push_back(pareto_chart(r, fig, f));
            for (auto k : f.front)
                on_front.insert(f.rows[k]);
            fronts.emplace_back(std::string(fig), std::move(f));
        }
    }

    std::size_t refused = 0, failed = 0;
    for (std::size_t i = 0; i < r.table.rows.size(); ++i) {
        const auto state = row_state(r, i);
        refused += state == "refused";
        failed += state == "failed";
    }
    std::string b;
    b += fmt::format("<header><h1>Sweep: {}</h1><p class=\"sub\">cardsim sweep report · {}</p></header>\n",
                     escape(dir.filename().string().empty() ? file.string() : dir.filename().string()),
                     escape(file.string()));
    b += "<nav><a href=\"#figures\">figures</a> <a href=\"#results\">results</a> <a "
         "href=\"#charts\">charts</a> "
         "<a href=\"#fronts\">Pareto fronts</a></nav>\n<main>\n";
    b += "<section id=\"figures\" class=\"cards\">\n";
    auto card = [&](std::string_view label, std::string value, std::string note, std::string_view cls = "") {
        b += fmt::format(
            "<div class=\"card{}{}\"><div class=\"label\">{}</div><div class=\"value\">{}</div><div "
            "class=\"note\">{}</div></div>\n",
            cls.empty() ? "" : " ", cls, escape(label), escape(value), escape(note));
    };
    card("points", std::to_string(r.table.rows.size()), subtitle(r));
    card("ok", std::to_string(r.ok.size()), "ran to the end, bit-exact where checked", "good");
    card("refused", std::to_string(refused), "the card refuses the model at the point",
         refused ? "bad" : "muted");
    card("failed", std::to_string(failed), "errors, faults, mismatches, crashes, timeouts",
         failed ? "bad" : "muted");
    if (!r.ok.empty()) {
        const auto tps = r.column("tokens_per_second");
        auto best = *std::max_element(r.ok.begin(), r.ok.end(), [&](auto a, auto b2) {
            return number(r.at(a, tps)).value_or(0) < number(r.at(b2, tps)).value_or(0);
        });
        card("best tokens/s", fmt::format("{:.1f}", number(r.at(best, tps)).value_or(0)),
             fmt::format("point {}: {}", r.at(best, 0), axis_values(r, best)));
    }
    b += "</section>\n";

    // The results table.
    b += "<section id=\"results\">\n<h2>Results</h2>\n<p class=\"help\">Click a column to sort. Rows: green "
         "status "
         "ran ok, red were refused by the card or failed; a red edge marks a point on a Pareto front.";
    if (!link.empty()) b += " The last column links to each point's run page.";
    b += "</p>\n<div class=\"scroll\"><table class=\"data sortable\" id=\"results-table\">\n<thead><tr>";
    for (auto& h : r.table.header)
        b += fmt::format("<th>{}</th>", escape(h));
    b += "<th>run page</th></tr></thead>\n<tbody>\n";
    for (std::size_t i = 0; i < r.table.rows.size(); ++i) {
        b += fmt::format("<tr class=\"status-{}{}\">", row_state(r, i), on_front.count(i) ? " front" : "");
        for (std::size_t c = 0; c < r.table.header.size(); ++c)
            b += cell(r.at(i, c), c == r.status);
        if (link.count(i))
            b += fmt::format("<td><a href=\"{}\">point {}</a></td>", escape(link[i]), escape(r.at(i, 0)));
        else if (trouble.count(i))
            b += fmt::format("<td class=\"muted\">trace unreadable: {}</td>", escape(trouble[i]));
        else
            b += "<td class=\"muted\">no trace</td>";
        b += "</tr>\n";
    }
    b += "</tbody>\n</table></div>\n</section>\n";

    b += "<section id=\"charts\">\n<h2>Charts</h2>\n";
    if (charts.empty()) b += "<p class=\"muted\">No chart: no axis has two values among the ok points.</p>\n";
    b += "<div class=\"charts\">\n";
    for (auto& c : charts)
        b += traces::report::svg(c);
    b += "</div>\n</section>\n";

    b += "<section id=\"fronts\">\n<h2>Pareto fronts</h2>\n";
    if (fronts.empty())
        b += "<p class=\"muted\">No accuracy figures: the sweep ran timing-only (full = false).</p>\n";
    for (auto& [fig, f] : fronts) {
        b += fmt::format(
            "<h3>{} against tokens/s</h3>\n<table class=\"data sortable\"><thead><tr><th>point</th>",
            escape(label(fig)));
        for (auto c : varying(r))
            b += fmt::format("<th>{}</th>", escape(r.table.header[c]));
        b += fmt::format("<th>tokens/s</th><th>{}</th></tr></thead>\n<tbody>\n", escape(fig));
        for (auto k : f.front) {
            auto i = f.rows[k];
            b += fmt::format("<tr><td>{}</td>",
                             link.count(i)
                                 ? fmt::format("<a href=\"{}\">{}</a>", escape(link[i]), escape(r.at(i, 0)))
                                 : escape(r.at(i, 0)));
            for (auto c : varying(r))
                b += fmt::format("<td>{}</td>", escape(r.at(i, c)));
            b += cell(r.at(i, r.column("tokens_per_second")), false) + cell(r.at(i, r.column(fig)), false) +
                 "</tr>\n";
        }
        b += "</tbody></table>\n";
    }
    b += "</section>\n</main>\n<div id=\"tooltip\" class=\"tooltip\" hidden></div>\n";
    io::write_file_atomically(
        output,
        traces::report::document(fmt::format("Sweep {} — cardsim report", dir.filename().string()), b));
    return out;
}

} // namespace cardsim::cli
