#pragma once
// Charts as inline SVG: series of points against a numeric or a categorical x axis, lines or
// points, a linear or logarithmic y axis. Every point carries a tooltip (`data-tip`, shown by
// the report's script) and the chart needs nothing from outside the page.

#include <string>
#include <vector>

namespace cardsim::traces::report {

/// One point of a series: its position, an optional label drawn beside it, and its tooltip.
struct ChartPoint {
    double x = 0, y = 0;
    std::string label{}; ///< drawn beside the point when not empty
    std::string tip{};   ///< the tooltip text (lines separated by '\n')
};

/// A named run of points, joined by a line or drawn as points only; `emphasis` draws it over the
/// others, thicker and in red (a Pareto front).
struct Series {
    std::string name;
    std::vector<ChartPoint> points{};
    bool line = true;
    bool emphasis = false;
    bool dots = true;   ///< draw the points; when false they are invisible, kept for their tooltips
    bool rings = false; ///< draw each point as a black ring, over the others (points set apart)
};

/// A chart. With `categories`, x values are indices into it (0, 1, ...) and the axis shows the
/// names; otherwise x is numeric. The y axis starts at zero unless `log_y` or a value is negative.
struct Chart {
    std::string title, subtitle{}, x_label{}, y_label{};
    std::vector<std::string> categories{};
    std::vector<double> x_ticks{}; ///< numeric x: ticks at these values (empty: round values)
    std::vector<Series> series{};
    bool log_y = false;
    int width = 660, height = 420;
};

/// Tick positions covering [lo, hi]: about `count` round values (1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double lo, double hi, int count);

/// A tick value as short text: whole numbers in full (`0`, `20000`), others to 4 significant
/// digits (`2.5`, `0.001`, `1.5e-05`).
std::string tick_text(double v);

/// The chart as an `<svg>` element (no XML declaration, no namespace URL: HTML5 inline SVG).
/// Points with a non-finite coordinate, or y <= 0 on a log axis, are left out.
std::string svg(const Chart& chart);

} // namespace cardsim::traces::report
