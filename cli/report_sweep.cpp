#include "cli/report_sweep.hpp"

#include "cli/sweep/csv.hpp"
#include "cli/sweep/runner.hpp"
#include "cli/sweep/table.hpp"
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

using sweep::axis_values;
using sweep::distinct;
using sweep::Front;
using sweep::label;
using sweep::number;
using sweep::numeric;
using sweep::subtitle;
using sweep::varying;
using traces::report::Chart;
using traces::report::escape;
using traces::report::Series;
using Results = sweep::ResultsTable;

/// A point's tooltip: its id, axis values and the figure.
std::string point_tip(const Results& r, std::size_t row, std::string_view figure) {
    std::string s = fmt::format("point {}", r.at(row, 0));
    for (auto c : r.axes)
        s += fmt::format("\n{} = {}", r.table.header[c], r.at(row, c));
    s += fmt::format("\ntokens/s {}", r.at(row, r.column("tokens_per_second")));
    if (figure != "tokens_per_second") s += fmt::format("\n{} {}", figure, r.at(row, r.column(figure)));
    return s;
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
    if (auto misfit = r.not_fitting(); !misfit.empty()) {
        Series rings{"does not fit the chip"};
        rings.line = false;
        rings.rings = true;
        for (auto i : misfit)
            rings.points.push_back({num ? *number(r.at(i, axis))
                                        : double(std::find(xs.begin(), xs.end(), r.at(i, axis)) - xs.begin()),
                                    number(r.at(i, fig)).value_or(NAN), "", point_tip(r, i, figure)});
        chart.series.push_back(std::move(rings));
    }
    return chart;
}

/// A figure against tokens/s, every point labelled, the Pareto front over the points that fit the
/// chip drawn over them; points that do not fit are rings.
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
    Series points{"point (#id)"}, front{"Pareto front"}, rings{"does not fit the chip"};
    points.line = false;
    front.emphasis = true;
    rings.line = false;
    rings.rings = true;
    double lo = 0, hi = 0;
    for (std::size_t k = 0; k < f.rows.size(); ++k) {
        auto i = f.rows[k];
        const double px = *number(r.at(i, x)), py = *number(r.at(i, y));
        if (py > 0) lo = lo == 0 ? py : std::min(lo, py), hi = std::max(hi, py);
        if (std::find(f.misfit.begin(), f.misfit.end(), k) != f.misfit.end())
            rings.points.push_back({px, py, "#" + r.at(i, 0), point_tip(r, i, figure)});
        else if (std::find(f.front.begin(), f.front.end(), k) == f.front.end())
            points.points.push_back({px, py, "#" + r.at(i, 0), point_tip(r, i, figure)});
    }
    for (auto k : f.front) {
        auto i = f.rows[k];
        front.points.push_back({*number(r.at(i, x)), *number(r.at(i, y)),
                                fmt::format("#{} {}", r.at(i, 0), axis_values(r, i)),
                                point_tip(r, i, figure)});
    }
    chart.log_y = sweep::lower_is_better(figure) && lo > 0 && hi / lo > 30;
    chart.series = {std::move(points), std::move(front)};
    if (!rings.points.empty()) chart.series.push_back(std::move(rings));
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

std::filesystem::path sweep_points_folder(const std::filesystem::path& page) {
    return page.parent_path() / (page.stem().string() + "_points");
}

SweepReportFiles write_sweep_report(const std::filesystem::path& results,
                                    const std::filesystem::path& output) {
    const bool is_dir = std::filesystem::is_directory(results);
    const auto file = is_dir ? results / "results.csv" : results;
    const auto dir = is_dir ? results : results.parent_path();
    if (!std::filesystem::is_regular_file(file))
        throw Error(
            fmt::format("cardsim report: `{}` is not a trace, a results.csv or a sweep directory holding one",
                        results.string()));
    auto r = sweep::load_results(file);
    SweepReportFiles out{output, {}};

    // Run pages of the points whose traces the sweep kept. A trace that cannot be read is the
    // point's trouble, told in its row; a page that cannot be written fails the report.
    const auto points_dir = sweep_points_folder(output);
    const auto points_dir_name = points_dir.filename().string();
    std::map<std::size_t, std::string> link, trouble; // row -> href / why there is no page
    for (std::size_t i = 0; i < r.table.rows.size(); ++i) {
        const auto trace = dir / "traces" / fmt::format("point-{}.trace", r.at(i, 0));
        if (!std::filesystem::is_regular_file(trace)) continue;
        std::optional<traces::Trace> t;
        std::optional<traces::report::RunFacts> facts;
        try {
            t = traces::read_trace(trace);
            facts = traces::report::recorded(t->header, trace.string());
        } catch (const Error& e) {
            trouble[i] = e.what();
            continue;
        }
        std::filesystem::create_directories(points_dir);
        const auto page = points_dir / fmt::format("point-{}.html", r.at(i, 0));
        traces::report::write_run_page(page, {*t, facts, fmt::format("sweep point {}", r.at(i, 0)), {}});
        out.point_pages.push_back(page);
        link[i] = fmt::format("{}/point-{}.html", points_dir_name, r.at(i, 0));
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
        for (std::string_view fig : sweep::front_figures) {
            auto f = sweep::front_of(r, fig);
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
    // The page is titled by the spec's name, as the sweep recorded it; else by the directory.
    const auto title = sweep::recorded_sweep_name(dir).value_or(
        dir.filename().string().empty() ? file.string() : dir.filename().string());
    std::string b;
    b += fmt::format("<header><h1>Sweep: {}</h1><p class=\"sub\">cardsim sweep report · {}</p></header>\n",
                     escape(title), escape(file.string()));
    b += "<nav><a href=\"#figures\">figures</a> <a href=\"#results\">results</a> <a "
         "href=\"#charts\">charts</a> "
         "<a href=\"#fronts\">Pareto fronts</a></nav>\n<main>\n";
    b += "<section id=\"figures\" class=\"cards\">\n";
    auto card = [&](std::string_view label, std::string value, std::string note, std::string_view cls = "") {
        b += traces::report::figure_card(label, value, note, cls);
    };
    card("points", std::to_string(r.table.rows.size()), subtitle(r));
    card("ok", std::to_string(r.ok.size()), "ran to the end, bit-exact where checked", "good");
    card("refused", std::to_string(refused), "the card refuses the model at the point",
         refused ? "bad" : "muted");
    card("failed", std::to_string(failed), "errors, faults, mismatches, crashes, timeouts",
         failed ? "bad" : "muted");
    if (r.has("fits")) {
        const auto misfit = r.not_fitting().size();
        card("do not fit", std::to_string(misfit), "ran, but the card exceeds the chip (cardsim fit)",
             misfit ? "bad" : "muted");
    }
    if (!r.ok.empty()) { // the headline: the fastest point the chip can hold
        const auto tps = r.column("tokens_per_second");
        std::vector<std::size_t> fitting;
        for (auto i : r.ok)
            if (r.fits(i)) fitting.push_back(i);
        const auto misfit = r.ok.size() - fitting.size();
        const auto misfit_text = fmt::format("{} ok point{} {} not fit", misfit, misfit == 1 ? "" : "s",
                                             misfit == 1 ? "does" : "do");
        if (fitting.empty()) {
            card("best tokens/s", "none", fmt::format("no ok point fits the chip ({})", misfit_text), "bad");
        } else {
            auto best = *std::max_element(fitting.begin(), fitting.end(), [&](auto a, auto b2) {
                return number(r.at(a, tps)).value_or(0) < number(r.at(b2, tps)).value_or(0);
            });
            auto note = fmt::format("point {}: {}", r.at(best, 0), axis_values(r, best));
            if (r.has("fits"))
                note +=
                    misfit ? fmt::format("; among the {} that fit the chip ({})", fitting.size(), misfit_text)
                           : std::string("; every ok point fits the chip");
            card("best tokens/s", fmt::format("{:.1f}", number(r.at(best, tps)).value_or(0)), note);
        }
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
        b += fmt::format("<tr class=\"status-{}{}{}\">", row_state(r, i), on_front.count(i) ? " front" : "",
                         r.fits(i) ? "" : " nofit");
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
        b += "<p class=\"muted\">No front: the results have no accuracy, DSP or power column.</p>\n";
    else
        b += "<p class=\"help\">Only points that fit the chip (column <code>fits</code>) can be on a front; "
             "the charts draw the others as rings.</p>\n";
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
    io::write_file_atomically(output,
                              traces::report::document(fmt::format("Sweep {} — cardsim report", title), b));
    return out;
}

} // namespace cardsim::cli
