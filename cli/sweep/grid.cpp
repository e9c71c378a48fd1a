#include "cli/sweep/grid.hpp"

#include "cli/sweep/config_value.hpp"
#include "engine/error.hpp"

#include <fmt/core.h>

#include <charconv>

namespace cardsim::cli::sweep {

Grid build_grid(const SweepSpec& spec) {
    Grid grid;
    const ConfigValues base(spec.base);
    grid.full_size = spec.models.size();
    for (auto& a : spec.axes)
        grid.full_size *= a.values.size();
    for (std::size_t id = 0; id < grid.full_size; ++id) {
        Point p;
        p.id = id;
        p.values.resize(spec.axes.size());
        std::size_t rest = id;
        for (std::size_t a = spec.axes.size(); a-- > 0;) {
            p.values[a] = spec.axes[a].values[rest % spec.axes[a].values.size()];
            rest /= spec.axes[a].values.size();
        }
        p.model = rest;
        auto lookup = [&](const std::string& name) -> Value {
            if (name == "model") return spec.models[p.model].name;
            for (std::size_t a = 0; a < spec.axes.size(); ++a)
                if (spec.axes[a].path == name) return expression_value(p.values[a]);
            return *base.get(name); // spec validation checked that every other name is a config key
        };
        bool skip = false;
        for (auto& c : spec.skip_if) {
            const std::string where = fmt::format("{}: at point {} ({})", c.where, id, describe(spec, p));
            Value v = c.expression.evaluate(lookup, where);
            auto b = std::get_if<bool>(&v);
            if (!b)
                throw Error(fmt::format("{}: skip_if \"{}\" is {}; expected a comparison (true or false)",
                                        where, c.expression.text(), show(v)));
            skip = skip || *b;
        }
        if (!skip) grid.points.push_back(std::move(p));
    }
    return grid;
}

Shard parse_shard(std::string_view text) {
    auto bad = [&] {
        return Error(fmt::format("--shard {}: expected i/N with 0 <= i < N (e.g. --shard 0/4)", text));
    };
    auto slash = text.find('/');
    if (slash == std::string_view::npos) throw bad();
    Shard s;
    auto a = text.substr(0, slash), b = text.substr(slash + 1);
    auto ra = std::from_chars(a.data(), a.data() + a.size(), s.index);
    auto rb = std::from_chars(b.data(), b.data() + b.size(), s.count);
    if (a.empty() || b.empty() || ra.ec != std::errc() || ra.ptr != a.data() + a.size() ||
        rb.ec != std::errc() || rb.ptr != b.data() + b.size() || s.count == 0 || s.index >= s.count)
        throw bad();
    return s;
}

std::vector<Point> shard_points(const std::vector<Point>& points, Shard shard) {
    std::vector<Point> out;
    for (std::size_t i = shard.index; i < points.size(); i += shard.count)
        out.push_back(points[i]);
    return out;
}

std::vector<card::Override> overrides(const SweepSpec& spec, const Point& point) {
    std::vector<card::Override> out;
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        if (!run_axis(spec.axes[a].path)) out.push_back({spec.axes[a].path, toml_literal(point.values[a])});
    return out;
}

namespace {

/// The value of the run axis `path` at `point`, or `single` when it is not an axis.
std::size_t run_value(const SweepSpec& spec, const Point& point, std::string_view path, std::size_t single) {
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        if (spec.axes[a].path == path) return std::size_t(std::get<std::int64_t>(point.values[a]));
    return single;
}

} // namespace

std::size_t point_tokens(const SweepSpec& spec, const Point& point) {
    return run_value(spec, point, tokens_axis, spec.tokens);
}

std::size_t point_seqs(const SweepSpec& spec, const Point& point) {
    return run_value(spec, point, seqs_axis, spec.seqs);
}

std::size_t point_serve(const SweepSpec& spec, const Point& point, std::string_view path,
                        std::size_t single) {
    return run_value(spec, point, path, single);
}

std::optional<std::string> point_routing(const SweepSpec& spec, const Point& point) {
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        if (spec.axes[a].path == routing_axis) return std::get<std::string>(point.values[a]);
    return spec.routing;
}

std::string point_plan(const SweepSpec& spec, const Point& point) {
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        if (spec.axes[a].path == plan_axis) return std::get<std::string>(point.values[a]);
    return spec.plan;
}

double point_rate(const SweepSpec& spec, const Point& point) {
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        if (spec.axes[a].path == "serve.rate") return std::get<double>(point.values[a]);
    return spec.serve ? spec.serve->rate : 0.0;
}

std::string describe(const SweepSpec& spec, const Point& point) {
    std::string s = fmt::format("model={}", spec.models[point.model].name);
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        s += fmt::format(" {}={}", spec.axes[a].path, cell(point.values[a]));
    return s;
}

} // namespace cardsim::cli::sweep
