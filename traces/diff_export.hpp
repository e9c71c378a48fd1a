#pragma once
// A trace diff for machines: JSON (traces/FORMAT.md section 7.1) and CSV (section 7.2), with the
// same contents as the text report (the same lists, as many items as the options list).

#include "traces/diff.hpp"

#include <boost/json.hpp>

#include <string>
#include <string_view>

namespace cardsim::traces {

/// The report as the JSON object of FORMAT.md section 7.1 (`"format": "cardsim-trace-diff"`).
boost::json::object diff_json(const DiffReport& report, std::string_view name_a, std::string_view name_b);

/// `diff_json` serialised, one line, with a final line feed.
std::string to_json(const DiffReport& report, std::string_view name_a, std::string_view name_b);

/// The report as CSV of FORMAT.md section 7.2: a header row, then one row per reported value
/// (`section,item,field,a,b,delta,pct,over,unit,opcode,phase,pc,layer,detail`), RFC 4180 quoting.
std::string to_csv(const DiffReport& report, std::string_view name_a, std::string_view name_b);

/// One CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180), its quotes
/// doubled.
std::string csv_field(std::string_view s);

} // namespace cardsim::traces
