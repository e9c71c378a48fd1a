#include "traces/report/run_facts.hpp"

#include "engine/error.hpp"

#include <boost/json.hpp>
#include <fmt/core.h>

namespace cardsim::traces::report {
namespace {

namespace json = boost::json;

json::array numbers(const auto& values) {
    json::array a;
    for (auto v : values)
        a.push_back(static_cast<std::uint64_t>(v));
    return a;
}

json::value optional_text(const std::optional<std::string>& s) {
    return s ? json::value(*s) : json::value(nullptr);
}

json::value optional_count(const std::optional<std::size_t>& v) {
    return v ? json::value(static_cast<std::uint64_t>(*v)) : json::value(nullptr);
}

json::object summary(const RunFacts& f) {
    json::object o;
    o["program"] = optional_text(f.program);
    o["prompt"] = numbers(f.prompt);
    o["generated"] = numbers(f.generated);
    o["fault"] = optional_text(f.fault);
    o["steps"] = f.steps;
    o["prefill_steps"] = f.prefill_steps;
    if (f.seqs != 1) { // one-sequence summaries stay as they were
        o["seqs"] = f.seqs;
        json::array seqs;
        for (auto& [prompt, generated] : f.sequences)
            seqs.push_back(json::object{{"prompt", numbers(prompt)}, {"generated", numbers(generated)}});
        o["sequences"] = std::move(seqs);
    }
    o["cycles"] = f.cycles;
    o["seconds"] = f.seconds;
    o["step_end"] = numbers(f.step_end);
    o["ddr_bytes"] = f.ddr_bytes;
    o["peak_bytes_per_second"] = f.peak_bytes_per_second;
    o["arena_bytes"] = f.arena_bytes;
    json::array ch;
    for (auto& c : f.channels)
        ch.push_back(json::object{{"read", c.read},
                                  {"written", c.written},
                                  {"row_hits", c.row_hits},
                                  {"row_misses", c.row_misses},
                                  {"row_conflicts", c.row_conflicts}});
    o["channels"] = std::move(ch);
    o["watts"] = f.watts;
    o["fit"] = f.fit;
    json::array busy;
    for (auto& [unit, cycles] : f.unit_busy)
        busy.push_back(json::array{json::value(unit), json::value(cycles)});
    o["unit_busy"] = std::move(busy);
    o["bit_exact"] = f.bit_exact ? json::value(*f.bit_exact) : json::value(nullptr);
    o["mismatch"] = f.mismatch;
    o["unchecked"] = f.unchecked;
    o["mismatch_step"] = optional_count(f.mismatch_step);
    o["mismatch_layer"] = optional_count(f.mismatch_layer);
    o["layers_checked"] = numbers(f.layers_checked);
    if (f.accuracy)
        o["accuracy"] = json::object{{"steps", f.accuracy->steps},
                                     {"max_abs_error", f.accuracy->max_abs_error},
                                     {"top1_agreement", f.accuracy->top1_agreement},
                                     {"kl", f.accuracy->kl}};
    else
        o["accuracy"] = nullptr;
    return o;
}

json::array texts(const std::vector<std::string>& v) {
    json::array a;
    for (auto& s : v)
        a.push_back(json::value(s));
    return a;
}

json::object verdicts(const Verdicts& v) {
    json::array rows;
    for (auto& r : v.rows)
        rows.push_back(json::object{{"part", r.part},
                                    {"layers", r.layers},
                                    {"answer", r.answer},
                                    {"class", r.cls},
                                    {"ops", r.ops},
                                    {"commands", r.commands},
                                    {"count", r.count}});
    return json::object{{"rows", std::move(rows)},
                        {"declined", texts(v.declined)},
                        {"refusals", texts(v.refusals)},
                        {"verdict", v.verdict}};
}

/// Reads one recorded value, failing with the key and what was expected.
class Fields {
public:
    Fields(std::string_view source, std::string_view key) : source_(source), key_(key) {}

    [[noreturn]] void fail(std::string_view what) const {
        throw Error(fmt::format("{}: meta {}: {}", source_, key_, what));
    }
    json::value parse(std::string_view text) const {
        boost::system::error_code ec;
        auto v = json::parse(text, ec);
        if (ec) fail(fmt::format("not JSON ({})", ec.message()));
        return v;
    }
    const json::object& object(const json::value& v, std::string_view what) const {
        if (!v.is_object()) fail(fmt::format("{} is not a JSON object", what));
        return v.get_object();
    }
    const json::value& at(const json::object& o, std::string_view field) const {
        auto* v = o.if_contains(field);
        if (!v) fail(fmt::format("the field `{}` is missing", field));
        return *v;
    }
    std::uint64_t count(const json::value& v, std::string_view field) const {
        if (v.is_uint64()) return v.get_uint64();
        if (v.is_int64() && v.get_int64() >= 0) return std::uint64_t(v.get_int64());
        fail(fmt::format("`{}` is not an unsigned integer", field));
    }
    std::uint64_t count(const json::object& o, std::string_view field) const {
        return count(at(o, field), field);
    }
    double real(const json::object& o, std::string_view field) const {
        auto& v = at(o, field);
        if (v.is_double()) return v.get_double();
        if (v.is_uint64()) return double(v.get_uint64());
        if (v.is_int64()) return double(v.get_int64());
        fail(fmt::format("`{}` is not a number", field));
    }
    std::string text(const json::value& v, std::string_view field) const {
        if (!v.is_string()) fail(fmt::format("`{}` is not a string", field));
        return std::string(v.get_string());
    }
    std::string text(const json::object& o, std::string_view field) const {
        return text(at(o, field), field);
    }
    std::optional<std::string> optional_text(const json::object& o, std::string_view field) const {
        auto& v = at(o, field);
        if (v.is_null()) return std::nullopt;
        return text(v, field);
    }
    std::optional<std::size_t> optional_count(const json::object& o, std::string_view field) const {
        auto& v = at(o, field);
        if (v.is_null()) return std::nullopt;
        return count(v, field);
    }
    const json::array& array(const json::object& o, std::string_view field) const {
        auto& v = at(o, field);
        if (!v.is_array()) fail(fmt::format("`{}` is not an array", field));
        return v.get_array();
    }
    template <class T>
    std::vector<T> counts(const json::object& o, std::string_view field) const {
        std::vector<T> out;
        for (auto& v : array(o, field)) {
            auto n = count(v, field);
            if (n > std::numeric_limits<T>::max()) fail(fmt::format("`{}` holds {}, too large", field, n));
            out.push_back(T(n));
        }
        return out;
    }
    std::vector<std::string> texts(const json::object& o, std::string_view field) const {
        std::vector<std::string> out;
        for (auto& v : array(o, field))
            out.push_back(text(v, field));
        return out;
    }

private:
    std::string_view source_, key_;
};

void read_summary(RunFacts& f, std::string_view text, std::string_view source) {
    Fields in(source, "run.summary");
    auto doc = in.parse(text);
    auto& o = in.object(doc, "the value");
    f.program = in.optional_text(o, "program");
    f.prompt = in.counts<std::uint32_t>(o, "prompt");
    f.generated = in.counts<std::uint32_t>(o, "generated");
    f.fault = in.optional_text(o, "fault");
    f.steps = in.count(o, "steps");
    f.prefill_steps = in.count(o, "prefill_steps");
    if (o.contains("seqs")) { // absent in traces of one sequence
        f.seqs = in.count(o, "seqs");
        for (auto& q : in.array(o, "sequences")) {
            auto& e = in.object(q, "a `sequences` entry");
            f.sequences.emplace_back(in.counts<std::uint32_t>(e, "prompt"),
                                     in.counts<std::uint32_t>(e, "generated"));
        }
    }
    f.cycles = in.count(o, "cycles");
    f.seconds = in.real(o, "seconds");
    f.step_end = in.counts<std::uint64_t>(o, "step_end");
    f.ddr_bytes = in.count(o, "ddr_bytes");
    f.peak_bytes_per_second = in.real(o, "peak_bytes_per_second");
    f.arena_bytes = in.count(o, "arena_bytes");
    for (auto& c : in.array(o, "channels")) {
        auto& ch = in.object(c, "a `channels` entry");
        f.channels.push_back({in.count(ch, "read"), in.count(ch, "written"), in.count(ch, "row_hits"),
                              in.count(ch, "row_misses"), in.count(ch, "row_conflicts")});
    }
    f.watts = in.real(o, "watts");
    f.fit = in.text(o, "fit");
    for (auto& u : in.array(o, "unit_busy")) {
        if (!u.is_array() || u.get_array().size() != 2)
            in.fail("a `unit_busy` entry is not a pair [unit, cycles]");
        f.unit_busy.emplace_back(in.text(u.get_array()[0], "unit_busy"),
                                 in.count(u.get_array()[1], "unit_busy"));
    }
    auto& exact = in.at(o, "bit_exact");
    if (exact.is_bool())
        f.bit_exact = exact.get_bool();
    else if (!exact.is_null())
        in.fail("`bit_exact` is not true, false or null");
    f.mismatch = in.text(o, "mismatch");
    f.unchecked = in.text(o, "unchecked");
    f.mismatch_step = in.optional_count(o, "mismatch_step");
    f.mismatch_layer = in.optional_count(o, "mismatch_layer");
    f.layers_checked = in.counts<std::size_t>(o, "layers_checked");
    auto& acc = in.at(o, "accuracy");
    if (!acc.is_null()) {
        auto& a = in.object(acc, "`accuracy`");
        f.accuracy = AccuracyFacts{in.count(a, "steps"), in.real(a, "max_abs_error"),
                                   in.real(a, "top1_agreement"), in.real(a, "kl")};
    }
}

Verdicts read_verdicts(std::string_view text, std::string_view source) {
    Fields in(source, "run.shim");
    auto doc = in.parse(text);
    auto& o = in.object(doc, "the value");
    Verdicts v;
    for (auto& r : in.array(o, "rows")) {
        auto& row = in.object(r, "a `rows` entry");
        v.rows.push_back({in.text(row, "part"), in.text(row, "layers"), in.text(row, "answer"),
                          in.text(row, "class"), in.text(row, "ops"), in.text(row, "commands"),
                          in.count(row, "count")});
    }
    v.declined = in.texts(o, "declined");
    v.refusals = in.texts(o, "refusals");
    v.verdict = in.text(o, "verdict");
    return v;
}

} // namespace

void record(const RunFacts& facts, std::map<std::string, std::string>& meta) {
    meta["run.model"] = facts.model;
    meta["run.summary"] = json::serialize(summary(facts));
    if (!facts.card.empty()) meta["run.card"] = facts.card;
    if (facts.verdicts) meta["run.shim"] = json::serialize(verdicts(*facts.verdicts));
}

std::optional<RunFacts> recorded(const Header& header, std::string_view source) {
    auto summary_text = header.meta.find("run.summary");
    if (summary_text == header.meta.end()) return std::nullopt;
    RunFacts f;
    if (auto m = header.meta.find("run.model"); m != header.meta.end()) f.model = m->second;
    read_summary(f, summary_text->second, source);
    if (auto c = header.meta.find("run.card"); c != header.meta.end()) f.card = c->second;
    if (auto s = header.meta.find("run.shim"); s != header.meta.end())
        f.verdicts = read_verdicts(s->second, source);
    return f;
}

std::string_view weights_phrase(std::string_view weights) {
    return weights == "cache"  ? " (weights from the pack cache)"
           : weights == "none" ? " (shapes only: no weights packed)"
                               : "";
}

std::string host_phases(const HostFacts& h, std::size_t steps, double simulated_seconds) {
    const std::string_view from = weights_phrase(h.weights);
    std::string o =
        fmt::format("load {:.2f} s, compile {:.2f} s{}, simulation {:.2f} s ({}setup {:.2f} s, steps "
                    "{:.2f} s: {:.3g} ms a step, {:.2f}x the simulated time)",
                    h.load, h.compile, from, h.seconds,
                    h.prefill_seconds > 0 ? fmt::format("prefill {:.2f} s, ", h.prefill_seconds) : "",
                    h.setup_seconds, h.steps_seconds, steps ? 1e3 * h.steps_seconds / double(steps) : 0.0,
                    simulated_seconds > 0 ? h.steps_seconds / simulated_seconds : 0.0);
    if (h.golden) o += fmt::format(", golden {:.2f} s", *h.golden);
    if (h.reference) o += fmt::format(", reference {:.2f} s", *h.reference);
    return o;
}

} // namespace cardsim::traces::report
