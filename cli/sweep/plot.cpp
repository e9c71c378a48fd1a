#include "cli/sweep/plot.hpp"

#include "cli/sweep/csv.hpp"
#include "cli/sweep/process.hpp"
#include "cli/sweep/table.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

namespace cardsim::cli::sweep {

namespace {

/// `text` as a gnuplot double-quoted string.
std::string gp_string(std::string_view text) {
    std::string q = "\"";
    for (char c : text) {
        if (c == '\n') {
            q += "\\n";
            continue;
        }
        if (c == '"' || c == '\\') q += '\\';
        q += c;
    }
    return q + "\"";
}

/// A file-name-safe form of a column name.
std::string slug(std::string_view name) {
    std::string s(name);
    for (auto& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '-';
    return s;
}

/// The common head of every chart script: both terminals render the same plot.
std::string head(const std::filesystem::path& png_tmp) {
    return fmt::format("set terminal pngcairo size 1000,660 noenhanced font \"sans,10\"\n"
                       "set output {}\n"
                       "set grid\nset border 3\nset tics nomirror\n"
                       "set key at screen 0.5, screen 0.015 center bottom horizontal maxrows 3\n"
                       "set bmargin at screen 0.22\n",
                       gp_string(png_tmp.string()));
}

/// The tail of a chart script: the plot again as SVG.
std::string tail(const std::filesystem::path& svg_tmp) {
    return fmt::format("set terminal svg size 1000,660 noenhanced font \"sans,10\" background \"white\"\n"
                       "set output {}\nreplot\nunset output\n",
                       gp_string(svg_tmp.string()));
}

/// Whether gnuplot wrote `png` and `svg` whole: a PNG ends with its IEND chunk, an SVG with its
/// closing tag. gnuplot exits 0 when a write fails (a full disk), leaving a file cut short.
bool complete(const std::filesystem::path& png, const std::filesystem::path& svg) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(png, ec) || !std::filesystem::is_regular_file(svg, ec))
        return false;
    static constexpr std::string_view iend{"\0\0\0\0IEND\xae\x42\x60\x82", 12};
    const std::string p = io::read_file(png);
    if (p.size() < iend.size() || std::string_view(p).substr(p.size() - iend.size()) != iend) return false;
    std::string v = io::read_file(svg);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back())))
        v.pop_back();
    return v.ends_with("</svg>");
}

/// Writes the script and runs gnuplot on it; the PNG and SVG appear under their names only when
/// gnuplot succeeded and wrote both whole.
ChartFiles render(const std::filesystem::path& gnuplot, const std::filesystem::path& dir,
                  const std::string& name, const std::string& title, const std::string& body) {
    // Absolute paths, so the kept script renders again from anywhere.
    const auto abs = std::filesystem::absolute(dir).lexically_normal();
    ChartFiles f{abs / (name + ".png"), abs / (name + ".svg"), abs / (name + ".gp"), title};
    const auto png_tmp = io::temporary_for(f.png), svg_tmp = io::temporary_for(f.svg);
    io::write_file_atomically(f.script, head(png_tmp) + body + tail(svg_tmp));
    auto log = abs / ("." + name + ".log");
    auto ended = Child::spawn({gnuplot.string(), f.script.string()}, log, log).wait();
    std::string text = std::filesystem::exists(log) ? io::read_file(log) : "";
    std::filesystem::remove(log);
    if (ended.code != 0 || ended.signal || !complete(png_tmp, svg_tmp)) {
        std::error_code ec;
        std::filesystem::remove(png_tmp, ec);
        std::filesystem::remove(svg_tmp, ec);
        if (ended.code == 0 && !ended.signal)
            throw Error(fmt::format("gnuplot wrote {} or {} short (is the disk full?); its script: {}",
                                    f.png.string(), f.svg.string(), f.script.string()));
        throw Error(fmt::format("gnuplot failed on {} ({}): {}", f.script.string(), ended.text(), text));
    }
    std::filesystem::rename(png_tmp, f.png);
    std::filesystem::rename(svg_tmp, f.svg);
    return f;
}

/// `figure` against axis column `axis`: a line per combination of the other axes (or one point
/// cloud when there are too many combinations to tell apart).
std::string axis_chart(const ResultsTable& r, std::size_t axis, std::string_view figure, std::string& title) {
    constexpr std::size_t max_series = 10;
    const std::size_t fig = r.column(figure);
    const bool num = numeric(r, axis);
    const auto xs = distinct(r, axis);
    std::map<std::string, std::vector<std::size_t>> series; // key: the other axes' values
    std::vector<std::string> order;
    for (auto i : r.ok) {
        std::string key;
        for (auto c : r.axes)
            if (c != axis && distinct(r, c).size() > 1)
                key += fmt::format("{}{}={}", key.empty() ? "" : " ", r.table.header[c], r.at(i, c));
        if (!series.count(key)) order.push_back(key);
        series[key].push_back(i);
    }
    const bool cloud = series.size() > max_series;
    if (cloud) {
        series = {{"every point", r.ok}};
        order = {"every point"};
    }
    std::string body;
    for (std::size_t s = 0; s < order.size(); ++s) {
        auto rows = series[order[s]];
        auto x_of = [&](std::size_t i) {
            return num ? std::stod(r.at(i, axis))
                       : double(std::find(xs.begin(), xs.end(), r.at(i, axis)) - xs.begin());
        };
        std::stable_sort(rows.begin(), rows.end(), [&](auto a, auto b) { return x_of(a) < x_of(b); });
        body += fmt::format("$s{} << EOD\n", s);
        for (auto i : rows)
            body += fmt::format("{} {} {}\n", x_of(i), r.at(i, fig).empty() ? "NaN" : r.at(i, fig),
                                gp_string(r.at(i, axis)));
        body += "EOD\n";
    }
    title = fmt::format("{} against {}", label(figure), r.table.header[axis]);
    body += fmt::format("set title {}\n", gp_string(fmt::format("{}\n{}", title, subtitle(r))));
    body += fmt::format("set xlabel {}\nset ylabel {}\nset yrange [0:*]\n", gp_string(r.table.header[axis]),
                        gp_string(label(figure)));
    if (!num)
        body += fmt::format("set xrange [-0.5:{}]\nset xtics rotate by -30\n", double(xs.size()) - 0.5);
    else if (xs.size() <= 12) {
        // Ticks at the swept values, the range padded by a twentieth on each side.
        std::string tics;
        for (auto& v : xs)
            tics += fmt::format("{}{}", tics.empty() ? "" : ", ", v);
        const double lo = std::stod(xs.front()), hi = std::stod(xs.back()), pad = (hi - lo) / 20;
        body += fmt::format("set xtics ({})\nset xrange [{}:{}]\n", tics, lo - pad, hi + pad);
    }
    // Points that do not fit the chip: a black ring over their dot.
    const auto misfit = r.not_fitting();
    if (!misfit.empty()) {
        body += "$misfit << EOD\n";
        for (auto i : misfit) {
            const double x = num ? std::stod(r.at(i, axis))
                                 : double(std::find(xs.begin(), xs.end(), r.at(i, axis)) - xs.begin());
            body += fmt::format("{} {}\n", x, r.at(i, fig).empty() ? "NaN" : r.at(i, fig));
        }
        body += "EOD\n";
    }
    body += "plot ";
    for (std::size_t s = 0; s < order.size(); ++s) {
        const std::string name = order[s].empty() ? r.table.header[axis] : order[s];
        body += fmt::format("{}$s{} using 1:2{} with {} pt 7 ps 1.2 lw 2 title {}", s ? ", \\\n     " : "", s,
                            num ? "" : ":xtic(3)", cloud ? "points" : "linespoints", gp_string(name));
    }
    if (!misfit.empty())
        body += ", \\\n     $misfit using 1:2 with points pt 6 ps 2.4 lw 1.5 lc rgb \"#000000\" title "
                "\"does not fit the chip\", \\\n     $misfit using 1:2:3 with labels left offset 1,-0.6 font "
                "\",8\" tc rgb \"#000000\" notitle";
    return body + "\n";
}

/// A figure against tokens/s, every point labelled by its varying axis values, the Pareto front
/// (faster and better than any other point that fits the chip) drawn over them; points that do not
/// fit are rings, never on the front.
std::string pareto_chart(const ResultsTable& r, std::string_view figure, const Front& f, std::string& title) {
    const std::size_t x = r.column("tokens_per_second"), y = r.column(figure);
    const bool lower = lower_is_better(figure);
    auto on = [](const std::vector<std::size_t>& v, std::size_t k) {
        return std::find(v.begin(), v.end(), k) != v.end();
    };
    // Points on the front are labelled with their axis values, the others with their point id.
    std::string body = "$points << EOD\n";
    for (std::size_t k = 0; k < f.rows.size(); ++k)
        if (!on(f.front, k) && !on(f.misfit, k))
            body += fmt::format("{} {} {}\n", r.at(f.rows[k], x), r.at(f.rows[k], y),
                                gp_string("#" + r.at(f.rows[k], 0)));
    body += "EOD\n$front << EOD\n";
    for (auto k : f.front)
        body += fmt::format("{} {} {}\n", r.at(f.rows[k], x), r.at(f.rows[k], y),
                            gp_string(fmt::format("#{} {}", r.at(f.rows[k], 0), axis_values(r, f.rows[k]))));
    body += "EOD\n$misfit << EOD\n";
    for (auto k : f.misfit)
        body += fmt::format("{} {} {}\n", r.at(f.rows[k], x), r.at(f.rows[k], y),
                            gp_string("#" + r.at(f.rows[k], 0)));
    body += "EOD\n";
    std::string legend;
    for (auto c : varying(r))
        legend += (legend.empty() ? "" : "/") + r.table.header[c];
    title = fmt::format("{} against tokens/s, Pareto front marked", label(figure));
    body += fmt::format("set title {}\n",
                        gp_string(fmt::format("{}\n{}; labels: {}", title, subtitle(r), legend)));
    body += fmt::format("set xlabel {}\nset ylabel {}\n", gp_string(label("tokens_per_second")),
                        gp_string(label(figure)));
    double lo = 0, hi = 0;
    bool negative = false;
    for (auto i : f.rows) {
        const double v = std::stod(r.at(i, y));
        negative = negative || v < 0;
        if (v > 0) lo = lo == 0 ? v : std::min(lo, v), hi = std::max(hi, v);
    }
    const bool log = lower && lo > 0 && hi / lo > 30;
    if (log)
        body += "set logscale y\n";
    else if (!negative)
        body += "set yrange [0:*]\n"; // errors, KL, agreement, DSP blocks and watts are never negative

    body += fmt::format("set offsets graph 0.05, graph 0.3, graph 0.08, {}\n", log ? "graph 0.08" : "0");
    body +=
        "plot $points using 1:2 with points pt 7 ps 1.2 lc rgb \"#7f7f7f\" title \"point (#id)\", \\\n"
        "     $front using 1:2 with linespoints pt 7 ps 1.8 lw 2 lc rgb \"#d62728\" title \"Pareto front\", "
        "\\\n"
        "     $points using 1:2:3 with labels left offset 0.8,0 font \",8\" tc rgb \"#555555\" notitle, \\\n"
        "     $front using 1:2:3 with labels left offset 1,0.6 font \",9\" tc rgb \"#d62728\" notitle";
    if (!f.misfit.empty())
        body += ", \\\n     $misfit using 1:2 with points pt 6 ps 2.4 lw 1.5 lc rgb \"#000000\" title "
                "\"does not fit the chip\", \\\n     $misfit using 1:2:3 with labels left offset 1,-0.6 font "
                "\",8\" tc rgb \"#000000\" notitle";
    return body + "\n";
}

} // namespace

std::vector<ChartFiles> plot_results(const PlotRequest& request) {
    auto file =
        std::filesystem::is_directory(request.results) ? request.results / "results.csv" : request.results;
    if (!std::filesystem::is_regular_file(file))
        throw Error(fmt::format("cardsim plot: `{}` is not a results.csv or a sweep directory holding one",
                                request.results.string()));
    auto gnuplot = find_on_path("gnuplot");
    if (!gnuplot)
        throw Error("cardsim plot: gnuplot is not installed (not found on $PATH); install the Debian package "
                    "gnuplot-nox (scripts/setup.sh does)");
    auto r = load_results(file);
    if (r.ok.empty())
        throw Error(fmt::format("{}: no row has status ok; nothing to plot ({} failed)", file.string(),
                                r.table.rows.size()));
    std::filesystem::create_directories(request.output_dir);
    std::vector<ChartFiles> out;
    for (auto axis : r.axes) {
        if (distinct(r, axis).size() < 2) continue;
        for (std::string_view fig : {"tokens_per_second", "roofline_fraction"}) {
            if (!r.has(fig)) continue;
            std::string title;
            auto body = axis_chart(r, axis, fig, title);
            out.push_back(render(*gnuplot, request.output_dir,
                                 fmt::format("{}_vs_{}", fig, slug(r.table.header[axis])), title, body));
        }
    }
    for (std::string_view fig : front_figures) {
        auto f = front_of(r, fig);
        if (f.rows.empty()) continue;
        std::string title;
        auto body = pareto_chart(r, fig, f, title);
        out.push_back(
            render(*gnuplot, request.output_dir, fmt::format("{}_vs_tokens_per_second", fig), title, body));
    }
    return out;
}

} // namespace cardsim::cli::sweep
