#include "engine/numerics/knob.hpp"
#include "engine/numerics/knob_spellings.hpp"

#include "engine/error.hpp"

#include <array>
#include <utility>

namespace cardsim::numerics {
namespace {

/// The spellings of an enum's values, in declaration order.
template <class E, std::size_t N>
using Names = std::array<std::pair<E, std::string_view>, N>;

constexpr Names<ActScaling, 2> scaling_names{
    {{ActScaling::Sub32, "sub32"}, {ActScaling::PerBlock, "per_block"}}};
constexpr Names<Words, 2> words_names{{{Words::One, "one"}, {Words::Two, "two"}}};
constexpr Names<StateFormat, 2> state_names{{{StateFormat::F32, "f32"}, {StateFormat::F16, "f16"}}};
constexpr Names<CacheFormat, 3> cache_names{
    {{CacheFormat::F16, "f16"}, {CacheFormat::Int8, "int8"}, {CacheFormat::Int8Hadamard, "int8_hadamard"}}};
constexpr Names<AttentionMath, 2> attention_names{
    {{AttentionMath::Vector, "vector"}, {AttentionMath::Array, "array"}}};

template <class E, std::size_t N>
std::string_view lookup(const Names<E, N>& names, E v) {
    for (auto& [e, s] : names)
        if (e == v) return s;
    return "?";
}

/// Parses `value` into `out` from `names`, or says which spellings were expected.
template <class E, std::size_t N>
std::optional<std::string> parse(const Names<E, N>& names, std::string_view key, std::string_view value,
                                 E& out) {
    std::string expected;
    for (auto& [e, s] : names) {
        if (s == value) {
            out = e;
            return std::nullopt;
        }
        expected += expected.empty() ? "" : " | ";
        expected += s;
    }
    return "numerics knob `" + std::string(key) + "` is `" + std::string(value) + "`, expected one of " +
           expected;
}

} // namespace

std::string_view name(ActScaling v) {
    return lookup(scaling_names, v);
}
std::string_view name(Words v) {
    return lookup(words_names, v);
}
std::string_view name(StateFormat v) {
    return lookup(state_names, v);
}
std::string_view name(CacheFormat v) {
    return lookup(cache_names, v);
}
std::string_view name(AttentionMath v) {
    return lookup(attention_names, v);
}

std::optional<std::string> set_knob(EngineNumerics& point, std::string_view key, std::string_view value) {
    if (key == "scaling") return parse(scaling_names, key, value, point.scaling);
    if (key == "activations") return parse(words_names, key, value, point.activations);
    if (key == "state") return parse(state_names, key, value, point.state);
    if (key == "cache") return parse(cache_names, key, value, point.cache);
    if (key == "attention") return parse(attention_names, key, value, point.attention);
    return "unknown numerics knob `" + std::string(key) +
           "`, expected one of scaling | activations | state | cache | attention";
}

std::vector<std::string_view> knob_spellings(std::string_view key) {
    std::vector<std::string_view> out;
    auto add = [&](auto& names) {
        for (auto& [e, s] : names)
            out.push_back(s);
    };
    if (key == "scaling") add(scaling_names);
    if (key == "activations") add(words_names);
    if (key == "state") add(state_names);
    if (key == "cache") add(cache_names);
    if (key == "attention") add(attention_names);
    return out;
}

std::string to_string(const EngineNumerics& p) {
    std::string s;
    s += "scaling=" + std::string(name(p.scaling));
    s += " activations=" + std::string(name(p.activations));
    s += " state=" + std::string(name(p.state));
    s += " cache=" + std::string(name(p.cache));
    s += " attention=" + std::string(name(p.attention));
    return s;
}

EngineNumerics parse_point(std::span<const std::string> assignments, std::string_view where) {
    EngineNumerics point;
    for (const std::string& a : assignments) {
        const auto eq = a.find('=');
        if (eq == std::string::npos)
            throw Error(std::string(where) + " `" + a + "`: expected key=value, e.g. cache=int8");
        if (auto problem =
                set_knob(point, std::string_view(a).substr(0, eq), std::string_view(a).substr(eq + 1)))
            throw Error(std::string(where) + " `" + a + "`: " + *problem);
    }
    return point;
}

std::vector<EngineNumerics> all_points() {
    std::vector<EngineNumerics> out;
    for (auto& [s, _s] : scaling_names)
        for (auto& [w, _w] : words_names)
            for (auto& [st, _st] : state_names)
                for (auto& [c, _c] : cache_names)
                    for (auto& [a, _a] : attention_names)
                        out.push_back(EngineNumerics{s, w, st, c, a});
    return out;
}

} // namespace cardsim::numerics
