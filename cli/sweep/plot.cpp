#include "cli/sweep/plot.hpp"

#include "cli/sweep/csv.hpp"
#include "cli/sweep/process.hpp"
#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

namespace cardsim::cli::sweep {

std::vector<std::size_t> pareto_front(const std::vector<std::pair<double, double>>& points,
                                      bool lower_is_better) {
    auto better_y = [&](double a, double b) { return lower_is_better ? a < b : a > b; };
    std::vector<std::size_t> front;
    for (std::size_t i = 0; i < points.size(); ++i) {
        bool dominated = false;
        for (std::size_t j = 0; j < points.size() && !dominated; ++j) {
            if (i == j) continue;
            auto [xi, yi] = points[i];
            auto [xj, yj] = points[j];
            bool no_worse = xj >= xi && !better_y(yi, yj);
            bool better = xj > xi || better_y(yj, yi);
            dominated = no_worse && better;
        }
        if (!dominated) front.push_back(i);
    }
    std::sort(front.begin(), front.end(), [&](auto a, auto b) {
        return points[a].first != points[b].first ? points[a].first < points[b].first : a < b;
    });
    return front;
}

namespace {

/// A results.csv with its columns found.
struct Results {
    CsvTable table;
    std::vector<std::size_t> axes; ///< axis columns (and `model` when several models)
    std::vector<std::size_t> ok;   ///< rows whose status is ok
    std::size_t failed = 0;
    /// The index of column `name` (the header's size when absent).
    std::size_t column(std::string_view name) const {
        auto it = std::find(table.header.begin(), table.header.end(), name);
        return it == table.header.end() ? table.header.size() : std::size_t(it - table.header.begin());
    }
    /// Whether the header has column `name`.
    bool has(std::string_view name) const { return column(name) < table.header.size(); }
    /// One cell.
    const std::string& at(std::size_t row, std::size_t col) const { return table.rows[row][col]; }
};

/// Reads a results.csv and finds its axes and ok rows.
Results load(const std::filesystem::path& file) {
    Results r;
    r.table = read_csv(file, /*drop_partial_tail=*/true);
    const auto& h = r.table.header;
    if (h.size() < 3 || h[0] != "point" || h[1] != "model" || !r.has("status") || !r.has("tokens_per_second"))
        throw Error(
            fmt::format("{}:1: not a sweep's results (expected the columns point, model, the axes, status, "
                        "tokens_per_second, ...)",
                        file.string()));
    const std::size_t status = r.column("status");
    std::map<std::string, int> models;
    for (std::size_t i = 0; i < r.table.rows.size(); ++i) {
        models[r.at(i, 1)] = 1;
        if (r.at(i, status) == "ok")
            r.ok.push_back(i);
        else
            ++r.failed;
    }
    if (models.size() > 1) r.axes.push_back(1);
    for (std::size_t c = 2; c < status; ++c)
        r.axes.push_back(c);
    return r;
}

/// Whether every ok row's cell in `col` is a number.
bool numeric(const Results& r, std::size_t col) {
    for (auto i : r.ok) {
        const auto& s = r.at(i, col);
        char* end = nullptr;
        std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size()) return false;
    }
    return true;
}

/// The distinct values of `col` over the ok rows, in order of first appearance (numbers sorted).
std::vector<std::string> distinct(const Results& r, std::size_t col) {
    std::vector<std::string> v;
    for (auto i : r.ok)
        if (std::find(v.begin(), v.end(), r.at(i, col)) == v.end()) v.push_back(r.at(i, col));
    if (numeric(r, col))
        std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return std::stod(a) < std::stod(b); });
    return v;
}

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

/// How a figure reads on an axis.
std::string label(std::string_view figure) {
    if (figure == "tokens_per_second") return "tokens/s (simulated card)";
    if (figure == "roofline_fraction") return "roofline fraction (DDR bytes / peak bandwidth / time)";
    if (figure == "max_abs_error") return "max |logit error| vs f64 reference";
    if (figure == "kl") return "KL(reference || card), nats";
    if (figure == "top1_agreement") return "top-1 agreement with f64 reference";
    return std::string(figure);
}

/// A file-name-safe form of a column name.
std::string slug(std::string_view name) {
    std::string s(name);
    for (auto& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '-';
    return s;
}

/// What the whole sweep is, for titles: its model(s), point and failure counts.
std::string subtitle(const Results& r) {
    std::string models;
    std::vector<std::string> seen;
    for (std::size_t i = 0; i < r.table.rows.size(); ++i)
        if (std::find(seen.begin(), seen.end(), r.at(i, 1)) == seen.end()) seen.push_back(r.at(i, 1));
    for (auto& m : seen)
        models += (models.empty() ? "" : ", ") + m;
    return fmt::format("{}; {} points{}", models, r.ok.size(),
                       r.failed ? fmt::format(" ({} failed, not shown)", r.failed) : "");
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

/// Writes the script and runs gnuplot on it; the PNG and SVG appear under their names only when
/// gnuplot succeeded.
ChartFiles render(const std::filesystem::path& gnuplot, const std::filesystem::path& dir,
                  const std::string& name, const std::string& title, const std::string& body) {
    // Absolute paths, so the kept script renders again from anywhere.
    const auto abs = std::filesystem::absolute(dir).lexically_normal();
    ChartFiles f{abs / (name + ".png"), abs / (name + ".svg"), abs / (name + ".gp"), title};
    auto png_tmp = abs / ("." + name + ".png.tmp"), svg_tmp = abs / ("." + name + ".svg.tmp");
    io::write_file_atomically(f.script, head(png_tmp) + body + tail(svg_tmp));
    auto log = abs / ("." + name + ".log");
    auto ended = Child::spawn({gnuplot.string(), f.script.string()}, log, log).wait();
    std::string text = std::filesystem::exists(log) ? io::read_file(log) : "";
    std::filesystem::remove(log);
    if (ended.code != 0 || ended.signal || !std::filesystem::exists(png_tmp) ||
        !std::filesystem::exists(svg_tmp)) {
        std::filesystem::remove(png_tmp);
        std::filesystem::remove(svg_tmp);
        throw Error(fmt::format("gnuplot failed on {} ({}): {}", f.script.string(), ended.text(), text));
    }
    std::filesystem::rename(png_tmp, f.png);
    std::filesystem::rename(svg_tmp, f.svg);
    return f;
}

/// `figure` against axis column `axis`: a line per combination of the other axes (or one point
/// cloud when there are too many combinations to tell apart).
std::string axis_chart(const Results& r, std::size_t axis, std::string_view figure, std::string& title) {
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
    body += "plot ";
    for (std::size_t s = 0; s < order.size(); ++s) {
        const std::string name = order[s].empty() ? r.table.header[axis] : order[s];
        body += fmt::format("{}$s{} using 1:2{} with {} pt 7 ps 1.2 lw 2 title {}", s ? ", \\\n     " : "", s,
                            num ? "" : ":xtic(3)", cloud ? "points" : "linespoints", gp_string(name));
    }
    return body + "\n";
}

/// An accuracy figure against tokens/s, every point labelled by its varying axis values, the
/// Pareto front (faster and more accurate than any other) drawn over them.
std::string pareto_chart(const Results& r, std::string_view figure, std::string& title) {
    const std::size_t x = r.column("tokens_per_second"), y = r.column(figure);
    const bool lower = figure != "top1_agreement";
    std::vector<std::size_t> rows;
    std::vector<std::pair<double, double>> pts;
    for (auto i : r.ok)
        if (!r.at(i, y).empty() && !r.at(i, x).empty()) {
            rows.push_back(i);
            pts.emplace_back(std::stod(r.at(i, x)), std::stod(r.at(i, y)));
        }
    std::vector<std::size_t> varying;
    for (auto c : r.axes)
        if (distinct(r, c).size() > 1) varying.push_back(c);
    auto name = [&](std::size_t i) {
        std::string s;
        for (auto c : varying)
            s += (s.empty() ? "" : "/") + r.at(i, c);
        return s.empty() ? r.at(i, 0) : s;
    };
    // Points on the front are labelled with their axis values, the others with their point id.
    const auto front = pareto_front(pts, lower);
    std::string body = "$points << EOD\n";
    for (std::size_t k = 0; k < rows.size(); ++k)
        if (std::find(front.begin(), front.end(), k) == front.end())
            body += fmt::format("{} {} {}\n", r.at(rows[k], x), r.at(rows[k], y),
                                gp_string("#" + r.at(rows[k], 0)));
    body += "EOD\n$front << EOD\n";
    for (auto k : front)
        body += fmt::format("{} {} {}\n", r.at(rows[k], x), r.at(rows[k], y),
                            gp_string(fmt::format("#{} {}", r.at(rows[k], 0), name(rows[k]))));
    body += "EOD\n";
    std::string legend;
    for (auto c : varying)
        legend += (legend.empty() ? "" : "/") + r.table.header[c];
    title = fmt::format("{} against tokens/s, Pareto front marked", label(figure));
    body += fmt::format("set title {}\n",
                        gp_string(fmt::format("{}\n{}; labels: {}", title, subtitle(r), legend)));
    body += fmt::format("set xlabel {}\nset ylabel {}\n", gp_string(label("tokens_per_second")),
                        gp_string(label(figure)));
    double lo = 0, hi = 0;
    for (auto& p : pts)
        if (p.second > 0) lo = lo == 0 ? p.second : std::min(lo, p.second), hi = std::max(hi, p.second);
    const bool log = lower && lo > 0 && hi / lo > 30;
    if (log)
        body += "set logscale y\n";
    else if (std::all_of(pts.begin(), pts.end(), [](auto& p) { return p.second >= 0; }))
        body += "set yrange [0:*]\n"; // errors, KL and agreement are never negative

    body += fmt::format("set offsets graph 0.05, graph 0.3, graph 0.08, {}\n", log ? "graph 0.08" : "0");
    body +=
        "plot $points using 1:2 with points pt 7 ps 1.2 lc rgb \"#7f7f7f\" title \"point (#id)\", \\\n"
        "     $front using 1:2 with linespoints pt 7 ps 1.8 lw 2 lc rgb \"#d62728\" title \"Pareto front\", "
        "\\\n"
        "     $points using 1:2:3 with labels left offset 0.8,0 font \",8\" tc rgb \"#555555\" notitle, \\\n"
        "     $front using 1:2:3 with labels left offset 1,0.6 font \",9\" tc rgb \"#d62728\" notitle\n";
    return body;
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
    auto r = load(file);
    if (r.ok.empty())
        throw Error(
            fmt::format("{}: no row has status ok; nothing to plot ({} failed)", file.string(), r.failed));
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
    for (std::string_view fig : {"max_abs_error", "kl", "top1_agreement"}) {
        if (!r.has(fig)) continue;
        const auto col = r.column(fig);
        if (std::none_of(r.ok.begin(), r.ok.end(), [&](auto i) { return !r.at(i, col).empty(); })) continue;
        std::string title;
        auto body = pareto_chart(r, fig, title);
        out.push_back(
            render(*gnuplot, request.output_dir, fmt::format("{}_vs_tokens_per_second", fig), title, body));
    }
    return out;
}

} // namespace cardsim::cli::sweep
