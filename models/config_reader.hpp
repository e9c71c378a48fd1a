#pragma once
// Typed reading of one JSON object of a config file, with errors that name the file, the field's
// full path (`text_config.num_attention_heads`) and what was expected.

#include <boost/json/object.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::models {

/// A view of one object of config.json (the top level or a nested one such as `text_config`).
/// Required fields that are missing or of the wrong type throw cardsim::Error.
class ConfigReader {
public:
    /// Reads `object`, found at `path` (empty for the top level) of the file `file`, for a model of
    /// type `model` (named in messages).
    ConfigReader(const boost::json::object& object, std::string file, std::string model,
                 std::string path = {});

    /// Whether the field exists and is not null.
    bool has(std::string_view key) const;
    /// Whether the field exists at all (null included): transformers' defaults apply to absent
    /// fields only, an explicit null means "none" (`sliding_window: null`).
    bool present(std::string_view key) const;
    /// A required positive integer.
    std::size_t positive(std::string_view key) const;
    /// An optional positive integer.
    std::optional<std::size_t> opt_positive(std::string_view key) const;
    /// An optional non-negative integer.
    std::optional<std::size_t> opt_count(std::string_view key) const;
    /// An optional number (integer or floating point).
    std::optional<double> opt_number(std::string_view key) const;
    /// An optional positive number.
    std::optional<double> opt_positive_number(std::string_view key) const;
    /// An optional boolean.
    std::optional<bool> opt_bool(std::string_view key) const;
    /// An optional string.
    std::optional<std::string> opt_string(std::string_view key) const;
    /// A required string.
    std::string string(std::string_view key) const;
    /// An optional array of strings.
    std::optional<std::vector<std::string>> opt_strings(std::string_view key) const;
    /// An optional array of non-negative integers.
    std::optional<std::vector<std::size_t>> opt_counts(std::string_view key) const;
    /// The nested object `key`, if present (an error if present but not an object).
    std::optional<ConfigReader> sub(std::string_view key) const;

    /// The full path of `key` in the file: `text_config.hidden_size`.
    std::string field(std::string_view key) const;
    /// Throws cardsim::Error: `<file>: field `<path>` (<model>): <what>`.
    [[noreturn]] void fail(std::string_view key, std::string_view what) const;
    /// Throws cardsim::Error about the config as a whole: `<file> (<model>): <what>`.
    [[noreturn]] void fail(std::string_view what) const;
    /// The file this object comes from.
    const std::string& file() const { return file_; }

private:
    const boost::json::value* get(std::string_view key) const;
    const boost::json::object* object_;
    std::string file_;
    std::string model_;
    std::string path_;
};

} // namespace cardsim::models
