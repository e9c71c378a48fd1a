#include "cli/sweep/spec.hpp"

#include "cli/sweep/config_value.hpp"
#include "engine/error.hpp"
#include "engine/graph/routing.hpp"
#include "engine/io/atomic_file.hpp"
#include "engine/lower/plan.hpp"
#include "models/synthetic.hpp"
#include "serve/generate.hpp"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

namespace cardsim::cli::sweep {

std::string cell(const AxisValue& v) {
    if (auto i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
    if (auto d = std::get_if<double>(&v)) {
        std::string s = fmt::format("{}", *d);
        if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
        return s;
    }
    if (auto s = std::get_if<std::string>(&v)) return *s;
    return std::get<bool>(v) ? "true" : "false";
}

std::string toml_literal(const AxisValue& v) {
    auto s = std::get_if<std::string>(&v);
    if (!s) return cell(v);
    std::string q = "\"";
    for (char c : *s) {
        if (c == '"' || c == '\\') q += '\\';
        q += c;
    }
    return q + "\"";
}

Value expression_value(const AxisValue& v) {
    if (auto i = std::get_if<std::int64_t>(&v)) return double(*i);
    if (auto d = std::get_if<double>(&v)) return *d;
    if (auto s = std::get_if<std::string>(&v)) return *s;
    return std::get<bool>(v);
}

namespace {

/// Most values one axis or the whole grid may have (a guard against a range with a tiny step).
constexpr std::size_t max_axis_values = 10000;
constexpr std::size_t max_points = 1000000;

/// The names `cardsim make-model` knows.
constexpr std::string_view arch_names = "dense, hybrid, hybrid-moe, moe, encoder, windowed, softcap or mla";
constexpr std::string_view size_names =
    "tiny, small, 0.1b or 0.8b (shapes only also 1.7b, 4b, 8b, 14b or 32b)";

/// Reads the spec's TOML with source positions: every error names the file and line.
class SpecReader {
public:
    SpecReader(const std::filesystem::path& file) : file_(file), dir_(file.parent_path()) {}

    /// `file:line` of a node.
    std::string where(const toml::node& n) const {
        return fmt::format("{}:{}", file_.string(), n.source().begin.line);
    }

    /// Throws cardsim::Error: `file:line: `key` what`.
    [[noreturn]] void fail(const toml::node& n, std::string_view key, const std::string& what) const {
        throw Error(fmt::format("{}: `{}` {}", where(n), key, what));
    }

    /// How a node's type reads in messages.
    static std::string type_of(const toml::node& n) {
        switch (n.type()) {
        case toml::node_type::table:
            return "is a table";
        case toml::node_type::array:
            return "is an array";
        case toml::node_type::string:
            return fmt::format("is a string (\"{}\")", n.as_string()->get());
        case toml::node_type::integer:
            return fmt::format("is an integer ({})", n.as_integer()->get());
        case toml::node_type::floating_point:
            return fmt::format("is a number ({})", n.as_floating_point()->get());
        case toml::node_type::boolean:
            return fmt::format("is a boolean ({})", n.as_boolean()->get() ? "true" : "false");
        default:
            return "is a date or time";
        }
    }

    /// Rejects keys of `t` outside `known`, listing the expected ones.
    void only(const toml::table& t, std::string_view prefix,
              std::initializer_list<std::string_view> known) const {
        for (auto&& [k, v] : t) {
            if (std::find(known.begin(), known.end(), k.str()) != known.end()) continue;
            std::string list;
            for (auto kn : known)
                list += fmt::format("{}{}", list.empty() ? "" : ", ", kn);
            throw Error(
                fmt::format("{}: unknown key `{}{}`; expected one of: {}", where(v), prefix, k.str(), list));
        }
    }

    /// A path of the spec, relative to the spec's directory unless absolute.
    std::filesystem::path resolve(const std::string& p) const {
        std::filesystem::path path(p);
        return (path.is_absolute() ? path : dir_ / path).lexically_normal();
    }

    /// A string value, or an error naming its type.
    std::string text(const toml::node& n, std::string_view key) const {
        if (!n.is_string()) fail(n, key, type_of(n) + "; expected a string");
        return n.as_string()->get();
    }

    /// An integer value in lo..hi, or an error saying so.
    std::int64_t integer(const toml::node& n, std::string_view key, std::int64_t lo, std::int64_t hi) const {
        if (!n.is_integer())
            fail(n, key, fmt::format("{}; expected an integer in {}..{}", type_of(n), lo, hi));
        auto v = n.as_integer()->get();
        if (v < lo || v > hi) fail(n, key, fmt::format("is {}; expected an integer in {}..{}", v, lo, hi));
        return v;
    }

    /// One entry of `model` / `models`: a checkpoint directory, or a table with `path` or
    /// `generate = {arch, size, seed}` and an optional `name`.
    ModelSource model(const toml::node& n, std::string_view key) const {
        if (n.is_string()) {
            auto dir = resolve(n.as_string()->get());
            check_checkpoint(n, key, dir);
            return {dir.filename().string(), dir};
        }
        auto t = n.as_table();
        if (!t)
            fail(n, key,
                 type_of(n) + "; expected a checkpoint directory (a string) or a table "
                              "{ path = DIR } or { generate = { arch, size, seed } }");
        const std::string prefix = std::string(key) + ".";
        only(*t, prefix, {"path", "generate", "name"});
        auto path = t->get("path");
        auto gen = t->get("generate");
        if (bool(path) == bool(gen))
            fail(n, key, "expected exactly one of `path` (a checkpoint directory) and `generate` (a table)");
        ModelSource m;
        if (path) {
            auto dir = resolve(text(*path, prefix + "path"));
            check_checkpoint(*path, prefix + "path", dir);
            m = {dir.filename().string(), dir};
        } else {
            auto g = gen->as_table();
            const std::string gk = prefix + "generate";
            if (!g) fail(*gen, gk, type_of(*gen) + "; expected a table { arch, size, seed }");
            only(*g, gk + ".", {"arch", "size", "seed", "shapes_only"});
            GeneratedModel gm;
            auto arch = g->get("arch");
            if (!arch) fail(*gen, gk, fmt::format("misses `arch` ({})", arch_names));
            gm.arch = text(*arch, gk + ".arch");
            if (!models::parse_synth_arch(gm.arch))
                fail(*arch, gk + ".arch", fmt::format("is \"{}\"; expected {}", gm.arch, arch_names));
            if (auto so = g->get("shapes_only")) {
                if (!so->is_boolean())
                    fail(*so, gk + ".shapes_only", type_of(*so) + "; expected true or false");
                gm.shapes_only = so->as_boolean()->get();
            }
            gm.size = "tiny";
            if (auto size = g->get("size")) {
                gm.size = text(*size, gk + ".size");
                const bool published = bool(models::parse_published_size(gm.size));
                if (!models::parse_synth_size(gm.size) && !(published && gm.shapes_only))
                    fail(*size, gk + ".size",
                         published
                             ? fmt::format("is \"{}\", a published shape: add shapes_only = true", gm.size)
                             : fmt::format("is \"{}\"; expected {}", gm.size, size_names));
                if (published) {
                    try {
                        models::published_model(*models::parse_synth_arch(gm.arch),
                                                *models::parse_published_size(gm.size));
                    } catch (const Error& e) {
                        fail(*size, gk + ".size", e.what());
                    }
                }
            }
            if (auto seed = g->get("seed")) {
                if (gm.shapes_only) // as make-model --shapes-only refuses --seed
                    fail(*seed, gk + ".seed",
                         "is given with shapes_only = true: a shapes-only model has no weights for a seed to "
                         "draw (drop seed)");
                gm.seed = std::uint64_t(integer(*seed, gk + ".seed", 0, INT64_MAX));
            }
            m = {gm.shapes_only ? fmt::format("{}-{}-shapes", gm.arch, gm.size)
                                : fmt::format("{}-{}-seed{}", gm.arch, gm.size, gm.seed),
                 gm};
        }
        if (auto name = t->get("name")) {
            m.name = text(*name, prefix + "name");
            if (m.name.empty() || m.name.find_first_of("/,\"\n ") != std::string::npos)
                fail(*name, prefix + "name",
                     "expected a non-empty name without spaces, commas, quotes or slashes");
        }
        return m;
    }

    /// Fails unless `dir` holds a checkpoint (a config.json).
    void check_checkpoint(const toml::node& n, std::string_view key, const std::filesystem::path& dir) const {
        if (!std::filesystem::exists(dir / "config.json"))
            fail(n, key,
                 fmt::format("names `{}`, which is not a checkpoint directory (no config.json)",
                             dir.string()));
    }

    /// The values of one axis leaf: an array of scalars or a range table {from, to, step}.
    std::vector<AxisValue> axis_values(const toml::node& n, const std::string& path) const {
        std::vector<AxisValue> out;
        const std::string key = "axes." + path;
        if (auto arr = n.as_array()) {
            if (arr->empty()) fail(n, key, "is an empty array; expected at least one value");
            for (auto& v : *arr) {
                if (v.is_integer())
                    out.emplace_back(v.as_integer()->get());
                else if (v.is_floating_point())
                    out.emplace_back(v.as_floating_point()->get());
                else if (v.is_string())
                    out.emplace_back(v.as_string()->get());
                else if (v.is_boolean())
                    out.emplace_back(v.as_boolean()->get());
                else
                    fail(v, key,
                         "has an element that " + type_of(v) +
                             "; expected integers, numbers, strings or booleans");
            }
        } else if (auto t = n.as_table()) {
            out = range(*t, n, key);
        } else {
            fail(n, key, type_of(n) + "; expected an array of values or a range { from, to, step }");
        }
        for (std::size_t i = 0; i < out.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (out[i] == out[j]) fail(n, key, fmt::format("lists {} twice", cell(out[i])));
        if (out.size() > max_axis_values)
            fail(n, key, fmt::format("has {} values; at most {}", out.size(), max_axis_values));
        return out;
    }

    /// The values of a range table { from, to, step }, `to` included.
    std::vector<AxisValue> range(const toml::table& t, const toml::node& n, const std::string& key) const {
        only(t, key + ".", {"from", "to", "step"});
        auto from = t.get("from"), to = t.get("to"), step = t.get("step");
        if (!from || !to) fail(n, key, "is a range without `from` and `to`; expected { from, to, step }");
        auto number = [&](const toml::node& v, std::string_view k) -> double {
            if (v.is_integer()) return double(v.as_integer()->get());
            if (v.is_floating_point()) return v.as_floating_point()->get();
            fail(v, key + "." + std::string(k), type_of(v) + "; expected a number");
        };
        const bool integers = from->is_integer() && to->is_integer() && (!step || step->is_integer());
        double f = number(*from, "from"), e = number(*to, "to"), s = step ? number(*step, "step") : 1.0;
        if (s == 0 || !std::isfinite(s) || !std::isfinite(f) || !std::isfinite(e))
            fail(step ? *step : n, key + ".step", "is 0 or not finite; expected a non-zero step");
        if ((e - f) * s < 0)
            fail(step ? *step : n, key + ".step",
                 fmt::format("is {} but `to` ({}) lies the other way from `from` ({})", s, e, f));
        const double count = std::floor((e - f) / s + 1e-9) + 1;
        if (count > double(max_axis_values))
            fail(n, key, fmt::format("is a range of {} values; at most {}", count, max_axis_values));
        std::vector<AxisValue> out;
        for (std::size_t k = 0; k < std::size_t(count); ++k) {
            if (integers) {
                out.emplace_back(from->as_integer()->get() +
                                 std::int64_t(k) * (step ? step->as_integer()->get() : 1));
            } else {
                // Rounded to 12 significant digits so 0.1 steps read as 0.3, not 0.30000000000000004.
                out.emplace_back(std::stod(fmt::format("{:.12g}", f + double(k) * s)));
            }
        }
        return out;
    }

    /// Collects the axis leaves under `t` (dotted keys or nested tables), with their nodes.
    void axes(const toml::table& t, const std::string& prefix,
              std::vector<std::pair<std::string, const toml::node*>>& out) const {
        for (auto&& [k, v] : t) {
            std::string path = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
            auto sub = v.as_table();
            if (sub && !sub->contains("from") && !sub->contains("to") && !sub->contains("step"))
                axes(*sub, path, out);
            else
                out.emplace_back(path, &v);
        }
    }

    const std::filesystem::path& file() const { return file_; }

private:
    std::filesystem::path file_, dir_;
};

} // namespace

SweepSpec parse_sweep_spec(std::string_view text, const std::filesystem::path& file_in) {
    const auto file = std::filesystem::absolute(file_in).lexically_normal();
    toml::table root;
    try {
        root = toml::parse(text, file.string());
    } catch (const toml::parse_error& e) {
        throw Error(fmt::format("{}:{}:{}: not valid TOML: {}", file.string(), e.source().begin.line,
                                e.source().begin.column, e.description()));
    }
    SpecReader r(file);
    r.only(root, "",
           {"name", "config", "model", "models", "tokens", "seqs", "prompt", "prompt_len", "chunk", "full",
            "routing", "routing_seed", "plan", "skip_if", "axes", "serve", "pack_cache"});
    SweepSpec spec;
    spec.file = file;
    spec.name = file.stem().string();
    if (auto n = root.get("name")) spec.name = r.text(*n, "name");
    if (auto n = root.get("config")) {
        spec.config = r.resolve(r.text(*n, "config"));
        if (!std::filesystem::exists(*spec.config))
            r.fail(*n, "config",
                   fmt::format("names `{}`, which does not exist; expected a card config file",
                               spec.config->string()));
    }
    spec.base = card::load_card_config(spec.config);
    // Token counts and sequence counts to sweep: axes of their own, before the config axes.
    auto run_option = [&](std::string_view key, std::string_view what, std::int64_t most,
                          std::size_t& single) {
        auto n = root.get(key);
        if (!n) return;
        if (auto arr = n->as_array()) {
            Axis axis{std::string(key), {}, r.where(*n)};
            if (arr->empty()) r.fail(*n, key, fmt::format("is an empty array; expected {}", what));
            for (auto& v : *arr) {
                AxisValue t{r.integer(v, key, 1, most)};
                if (std::find(axis.values.begin(), axis.values.end(), t) != axis.values.end())
                    r.fail(v, key, fmt::format("lists {} twice", cell(t)));
                axis.values.push_back(t);
            }
            spec.axes.push_back(std::move(axis));
        } else {
            single = std::size_t(r.integer(*n, key, 1, most));
        }
    };
    run_option(tokens_axis, "token counts", 1000000, spec.tokens);
    run_option(seqs_axis, "sequence counts", 4096, spec.seqs);
    if (auto n = root.get("full")) {
        if (!n->is_boolean()) r.fail(*n, "full", SpecReader::type_of(*n) + "; expected true or false");
        spec.full = n->as_boolean()->get();
    }
    if (auto n = root.get("pack_cache")) {
        if (auto b = n->as_boolean(); b && !b->get())
            spec.pack_cache = std::filesystem::path();
        else if (n->is_string())
            spec.pack_cache = r.resolve(r.text(*n, "pack_cache"));
        else
            r.fail(*n, "pack_cache", SpecReader::type_of(*n) + "; expected a folder name or false");
        if (!spec.full)
            r.fail(*n, "pack_cache",
                   "is given for timing-only points, which pack no weights (set full = true, or drop it)");
    }
    // A string option of the runs (`key`), or an array of them: then an axis named `key`, and
    // nothing is returned. `read` checks one value.
    auto text_option =
        [&](const toml::node& n, std::string_view key, std::string_view what,
            const std::function<std::string(const toml::node&)>& read) -> std::optional<std::string> {
        auto arr = n.as_array();
        if (!arr) return read(n);
        Axis axis{std::string(key), {}, r.where(n)};
        if (arr->empty()) r.fail(n, key, fmt::format("is an empty array; expected {}", what));
        for (auto& v : *arr) {
            AxisValue t{read(v)};
            if (std::find(axis.values.begin(), axis.values.end(), t) != axis.values.end())
                r.fail(v, key, fmt::format("lists {} twice", cell(t)));
            axis.values.push_back(t);
        }
        spec.axes.push_back(std::move(axis));
        return std::nullopt;
    };
    // Routing models: a string or an array of them (an axis); timing-only points only.
    if (auto n = root.get("routing_seed")) {
        spec.routing_seed =
            std::uint64_t(r.integer(*n, "routing_seed", 0, std::numeric_limits<std::int64_t>::max()));
        if (!root.get("routing"))
            r.fail(*n, "routing_seed",
                   "is given without `routing`: the seed draws a routing model's choices, and no point has "
                   "one (add routing = \"uniform\", say, or drop routing_seed)");
    }
    if (auto n = root.get("routing")) {
        if (spec.full)
            r.fail(*n, "routing",
                   "is given with full = true; a full run's router chooses the experts from its data, a "
                   "routing model times points without it (full = false)");
        auto model = [&](const toml::node& v) {
            std::string m = r.text(v, "routing");
            if (m.rfind("trace:", 0) == 0) m = "trace:" + r.resolve(m.substr(6)).string();
            try {
                (void)graph::RoutingModel::parse(m, spec.routing_seed);
            } catch (const Error& e) {
                r.fail(v, "routing", e.what());
            }
            return m;
        };
        spec.routing = text_option(*n, routing_axis, "routing models", model);
    }
    // Plans: a string or an array of them (an axis).
    if (auto n = root.get("plan")) {
        auto plan = [&](const toml::node& v) {
            std::string p = r.text(v, "plan");
            // tp×pp and tpT×ppP: their split is checked against each point's system.cards.
            const bool spelt = p == "none" || (p != "one" && lower::spells_plan(p));
            if (!spelt)
                r.fail(v, "plan",
                       fmt::format("is \"{}\"; expected \"none\" (one card), \"pp\" (pipeline parallel), "
                                   "\"tp\" (tensor parallel), \"tp×pp\" or \"tpT×ppP\" (both) over "
                                   "system.cards cards",
                                   p));
            return p;
        };
        if (auto p = text_option(*n, plan_axis, "plans", plan)) spec.plan = *p;
    }
    if (auto n = root.get("prompt")) {
        auto arr = n->as_array();
        if (!arr || arr->empty())
            r.fail(*n, "prompt", SpecReader::type_of(*n) + "; expected a non-empty array of token ids");
        for (auto& v : *arr)
            spec.prompt.push_back(std::uint32_t(r.integer(v, "prompt", 0, 0xffffffffLL)));
    }
    if (auto n = root.get("prompt_len")) {
        spec.prompt_len = std::size_t(r.integer(*n, "prompt_len", 1, 1000000));
        if (spec.full)
            r.fail(*n, "prompt_len",
                   "times a prompt without ids: it needs timing-only points (full = false)");
        if (!spec.prompt.empty())
            r.fail(*n, "prompt_len", "given together with `prompt`; expected one of the two");
    }
    if (auto n = root.get("chunk")) {
        if (!spec.prompt_len) r.fail(*n, "chunk", "without `prompt_len`; it is the prefill's tokens a step");
        spec.chunk = std::size_t(r.integer(*n, "chunk", 1, 4096));
    }
    if (auto n = root.get("serve")) {
        auto t = n->as_table();
        if (!t) r.fail(*n, "serve", SpecReader::type_of(*n) + "; expected a table of cardsim serve options");
        r.only(*t, "serve.",
               {"requests", "rate", "count", "prompt_len", "output_len", "seed", "policy", "token_budget",
                "chunk", "max_seqs"});
        for (auto k : {"tokens", "seqs", "prompt", "prompt_len"})
            if (auto m = root.get(k))
                r.fail(*m, k, "given together with [serve]; a served trace gives each request's lengths");
        ServeSpec sv;
        if (auto m = t->get("requests")) {
            sv.requests = r.resolve(r.text(*m, "serve.requests"));
            if (!std::filesystem::is_regular_file(*sv.requests))
                r.fail(*m, "serve.requests",
                       fmt::format("names `{}`, which is not a file; expected a request trace CSV",
                                   sv.requests->string()));
            for (auto k : {"rate", "count", "prompt_len", "output_len", "seed"})
                if (auto q = t->get(k))
                    r.fail(*q, fmt::format("serve.{}", k),
                           "given together with serve.requests; expected one of the two");
        }
        // A value, or an array of them: an axis named serve.KEY. Returns the single value, if given.
        using Read = std::function<AxisValue(const toml::node&, const std::string&)>;
        auto swept = [&](const char* key, const Read& read) -> std::optional<AxisValue> {
            auto m = t->get(key);
            if (!m) return std::nullopt;
            const std::string path = fmt::format("serve.{}", key);
            auto arr = m->as_array();
            if (!arr) return read(*m, path);
            Axis axis{path, {}, r.where(*m)};
            if (arr->empty()) r.fail(*m, path, "is an empty array; expected values to sweep");
            for (auto& v : *arr) {
                AxisValue x = read(v, path);
                if (std::find(axis.values.begin(), axis.values.end(), x) != axis.values.end())
                    r.fail(v, path, fmt::format("lists {} twice", cell(x)));
                axis.values.push_back(x);
            }
            spec.axes.push_back(std::move(axis));
            return std::nullopt;
        };
        Read rate = [&](const toml::node& v, const std::string& path) -> AxisValue {
            double x = 0;
            if (auto f = v.as_floating_point())
                x = f->get();
            else if (auto i = v.as_integer())
                x = double(i->get());
            else
                r.fail(v, path, SpecReader::type_of(v) + "; expected a positive number of requests a second");
            if (!(x > 0) || x > 1e9) r.fail(v, path, fmt::format("is {}; expected a positive rate", x));
            return x;
        };
        auto count = [&](std::int64_t lo) -> Read {
            return [&r, lo](const toml::node& v, const std::string& path) -> AxisValue {
                return r.integer(v, path, lo, 65536);
            };
        };
        if (auto v = swept("rate", rate)) sv.rate = std::get<double>(*v);
        if (auto v = swept("token_budget", count(1)))
            sv.token_budget = std::size_t(std::get<std::int64_t>(*v));
        if (auto v = swept("max_seqs", count(0))) sv.max_seqs = std::size_t(std::get<std::int64_t>(*v));
        if (auto v = swept("chunk", count(0))) sv.chunk = std::size_t(std::get<std::int64_t>(*v));
        if (auto m = t->get("count")) sv.count = std::size_t(r.integer(*m, "serve.count", 1, 1000000));
        if (auto m = t->get("seed")) sv.seed = std::uint64_t(r.integer(*m, "serve.seed", 0, INT64_MAX));
        for (auto [key, field] :
             {std::pair{"prompt_len", &sv.prompt_len}, std::pair{"output_len", &sv.output_len}})
            if (auto m = t->get(key)) {
                const toml::node& v = *m;
                *field = v.is_integer()
                             ? std::to_string(r.integer(v, fmt::format("serve.{}", key), 1, 1 << 30))
                             : r.text(v, fmt::format("serve.{}", key));
                try {
                    (void)serve::parse_lengths(*field, fmt::format("serve.{}", key));
                } catch (const Error& e) {
                    r.fail(v, fmt::format("serve.{}", key), fmt::format("is `{}`: {}", *field, e.what()));
                }
            }
        if (auto m = t->get("policy")) {
            sv.policy = r.text(*m, "serve.policy");
            if (sv.policy != "decode-first" && sv.policy != "prefill-first")
                r.fail(*m, "serve.policy",
                       fmt::format("is `{}`; expected decode-first or prefill-first", sv.policy));
        }
        spec.serve = std::move(sv);
    }
    auto model = root.get("model"), models = root.get("models");
    if (model && models) r.fail(*models, "models", "given together with `model`; expected one of the two");
    if (!model && !models)
        throw Error(fmt::format(
            "{}: missing `model` (a checkpoint directory, or {{ generate = {{ arch, size, seed }} }}) "
            "or `models` (an array of them)",
            file.string()));
    if (model)
        spec.models.push_back(r.model(*model, "model"));
    else {
        auto arr = models->as_array();
        if (!arr || arr->empty())
            r.fail(*models, "models",
                   SpecReader::type_of(*models) + "; expected a non-empty array of models");
        for (std::size_t i = 0; i < arr->size(); ++i) {
            spec.models.push_back(r.model(*arr->get(i), fmt::format("models[{}]", i)));
            for (std::size_t j = 0; j < i; ++j)
                if (spec.models[j].name == spec.models[i].name)
                    r.fail(*arr->get(i), fmt::format("models[{}]", i),
                           fmt::format("is named `{}` like models[{}]; give one a `name`",
                                       spec.models[i].name, j));
        }
    }
    if (auto n = root.get("axes")) {
        auto t = n->as_table();
        if (!t) r.fail(*n, "axes", SpecReader::type_of(*n) + "; expected a table of dotted config keys");
        std::vector<std::pair<std::string, const toml::node*>> leaves;
        r.axes(*t, "", leaves);
        std::sort(leaves.begin(), leaves.end(), [](auto& a, auto& b) {
            auto sa = a.second->source().begin, sb = b.second->source().begin;
            return std::pair(sa.line, sa.column) < std::pair(sb.line, sb.column);
        });
        for (auto& [path, node] : leaves) {
            if (run_axis(path))
                r.fail(*node, "axes." + path,
                       fmt::format("is not a config key; sweep {0} counts with `{0} = [...]`", path));
            Axis axis{path, r.axis_values(*node, path), r.where(*node)};
            // Every value must be a valid setting of the key on the base card.
            for (auto& v : axis.values) {
                const card::Override o{path, toml_literal(v)};
                try {
                    (void)card::load_card_config(spec.config, std::span(&o, 1));
                } catch (const Error& e) {
                    throw Error(
                        fmt::format("{}: axis `{}`, value {}: {}", axis.where, path, cell(v), e.what()));
                }
            }
            spec.axes.push_back(std::move(axis));
        }
    }
    std::size_t points = spec.models.size();
    for (auto& a : spec.axes) {
        points *= a.values.size();
        if (points > max_points)
            throw Error(fmt::format("{}: the grid has more than {} points; expected fewer axis values",
                                    a.where, max_points));
    }
    if (auto n = root.get("skip_if")) {
        const ConfigValues base_values(spec.base);
        std::vector<const toml::node*> items;
        if (auto arr = n->as_array())
            for (auto& v : *arr)
                items.push_back(&v);
        else
            items.push_back(n);
        for (auto item : items) {
            Constraint c{Expression::parse(r.text(*item, "skip_if"), r.where(*item)), r.where(*item)};
            for (auto& name : c.expression.names()) {
                bool known = name == "model" ||
                             std::any_of(spec.axes.begin(), spec.axes.end(),
                                         [&](auto& a) { return a.path == name; }) ||
                             base_values.get(name).has_value();
                if (known) continue;
                std::string list = "model";
                for (auto& a : spec.axes)
                    list += ", " + a.path;
                throw Error(fmt::format(
                    "{}: skip_if \"{}\": `{}` is neither an axis ({}) nor a key of the card config", c.where,
                    c.expression.text(), name, list));
            }
            spec.skip_if.push_back(std::move(c));
        }
    }
    return spec;
}

SweepSpec load_sweep_spec(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw Error(fmt::format("cannot read sweep spec `{}`: no such file", path.string()));
    if (!std::filesystem::is_regular_file(path, ec))
        throw Error(fmt::format("cannot read sweep spec `{}`: {}, expected a TOML file", path.string(),
                                std::filesystem::is_directory(path, ec) ? "it is a directory"
                                                                        : "not a regular file"));
    return parse_sweep_spec(io::read_file(path), path);
}

} // namespace cardsim::cli::sweep
