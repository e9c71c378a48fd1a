#include "traces/report/svg_chart.hpp"

#include "traces/report/html.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace cardsim::traces::report {
namespace {

/// The colours of series, in order (the emphasis colour is kept apart).
constexpr const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8"};
constexpr const char* emphasis_colour = "#d62728";
constexpr const char* ring_colour = "#000000";

/// A value range of an axis.
struct Range {
    double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
    void add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }
    bool empty() const { return !(lo <= hi); }
};

/// Whether point `p` can be drawn on the chart's axes.
bool drawable(const Chart& c, const ChartPoint& p) {
    return std::isfinite(p.x) && std::isfinite(p.y) && (!c.log_y || p.y > 0);
}

/// A coordinate in the file: one decimal place (a tenth of a pixel).
std::string coord(double v) {
    return fmt::format("{:.1f}", v);
}

} // namespace

std::vector<double> nice_ticks(double lo, double hi, int count) {
    if (!(hi > lo)) return {lo};
    const double raw = (hi - lo) / std::max(count, 1);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * mag >= raw) {
            step = m * mag;
            break;
        }
    std::vector<double> ticks;
    for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
        ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    return ticks;
}

std::string tick_text(double v) {
    if (v == 0) return "0";
    if (v == std::round(v) && std::fabs(v) < 1e9) return fmt::format("{:.0f}", v); // 20000, not 2e+04
    return fmt::format("{:.4g}", v);
}

std::string svg(const Chart& c) {
    const bool categorical = !c.categories.empty();
    Range xr, yr;
    for (auto& s : c.series)
        for (auto& p : s.points)
            if (drawable(c, p)) xr.add(p.x), yr.add(c.log_y ? std::log10(p.y) : p.y);
    if (categorical) xr = {-0.5, double(c.categories.size()) - 0.5};
    if (xr.empty()) xr = {0, 1};
    if (yr.empty()) yr = {0, 1};
    // Axes: linear y from zero (or the lowest value when negative), log y over whole decades.
    std::vector<double> yticks;
    if (c.log_y) {
        yr = {std::floor(yr.lo), std::max(std::ceil(yr.hi), std::floor(yr.lo) + 1)};
        for (double d = yr.lo; d <= yr.hi + 1e-9; d += 1)
            yticks.push_back(d);
    } else {
        yr.lo = std::min(yr.lo, 0.0);
        if (yr.hi <= yr.lo) yr.hi = yr.lo + 1;
        yticks = nice_ticks(yr.lo, yr.hi, 6);
        yr.hi = std::max(yr.hi, yticks.back());
        yr.lo = std::min(yr.lo, yticks.front());
    }
    std::vector<double> xticks;
    if (!categorical) {
        if (xr.hi == xr.lo) xr = {xr.lo - 1, xr.hi + 1};
        const double pad = (xr.hi - xr.lo) / 20;
        xr = {xr.lo - pad, xr.hi + pad};
        xticks = c.x_ticks.empty() ? nice_ticks(xr.lo, xr.hi, 7) : c.x_ticks;
    }
    // Legend rows below the plot, three entries a row.
    const int legend_rows = int((c.series.size() + 2) / 3);
    const int left = 74, right = 24, top = c.subtitle.empty() ? 38 : 54;
    const int bottom = (categorical ? 84 : 62) + 18 * legend_rows;
    const int w = c.width, h = c.height + 18 * legend_rows;
    const double pw = w - left - right, ph = h - top - bottom;
    auto X = [&](double x) { return left + (x - xr.lo) / (xr.hi - xr.lo) * pw; };
    auto Y = [&](double y) {
        return top + ph - ((c.log_y ? std::log10(y) : y) - yr.lo) / (yr.hi - yr.lo) * ph;
    };
    auto Yv = [&](double v) { return top + ph - (v - yr.lo) / (yr.hi - yr.lo) * ph; }; // axis units

    std::string o = fmt::format("<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
                                "role=\"img\" aria-label=\"{}\">\n",
                                w, h, w, h, escape(c.title));
    o += fmt::format("<text class=\"title\" x=\"{}\" y=\"20\">{}</text>\n", w / 2, escape(c.title));
    if (!c.subtitle.empty())
        o += fmt::format("<text class=\"subtitle\" x=\"{}\" y=\"38\">{}</text>\n", w / 2, escape(c.subtitle));
    // Grid and tick labels.
    for (double t : yticks) {
        const auto y = coord(Yv(t));
        o += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", left, left + pw, y,
                         y);
        o += fmt::format("<text class=\"ytick\" x=\"{}\" y=\"{}\">{}</text>\n", left - 6, y,
                         c.log_y ? tick_text(std::pow(10.0, t)) : tick_text(t));
    }
    if (categorical)
        for (std::size_t i = 0; i < c.categories.size(); ++i) {
            const auto x = coord(X(double(i)));
            o += fmt::format("<text class=\"xcat\" transform=\"translate({},{}) rotate(30)\">{}</text>\n", x,
                             coord(top + ph + 14), escape(c.categories[i]));
        }
    else
        for (double t : xticks) {
            const auto x = coord(X(t));
            o += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", x, x, top,
                             top + ph);
            o += fmt::format("<text class=\"xtick\" x=\"{}\" y=\"{}\">{}</text>\n", x, coord(top + ph + 16),
                             tick_text(t));
        }
    o += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", left, top,
                     coord(pw), coord(ph));
    o += fmt::format("<text class=\"xlabel\" x=\"{}\" y=\"{}\">{}</text>\n", coord(left + pw / 2),
                     coord(top + ph + (categorical ? 66 : 36)), escape(c.x_label));
    o += fmt::format("<text class=\"ylabel\" transform=\"translate(16,{}) rotate(-90)\">{}</text>\n",
                     coord(top + ph / 2), escape(c.y_label));
    // Series: ordinary ones first, emphasised ones and rings on top.
    auto on_top = [](const Series& s) { return s.emphasis || s.rings; };
    std::size_t colour = 0;
    std::vector<std::pair<const Series*, std::string>> drawn;
    for (auto& s : c.series)
        drawn.emplace_back(&s, s.rings      ? std::string(ring_colour)
                               : s.emphasis ? emphasis_colour
                                            : palette[colour++ % std::size(palette)]);
    std::stable_sort(drawn.begin(), drawn.end(),
                     [&](auto& a, auto& b) { return !on_top(*a.first) && on_top(*b.first); });
    for (auto& [s, col] : drawn) {
        o += fmt::format("<g class=\"series{}\" data-series=\"{}\">", s->emphasis ? " emphasis" : "",
                         escape(s->name));
        if (s->line) {
            std::string path;
            for (auto& p : s->points)
                if (drawable(c, p))
                    path += fmt::format("{}{},{}", path.empty() ? "M" : " L", coord(X(p.x)), coord(Y(p.y)));
            if (!path.empty())
                o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"/>", path,
                                 col, s->emphasis ? 2.5 : 1.8);
        }
        for (auto& p : s->points) {
            if (!drawable(c, p)) continue;
            if (s->rings)
                o += fmt::format("<circle class=\"ring\" cx=\"{}\" cy=\"{}\" r=\"7\" fill=\"none\" "
                                 "stroke=\"{}\" stroke-width=\"1.5\" data-tip=\"{}\"/>",
                                 coord(X(p.x)), coord(Y(p.y)), col, escape(p.tip));
            else
                o += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"{} data-tip=\"{}\"/>",
                                 coord(X(p.x)), coord(Y(p.y)), s->emphasis ? 5 : 4, col,
                                 s->dots ? "" : " class=\"hover\"", escape(p.tip));
            if (!p.label.empty()) { // to the right of the point, or to its left in the plot's right part
                const bool left_side = X(p.x) > left + 0.7 * pw;
                o += fmt::format("<text class=\"plabel\" x=\"{}\" y=\"{}\" fill=\"{}\"{}>{}</text>",
                                 coord(X(p.x) + (left_side ? -7 : 7)), coord(Y(p.y) - 6), col,
                                 left_side ? " text-anchor=\"end\"" : "", escape(p.label));
            }
        }
        o += "</g>\n";
    }
    // Legend.
    for (std::size_t i = 0; i < drawn.size(); ++i) {
        auto& [s, col] = drawn[i];
        const double lx = left + double(i % 3) * pw / 3,
                     ly = h - 18.0 * legend_rows + 18.0 * double(i / 3) - 4;
        o += fmt::format("<g class=\"legend\"><rect x=\"{}\" y=\"{}\" width=\"14\" height=\"4\" fill=\"{}\"/>"
                         "<text x=\"{}\" y=\"{}\">{}</text></g>\n",
                         coord(lx), coord(ly - 6), col, coord(lx + 20), coord(ly), escape(s->name));
    }
    return o + "</svg>\n";
}

} // namespace cardsim::traces::report
