#include "models/config_reader.hpp"

#include "engine/error.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <cmath>

namespace cardsim::models {

ConfigReader::ConfigReader(const boost::json::object& object, std::string file, std::string model,
                           std::string path)
    : object_(&object), file_(std::move(file)), model_(std::move(model)), path_(std::move(path)) {}

const boost::json::value* ConfigReader::get(std::string_view key) const {
    const auto* v = object_->if_contains(boost::json::string_view(key.data(), key.size()));
    return v && !v->is_null() ? v : nullptr;
}

bool ConfigReader::has(std::string_view key) const {
    return get(key) != nullptr;
}

bool ConfigReader::present(std::string_view key) const {
    return object_->if_contains(boost::json::string_view(key.data(), key.size())) != nullptr;
}

std::string ConfigReader::field(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

void ConfigReader::fail(std::string_view key, std::string_view what) const {
    throw Error(fmt::format("{}: field `{}`{}: {}", file_, field(key),
                            model_.empty() ? std::string() : fmt::format(" (a {} model)", model_), what));
}

void ConfigReader::fail(std::string_view what) const {
    throw Error(fmt::format("{}{}: {}", file_,
                            model_.empty() ? std::string() : fmt::format(" (a {} model)", model_), what));
}

namespace {

/// The integer value of `v` if it is a non-negative integer (an integral double counts).
std::optional<std::size_t> as_count(const boost::json::value& v) {
    if (v.is_uint64()) return static_cast<std::size_t>(v.as_uint64());
    if (v.is_int64() && v.as_int64() >= 0) return static_cast<std::size_t>(v.as_int64());
    if (v.is_double() && v.as_double() >= 0 && v.as_double() < 9.0e15 &&
        std::floor(v.as_double()) == v.as_double())
        return static_cast<std::size_t>(v.as_double());
    return std::nullopt;
}

} // namespace

std::size_t ConfigReader::positive(std::string_view key) const {
    if (!has(key)) fail(key, "is missing (expected a positive integer)");
    return *opt_positive(key);
}

std::optional<std::size_t> ConfigReader::opt_positive(std::string_view key) const {
    auto n = opt_count(key);
    if (n && *n == 0) fail(key, "is 0 (expected a positive integer)");
    return n;
}

std::optional<std::size_t> ConfigReader::opt_count(std::string_view key) const {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    auto n = as_count(*v);
    if (!n) fail(key, fmt::format("is {} (expected a non-negative integer)", boost::json::serialize(*v)));
    return n;
}

std::optional<double> ConfigReader::opt_number(std::string_view key) const {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (v->is_double()) {
        // A literal past a double's range (1e999) parses as infinity: no field takes one.
        if (!std::isfinite(v->as_double()))
            fail(key, fmt::format("is {} (expected a finite number)", boost::json::serialize(*v)));
        return v->as_double();
    }
    if (v->is_int64()) return static_cast<double>(v->as_int64());
    if (v->is_uint64()) return static_cast<double>(v->as_uint64());
    fail(key, fmt::format("is {} (expected a number)", boost::json::serialize(*v)));
}

std::optional<double> ConfigReader::opt_positive_number(std::string_view key) const {
    auto x = opt_number(key);
    if (x && !(*x > 0 && std::isfinite(*x))) fail(key, fmt::format("is {} (expected a positive number)", *x));
    return x;
}

std::optional<bool> ConfigReader::opt_bool(std::string_view key) const {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_bool()) fail(key, fmt::format("is {} (expected true or false)", boost::json::serialize(*v)));
    return v->as_bool();
}

std::optional<std::string> ConfigReader::opt_string(std::string_view key) const {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(key, fmt::format("is {} (expected a string)", boost::json::serialize(*v)));
    return std::string(v->as_string());
}

std::string ConfigReader::string(std::string_view key) const {
    if (!has(key)) fail(key, "is missing (expected a string)");
    return *opt_string(key);
}

std::optional<std::vector<std::string>> ConfigReader::opt_strings(std::string_view key) const {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_array()) fail(key, "is not an array of strings");
    std::vector<std::string> out;
    for (const auto& e : v->as_array()) {
        if (!e.is_string())
            fail(key, fmt::format("has entry {} (expected strings)", boost::json::serialize(e)));
        out.emplace_back(e.as_string());
    }
    return out;
}

std::optional<std::vector<std::size_t>> ConfigReader::opt_counts(std::string_view key) const {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_array()) fail(key, "is not an array of non-negative integers");
    std::vector<std::size_t> out;
    for (const auto& e : v->as_array()) {
        auto n = as_count(e);
        if (!n)
            fail(key,
                 fmt::format("has entry {} (expected non-negative integers)", boost::json::serialize(e)));
        out.push_back(*n);
    }
    return out;
}

std::optional<ConfigReader> ConfigReader::sub(std::string_view key) const {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_object()) fail(key, "is not an object");
    return ConfigReader(v->as_object(), file_, model_, field(key));
}

} // namespace cardsim::models
