#include "cli/sweep/table.hpp"

#include "engine/error.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <set>

namespace cardsim::cli::sweep {

std::size_t ResultsTable::column(std::string_view name) const {
    return std::size_t(std::find(table.header.begin(), table.header.end(), name) - table.header.begin());
}

bool ResultsTable::fits(std::size_t row) const {
    return !has("fits") || at(row, column("fits")) != "no";
}

std::vector<std::size_t> ResultsTable::not_fitting() const {
    std::vector<std::size_t> v;
    for (auto i : ok)
        if (!fits(i)) v.push_back(i);
    return v;
}

ResultsTable load_results(const std::filesystem::path& file) {
    ResultsTable r;
    r.table = read_csv(file, /*drop_partial_tail=*/true);
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

std::optional<double> number(const std::string& s) {
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return std::nullopt;
    return v;
}

bool numeric(const ResultsTable& r, std::size_t col) {
    return std::all_of(r.ok.begin(), r.ok.end(), [&](auto i) { return number(r.at(i, col)).has_value(); });
}

std::vector<std::string> distinct(const ResultsTable& r, std::size_t col) {
    std::vector<std::string> v;
    for (auto i : r.ok)
        if (std::find(v.begin(), v.end(), r.at(i, col)) == v.end()) v.push_back(r.at(i, col));
    if (numeric(r, col))
        std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return *number(a) < *number(b); });
    return v;
}

std::vector<std::size_t> varying(const ResultsTable& r) {
    std::vector<std::size_t> v;
    for (auto c : r.axes)
        if (distinct(r, c).size() > 1) v.push_back(c);
    return v;
}

std::string axis_values(const ResultsTable& r, std::size_t row) {
    std::string s;
    for (auto c : varying(r))
        s += (s.empty() ? "" : "/") + r.at(row, c);
    return s.empty() ? r.at(row, 0) : s;
}

std::string subtitle(const ResultsTable& r) {
    std::vector<std::string> seen;
    for (std::size_t i = 0; i < r.table.rows.size(); ++i)
        if (std::find(seen.begin(), seen.end(), r.at(i, 1)) == seen.end()) seen.push_back(r.at(i, 1));
    std::string models;
    for (auto& m : seen)
        models += (models.empty() ? "" : ", ") + m;
    const auto failed = r.table.rows.size() - r.ok.size();
    const auto misfit = r.not_fitting().size();
    return fmt::format("{}; {} points{}{}", models, r.ok.size(),
                       misfit ? fmt::format(" ({} do not fit the chip: rings)", misfit) : "",
                       failed ? fmt::format(" ({} failed, not shown)", failed) : "");
}

std::string label(std::string_view figure) {
    if (figure == "tokens_per_second") return "tokens/s (simulated card)";
    if (figure == "roofline_fraction") return "roofline fraction (DDR bytes / peak bandwidth / time)";
    if (figure == "max_abs_error") return "max |logit error| vs f64 reference";
    if (figure == "kl") return "KL(reference || card), nats";
    if (figure == "top1_agreement") return "top-1 agreement with f64 reference";
    if (figure == "dsp") return "DSP blocks (estimated, cardsim fit)";
    if (figure == "watts") return "card power, W (estimated, cardsim fit)";
    if (figure == "tokens_per_joule") return "tokens per joule";
    if (figure == "tpot_p99_ms") return "p99 time per output token, ms (served trace)";
    if (figure == "ttft_p99_ms") return "p99 time to first token, ms (served trace)";
    return std::string(figure);
}

bool lower_is_better(std::string_view figure) {
    return figure != "top1_agreement";
}

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

Front front_of(const ResultsTable& r, std::string_view figure) {
    const std::size_t x = r.column("tokens_per_second"), y = r.column(figure);
    Front f;
    if (y >= r.table.header.size()) return f;
    std::vector<std::pair<double, double>> pts; // the fitting points only
    std::vector<std::size_t> fitting;           // their indices into f.rows
    for (auto i : r.ok)
        if (auto a = number(r.at(i, x)), b = number(r.at(i, y)); a && b) {
            const std::size_t k = f.rows.size();
            f.rows.push_back(i);
            if (r.fits(i)) {
                fitting.push_back(k);
                pts.emplace_back(*a, *b);
            } else
                f.misfit.push_back(k);
        }
    for (auto k : pareto_front(pts, lower_is_better(figure)))
        f.front.push_back(fitting[k]);
    return f;
}

} // namespace cardsim::cli::sweep
