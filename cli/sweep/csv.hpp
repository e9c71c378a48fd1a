#pragma once
// CSV as the sweep's results use it (RFC 4180): comma-separated cells, a cell quoted with `"`
// when it holds a comma, a quote or a line break (quotes doubled inside), every record ending
// with `\n`.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::cli::sweep {

/// One record: its cells.
using CsvRow = std::vector<std::string>;

/// A CSV file: the header record and the data records.
struct CsvTable {
    CsvRow header;
    std::vector<CsvRow> rows;
    std::vector<std::size_t> lines; ///< the line each row starts on (1-based), for messages
};

/// The record as CSV text, ending with `\n`.
std::string csv_line(const CsvRow& cells);

/// The table as CSV text.
std::string csv_text(const CsvTable& table);

/// Parses CSV text. A record whose cell count differs from the header's, or an unterminated
/// quote, is a cardsim::Error naming `source` and the line. With `drop_partial_tail`, a last
/// record without its `\n` on its one line (a write cut short by a crash) is dropped instead; a
/// quote left open that runs over later lines is still an error.
CsvTable parse_csv(std::string_view text, std::string_view source, bool drop_partial_tail = false);

/// Reads and parses the CSV file at `path` (errors name it).
CsvTable read_csv(const std::filesystem::path& path, bool drop_partial_tail = false);

/// Appends `line` (one whole record) to `path` with one write on an O_APPEND descriptor and
/// fsyncs it, so that a crash leaves the file with the record or without it; a write that fails
/// part-way (a full disk, a file size limit) cuts the file back to its size before. Failure is a
/// cardsim::Error naming the path.
void append_record(const std::filesystem::path& path, std::string_view line);

} // namespace cardsim::cli::sweep
