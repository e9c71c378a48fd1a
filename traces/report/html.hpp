#pragma once
// The pieces every report page is made of: HTML text escaping, JSON that is safe inside a
// <script> element, and the page skeleton (inline CSS and script, nothing fetched).

#include <boost/json.hpp>

#include <string>
#include <string_view>

namespace cardsim::traces::report {

/// `text` as HTML text or a double-quoted attribute value: `&`, `<`, `>`, `"` and `'` become
/// character references, every other byte stays.
std::string escape(std::string_view text);

/// `value` serialised for a <script> element: `<` is written `\u003c`, so the text never holds
/// `</script` or `<!--`, and a JSON parser reads back the same value.
std::string script_json(const boost::json::value& value);

/// One figure card of a page's top row: a label, a value and a note under it; `cls` (`good`,
/// `bad`, `muted`) colours it.
std::string figure_card(std::string_view label, std::string_view value, std::string_view note,
                        std::string_view cls = "");

/// A whole page: doctype, `<head>` with `title`, the report's stylesheet and its error catcher
/// (the first script, so that it records the errors of every later one), then `body` and the
/// report's script. The page loads nothing: no URL, no font, no script from elsewhere.
std::string document(std::string_view title, std::string_view body);

} // namespace cardsim::traces::report
