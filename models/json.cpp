#include "models/json.hpp"

#include "engine/error.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

namespace cardsim::models {
namespace {

/// A SAX handler that records the first key seen twice in one object.
class DuplicateKeys {
public:
    static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

    /// The first duplicate key, if any.
    std::optional<std::string> duplicate;

    bool on_document_begin(boost::json::error_code&) { return true; }
    bool on_document_end(boost::json::error_code&) { return true; }
    bool on_array_begin(boost::json::error_code&) { return true; }
    bool on_array_end(std::size_t, boost::json::error_code&) { return true; }
    bool on_object_begin(boost::json::error_code&) {
        keys_.emplace_back();
        return true;
    }
    bool on_object_end(std::size_t, boost::json::error_code&) {
        keys_.pop_back();
        return true;
    }
    bool on_string_part(boost::json::string_view, std::size_t, boost::json::error_code&) { return true; }
    bool on_string(boost::json::string_view, std::size_t, boost::json::error_code&) { return true; }
    bool on_key_part(boost::json::string_view s, std::size_t, boost::json::error_code&) {
        key_.append(s.data(), s.size());
        return true;
    }
    bool on_key(boost::json::string_view s, std::size_t, boost::json::error_code& ec) {
        key_.append(s.data(), s.size());
        if (!keys_.back().insert(key_).second && !duplicate) {
            duplicate = key_;
            ec = boost::json::error::syntax; // stop parsing: the caller reports the duplicate
        }
        key_.clear();
        return !duplicate;
    }
    bool on_number_part(boost::json::string_view, boost::json::error_code&) { return true; }
    bool on_int64(std::int64_t, boost::json::string_view, boost::json::error_code&) { return true; }
    bool on_uint64(std::uint64_t, boost::json::string_view, boost::json::error_code&) { return true; }
    bool on_double(double, boost::json::string_view, boost::json::error_code&) { return true; }
    bool on_bool(bool, boost::json::error_code&) { return true; }
    bool on_null(boost::json::error_code&) { return true; }
    bool on_comment_part(boost::json::string_view, boost::json::error_code&) { return true; }
    bool on_comment(boost::json::string_view, boost::json::error_code&) { return true; }

private:
    std::vector<std::set<std::string>> keys_;
    std::string key_;
};

} // namespace

boost::json::value parse_json(std::string_view text, std::string_view where) {
    boost::json::basic_parser<DuplicateKeys> sax(boost::json::parse_options{});
    boost::json::error_code ec;
    const std::size_t used = sax.write_some(false, text.data(), text.size(), ec);
    if (sax.handler().duplicate)
        throw Error(fmt::format("{}: key `{}` appears twice in one JSON object (near byte {})", where,
                                *sax.handler().duplicate, used));
    if (ec)
        throw Error(
            fmt::format("{}: invalid JSON near byte {} of {}: {}", where, used, text.size(), ec.message()));
    boost::json::value v = boost::json::parse(boost::json::string_view(text.data(), text.size()), ec);
    if (ec) throw Error(fmt::format("{}: invalid JSON: {}", where, ec.message()));
    return v;
}

boost::json::value read_json_file(const std::string& path) {
    // Not a directory nor a device (/dev/zero would be read for ever): a file, of a sane size.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw Error(fmt::format("{}: it is a directory (expected a JSON file here)", path));
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
        throw Error(fmt::format("{}: not a regular file (expected a JSON file here)", path));
    constexpr std::uintmax_t most = std::uintmax_t{1} << 30;
    if (const auto size = std::filesystem::file_size(path, ec); !ec && size > most)
        throw Error(fmt::format("{}: {} bytes, more than any JSON file a checkpoint holds (at most {})", path,
                                size, most));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(fmt::format("{}: cannot open the file (expected a JSON file here)", path));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw Error(fmt::format("{}: cannot read the file", path));
    return parse_json(text.str(), path);
}

} // namespace cardsim::models
