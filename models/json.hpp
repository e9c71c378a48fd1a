#pragma once
// Strict JSON for checkpoint files: Boost.JSON, plus a rejection of duplicate keys (which
// Boost.JSON would silently resolve to the last one).

#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace cardsim::models {

/// Parses `text` as one JSON document. Throws cardsim::Error naming `where` (a file) and the byte
/// offset on invalid JSON (including invalid UTF-8), and naming the key on a duplicate key in any
/// object.
boost::json::value parse_json(std::string_view text, std::string_view where);

/// Reads and parses the JSON file at `path` (see `parse_json`); a missing or unreadable file is a
/// cardsim::Error naming it.
boost::json::value read_json_file(const std::string& path);

} // namespace cardsim::models
