#include "cli/sweep/results.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <set>

namespace cardsim::cli::sweep {

std::string_view name(Status s) {
    switch (s) {
    case Status::Ok:
        return "ok";
    case Status::Mismatch:
        return "mismatch";
    case Status::Fault:
        return "fault";
    case Status::Refused:
        return "refused";
    case Status::Error:
        return "error";
    case Status::Crashed:
        return "crashed";
    default:
        return "timeout";
    }
}

namespace {

/// The figures copied from `cardsim run --machine` as they are.
constexpr std::string_view timing_figures[] = {
    "cycles", "seconds", "tokens_per_second", "ddr_bytes", "bandwidth_gbs", "roofline_fraction",
    // what `cardsim fit` estimates for the point's card
    "dsp", "alm", "m20k", "fmax_mhz", "watts", "tokens_per_joule", "fits"};
/// With a prompt length: the prefill's and decode's figures.
constexpr std::string_view prefill_figures[] = {
    "prefill_tokens_per_second", "ttft_seconds", "prefill_bound",           "prefill_roofline_fraction",
    "decode_tokens_per_second",  "decode_bound", "decode_roofline_fraction"};
constexpr std::string_view accuracy_figures[] = {"bit_exact", "max_abs_error", "top1_agreement", "kl"};
/// With `[serve]`: the served trace's figures (`cardsim serve --machine`).
constexpr std::string_view serve_figures[] = {"served",      "refused",     "output_tokens", "ttft_p50_ms",
                                              "ttft_p90_ms", "ttft_p99_ms", "tpot_p50_ms",   "tpot_p90_ms",
                                              "tpot_p99_ms", "e2e_p50_ms",  "e2e_p90_ms",    "e2e_p99_ms",
                                              "utilisation", "slots",       "largest_batch", "batch_limit"};

/// With experts: a step's distinct experts a Moe layer and expert bytes (`cardsim run --machine`).
constexpr std::string_view expert_figures[] = {"experts_touched_per_layer", "expert_bytes_per_step"};

/// With a plan over several cards: the system's size and its links (`cardsim run --machine`).
constexpr std::string_view system_figures[] = {"cards", "link_bytes", "link_utilisation"};

/// Whether the spec's points may run several cards: a plan other than `none`, or a plan axis.
bool with_cards(const SweepSpec& spec) {
    return spec.plan != "none" ||
           std::any_of(spec.axes.begin(), spec.axes.end(), [](auto& a) { return a.path == plan_axis; });
}

/// Whether the spec's points report expert figures: a decode sweep with a routing model, or of a
/// generated model with experts.
bool with_experts(const SweepSpec& spec) {
    if (spec.serve) return false;
    if (spec.routing ||
        std::any_of(spec.axes.begin(), spec.axes.end(), [](auto& a) { return a.path == routing_axis; }))
        return true;
    return std::any_of(spec.models.begin(), spec.models.end(), [](const ModelSource& m) {
        auto g = std::get_if<GeneratedModel>(&m.source);
        return g && g->arch.find("moe") != std::string::npos;
    });
}

/// The unit kinds a point of the spec may have: present on the base card, or with a swept count.
std::vector<card::UnitKind> busy_kinds(const SweepSpec& spec) {
    std::vector<card::UnitKind> kinds;
    for (auto k : card::all_unit_kinds) {
        const std::string count = fmt::format("units.{}.count", card::name(k));
        bool swept =
            std::any_of(spec.axes.begin(), spec.axes.end(), [&](auto& a) { return a.path == count; });
        // The router comes with experts: a swept capabilities.experts may add it.
        if (k == card::UnitKind::Router)
            swept = swept || std::any_of(spec.axes.begin(), spec.axes.end(),
                                         [](auto& a) { return a.path == "capabilities.experts"; });
        if (spec.base.units.has(k) || swept) kinds.push_back(k);
    }
    // Several cards: each has a network unit (not in `[units]`), often the busiest under ep.
    if (with_cards(spec)) kinds.push_back(card::UnitKind::Network);
    return kinds;
}

/// The unit kind of a machine key `busy_card.<kind>_<n>`.
std::optional<card::UnitKind> busy_kind(std::string_view key) {
    if (key.rfind("busy_", 0) != 0) return std::nullopt;
    key.remove_prefix(5);
    if (auto dot = key.rfind('.'); dot != std::string_view::npos) key.remove_prefix(dot + 1);
    auto us = key.rfind('_');
    if (us != std::string_view::npos && us + 1 < key.size() &&
        std::all_of(key.begin() + std::ptrdiff_t(us) + 1, key.end(),
                    [](char c) { return c >= '0' && c <= '9'; }))
        key = key.substr(0, us);
    return card::parse_unit_kind(key);
}

} // namespace

std::map<std::string, std::string, std::less<>> key_values(std::string_view text) {
    std::map<std::string, std::string, std::less<>> kv;
    while (!text.empty()) {
        auto nl = text.find('\n');
        auto line = text.substr(0, nl);
        if (auto eq = line.find('='); eq != std::string_view::npos)
            kv[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return kv;
}

namespace {

/// Standard error as one line: trimmed lines joined by ` | `, `error: ` dropped, the model's
/// directory replaced by its name.
std::string one_line(std::string_view err, const std::string& model_dir, const std::string& model_name) {
    std::string out;
    while (!err.empty()) {
        auto nl = err.find('\n');
        std::string_view line = err.substr(0, nl);
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
            line.remove_prefix(1);
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
            line.remove_suffix(1);
        if (line.rfind("error: ", 0) == 0) line.remove_prefix(7);
        if (line.rfind("refused: ", 0) == 0) line.remove_prefix(9);
        if (!line.empty()) out += (out.empty() ? "" : " | ") + std::string(line);
        if (nl == std::string_view::npos) break;
        err.remove_prefix(nl + 1);
    }
    for (std::size_t at; !model_dir.empty() && (at = out.find(model_dir)) != std::string::npos;)
        out.replace(at, model_dir.size(), model_name);
    return out;
}

/// A row with the point's identity filled and every figure empty.
CsvRow blank_row(const SweepSpec& spec, const Point& point, const CsvRow& columns) {
    CsvRow row(columns.size());
    row[0] = std::to_string(point.id);
    row[1] = spec.models[point.model].name;
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
        row[2 + a] = cell(point.values[a]);
    return row;
}

/// The index of column `name`.
std::size_t column(const CsvRow& columns, std::string_view name) {
    return std::size_t(std::find(columns.begin(), columns.end(), name) - columns.begin());
}

} // namespace

CsvRow result_columns(const SweepSpec& spec) {
    CsvRow c{"point", "model"};
    for (auto& a : spec.axes)
        c.push_back(a.path);
    c.push_back("status");
    for (auto f : timing_figures)
        c.emplace_back(f);
    if (spec.prompt_len)
        for (auto f : prefill_figures)
            c.emplace_back(f);
    if (with_experts(spec))
        for (auto f : expert_figures)
            c.emplace_back(f);
    if (with_cards(spec))
        for (auto f : system_figures)
            c.emplace_back(f);
    if (spec.serve)
        for (auto f : serve_figures)
            c.emplace_back(f);
    for (auto k : busy_kinds(spec))
        c.push_back(fmt::format("busy_{}", card::name(k)));
    c.emplace_back("arena_bytes");
    c.emplace_back("sram_fraction");
    if (spec.full && spec.serve)
        c.emplace_back("bit_exact"); // a served trace is checked bit for bit, its accuracy not measured
    else if (spec.full)
        for (auto f : accuracy_figures)
            c.emplace_back(f);
    c.emplace_back("error");
    return c;
}

CsvRow result_row(const SweepSpec& spec, const Point& point, const std::optional<card::CardConfig>& config,
                  const std::filesystem::path& model_dir, const RunOutput& run) {
    const CsvRow columns = result_columns(spec);
    CsvRow row = blank_row(spec, point, columns);
    auto kv = key_values(run.out);
    auto get = [&](std::string_view k) -> std::string {
        auto it = kv.find(k);
        return it == kv.end() ? std::string() : it->second;
    };
    const std::string& model_name = spec.models[point.model].name;
    const std::string err = one_line(run.err, model_dir.string(), model_name);
    Status status = Status::Ok;
    std::string error;
    if (run.timed_out) {
        status = Status::Timeout;
        error = "timed out" + (err.empty() ? "" : ": " + err);
    } else if (run.ended.signal || (run.ended.code != 0 && run.ended.code != 1 && run.ended.code != 2)) {
        status = Status::Crashed;
        error = run.ended.text() + (err.empty() ? "" : ": " + err);
    } else if (run.ended.code == 2) {
        status = Status::Error;
        error = err.empty() ? "cardsim run: bad input (exit code 2)" : err;
    } else if (run.ended.code == 1) {
        const bool refused_run = run.err.find("refused: ") != std::string::npos && kv.empty();
        const auto refused_requests = get("refused");
        if (refused_run) { // the card refuses the point's model, or it does not fit the DDR or SRAM
            status = Status::Refused;
            error = err;
        } else if (!get("fault").empty()) {
            status = Status::Fault;
            error = one_line(get("fault"), model_dir.string(), model_name);
        } else if (get("bit_exact") != "no" && !refused_requests.empty() && refused_requests != "0") {
            status = Status::Refused; // a served trace with requests the card could not hold
            error = fmt::format("{} requests refused{}", refused_requests,
                                get("first_refusal").empty() ? "" : ": " + get("first_refusal"));
        } else {
            status = Status::Mismatch;
            error = "not bit-exact against the golden executor (`cardsim run` prints the first difference)";
        }
    }
    row[column(columns, "status")] = name(status);
    row[column(columns, "error")] = error;
    if (status == Status::Error || status == Status::Crashed || status == Status::Timeout ||
        (status == Status::Refused && kv.empty()))
        return row;
    for (auto f : timing_figures)
        row[column(columns, f)] = get(f);
    if (spec.prompt_len)
        for (auto f : prefill_figures)
            row[column(columns, f)] = get(f);
    if (with_experts(spec))
        for (auto f : expert_figures)
            row[column(columns, f)] = get(f);
    if (with_cards(spec))
        for (auto f : system_figures)
            row[column(columns, f)] = get(f);
    if (spec.serve)
        for (auto f : serve_figures)
            row[column(columns, f)] = get(f);
    if (spec.full && spec.serve)
        row[column(columns, "bit_exact")] = get("bit_exact");
    else if (spec.full)
        for (auto f : accuracy_figures)
            row[column(columns, f)] = get(f);
    // Busy fraction of a kind: the mean over its instances.
    std::map<card::UnitKind, double> busy;
    std::map<card::UnitKind, std::size_t> seen;
    for (auto& [k, v] : kv)
        if (auto kind = busy_kind(k)) {
            busy[*kind] += std::strtod(v.c_str(), nullptr);
            ++seen[*kind];
        }
    for (auto k : busy_kinds(spec)) {
        // Every card's instances (busy_card<c>.<kind>_<n> under a plan): the mean over all of them.
        // (The network unit is not in `[units]`: one a card of a system, each in the machine lines.)
        std::size_t instances =
            config && k != card::UnitKind::Network
                ? (*config).units[k].count * std::max<std::size_t>(1, config->system.cards)
                : seen[k];
        double mean = instances ? busy[k] / double(instances) : 0.0;
        row[column(columns, fmt::format("busy_{}", card::name(k)))] = fmt::format("{}", mean);
    }
    const std::string arena = get("arena_bytes");
    row[column(columns, "arena_bytes")] = arena;
    if (config && !arena.empty())
        row[column(columns, "sram_fraction")] =
            fmt::format("{}", std::strtod(arena.c_str(), nullptr) / double(config->sram.bytes));
    return row;
}

CsvRow error_row(const SweepSpec& spec, const Point& point, const std::string& message) {
    const CsvRow columns = result_columns(spec);
    CsvRow row = blank_row(spec, point, columns);
    row[column(columns, "status")] = name(Status::Error);
    row[column(columns, "error")] = one_line(message, "", "");
    return row;
}

std::size_t row_id(const CsvRow& row, std::string_view where) {
    std::size_t id = 0;
    const std::string& c = row.at(0);
    auto r = std::from_chars(c.data(), c.data() + c.size(), id);
    if (c.empty() || r.ec != std::errc() || r.ptr != c.data() + c.size())
        throw Error(fmt::format("{}: point `{}` is not a point number", where, c));
    return id;
}

ResultsFile::ResultsFile(std::filesystem::path path, const SweepSpec& spec, const Grid& grid)
    : path_(std::move(path)), header_(result_columns(spec)), status_column_(column(header_, "status")) {
    if (std::filesystem::exists(path_)) {
        auto table = read_csv(path_, /*drop_partial_tail=*/true);
        if (table.header != header_)
            throw Error(fmt::format(
                "{}:1: its columns ({}) are not this spec's ({}); the directory holds another "
                "sweep's results: use another -o DIR or remove the file",
                path_.string(), csv_line(table.header).substr(0, csv_line(table.header).size() - 1),
                csv_line(header_).substr(0, csv_line(header_).size() - 1)));
        std::map<std::size_t, const Point*> points;
        for (auto& p : grid.points)
            points[p.id] = &p;
        for (std::size_t i = 0; i < table.rows.size(); ++i) {
            const std::string where = fmt::format("{}:{}", path_.string(), table.lines[i]);
            auto& r = table.rows[i];
            std::size_t id = row_id(r, where);
            auto it = points.find(id);
            // A point of the full grid that a skip_if added since leaves out: its row goes with it
            // (point ids are the full grid's, so the others keep theirs).
            if (it == points.end() && id < grid.full_size && !spec.skip_if.empty()) continue;
            if (it == points.end())
                throw Error(
                    fmt::format("{}: point {} is not in this spec's grid (of {} points, {} kept by skip_if); "
                                "the directory holds another sweep's results",
                                where, id, grid.full_size, grid.points.size()));
            CsvRow want = blank_row(spec, *it->second, header_);
            for (std::size_t c = 1; c < 2 + spec.axes.size(); ++c)
                if (r[c] != want[c])
                    throw Error(fmt::format(
                        "{}: point {} has {}={} but this spec's point {} has {}={}; the directory "
                        "holds another sweep's results",
                        where, id, header_[c], r[c], id, header_[c], want[c]));
            rows_[id] = std::move(r);
        }
    } else {
        std::filesystem::create_directories(path_.parent_path());
    }
    finish();
}

const CsvRow* ResultsFile::row(std::size_t id) const {
    auto it = rows_.find(id);
    return it == rows_.end() ? nullptr : &it->second;
}

void ResultsFile::forget_failures() {
    std::erase_if(rows_, [&](auto& kv) { return kv.second[status_column_] != name(Status::Ok); });
    finish();
}

void ResultsFile::add(CsvRow row) {
    auto id = row_id(row, path_.string());
    append_record(path_, csv_line(row));
    rows_[id] = std::move(row);
}

void ResultsFile::finish() const {
    CsvTable t;
    t.header = header_;
    for (auto& [id, r] : rows_)
        t.rows.push_back(r);
    io::write_file_atomically(path_, csv_text(t));
}

MergeOutcome merge_results(const std::vector<std::filesystem::path>& inputs,
                           const std::filesystem::path& output) {
    if (inputs.empty()) throw Error("--merge: expected at least one results directory or CSV file");
    CsvRow header;
    std::filesystem::path header_from;
    std::map<std::size_t, std::pair<CsvRow, std::string>> rows;
    // Shards of one sweep ran with the same settings (sweep-settings.txt: the spec, its config's
    // digest, tokens, ...): rows of different settings in one file would read as one sweep.
    std::optional<std::pair<std::string, std::filesystem::path>> settings;
    for (auto& in : inputs) {
        auto file = std::filesystem::is_directory(in) ? in / "results.csv" : in;
        if (!std::filesystem::is_regular_file(file))
            throw Error(fmt::format("--merge: `{}` is not a results.csv file or a directory holding one",
                                    in.string()));
        if (const auto recorded = in / "sweep-settings.txt"; // a directory's (CSV files are rows alone)
            std::filesystem::is_directory(in) && std::filesystem::is_regular_file(recorded)) {
            auto text = io::read_file(recorded);
            if (!settings)
                settings.emplace(std::move(text), recorded);
            else if (text != settings->first)
                throw Error(fmt::format("--merge: {} differs from {}; expected shards of one sweep, run with "
                                        "the same settings",
                                        recorded.string(), settings->second.string()));
        }
        auto t = read_csv(file, /*drop_partial_tail=*/true);
        if (header_from.empty())
            header = t.header, header_from = file;
        else if (t.header != header)
            throw Error(fmt::format("{}:1: its columns differ from those of {}; expected shards of one sweep",
                                    file.string(), header_from.string()));
        if (header.empty() || header[0] != "point")
            throw Error(
                fmt::format("{}:1: expected a sweep results header starting with `point`", file.string()));
        for (std::size_t i = 0; i < t.rows.size(); ++i) {
            const std::string where = fmt::format("{}:{}", file.string(), t.lines[i]);
            auto id = row_id(t.rows[i], where);
            auto [it, fresh] = rows.try_emplace(id, t.rows[i], where);
            if (!fresh && it->second.first != t.rows[i])
                throw Error(fmt::format(
                    "{}: point {} differs from its row at {}; expected each point once or the same", where,
                    id, it->second.second));
        }
    }
    const auto status = std::find(header.begin(), header.end(), "status");
    if (status == header.end())
        throw Error(fmt::format("{}:1: expected a sweep results header with a `status` column",
                                header_from.string()));
    const auto status_column = std::size_t(status - header.begin());
    CsvTable merged;
    merged.header = header;
    MergeOutcome outcome;
    for (auto& [id, r] : rows) {
        if (status_column >= r.first.size() || r.first[status_column] != name(Status::Ok)) ++outcome.failed;
        merged.rows.push_back(r.first);
    }
    auto out = output.extension() == ".csv" ? output : output / "results.csv";
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
    // Both files are written and staged before either is renamed into place: a failure leaves each
    // as it was. The merged directory records the shards' settings: a later run into it checks
    // against them.
    std::vector<io::AtomicFile> files;
    files.emplace_back(out);
    files.back().write(csv_text(merged));
    files.back().stage();
    if (settings && output.extension() != ".csv") {
        files.emplace_back(output / "sweep-settings.txt");
        files.back().write(settings->first);
        files.back().stage();
    }
    for (auto& f : files)
        f.publish();
    outcome.rows = merged.rows.size();
    return outcome;
}

} // namespace cardsim::cli::sweep
