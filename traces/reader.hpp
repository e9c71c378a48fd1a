#pragma once
// Reads traces of traces/FORMAT.md, strictly: every deviation from the format is an error.

#include "traces/trace.hpp"

#include <filesystem>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cardsim::traces {

/// A trace read one record at a time. The header is read and checked when the Reader is made;
/// `next` gives the records in file order and checks each fully (its data lines included) before
/// returning it, and after the last record checks the end line and that nothing follows it. Any
/// line that breaks FORMAT.md throws cardsim::Error as `FILE:LINE: what was found, what was
/// expected`.
class Reader {
public:
    /// Opens the trace file at `path`.
    static Reader open(const std::filesystem::path& path);
    /// Reads a trace from `text`, naming it `name` in errors.
    static Reader from_text(std::string text, std::string name);

    /// The trace's header.
    const Header& header() const { return header_; }
    /// The next record, or nothing once the end line has been read and checked.
    std::optional<Record> next();
    /// A system trace's link messages (they follow the commands): all of them once `next` has
    /// returned nothing.
    const std::vector<Message>& messages() const { return messages_; }

private:
    /// One line of the file without its line feed, and its 1-based number.
    struct Line {
        std::string text;
        std::uint64_t number = 0;
    };

    /// Reads and checks the header from `in`.
    Reader(std::unique_ptr<std::istream> in, std::string name);
    /// The next physical line (its bytes and its LF checked); false at the end of the file.
    bool read_raw(Line& line);
    /// The next line that is not empty or a comment, or the pushed-back one; false at the end.
    bool fetch(Line& line);
    /// Throws cardsim::Error as `FILE:LINE: what`.
    [[noreturn]] void fail(std::uint64_t line, const std::string& what) const;
    /// Splits `line` at single spaces into tokens_; an empty field (double or trailing space) fails.
    void tokenize(const Line& line);
    /// tokens_[field] as a u64, or a failure naming it `what`.
    std::uint64_t number(const Line& line, std::size_t field, std::string_view what);
    /// The required header lines in order, then ddr_channels and meta lines.
    void read_header();
    /// The five knobs of the knob line (tokenized).
    void read_knob(const Line& line);
    /// One `card K PROGRAM` line (version 3): the next card's program digest.
    void read_card(const Line& line);
    /// One `link FROM TO PORTS` line (version 3), of the cards above it.
    void read_link(const Line& line);
    /// One `message FROM TO START END BYTES` line (version 3), over a link of the header.
    void read_message(const Line& line);
    /// One meta line: a name, `=`, an escaped value.
    void read_meta(const Line& line);
    /// The fields and options of a cmd line.
    Record read_cmd(const Line& line);
    /// One `pc=` or `ddr=` option of a cmd line.
    void read_option(const Line& line, std::string_view token, Record& record, bool& seen_pc, bool& seen_ddr);
    /// The value of a `split=` option (version 2): PART:CYCLES entries, each part at most once.
    void read_split(const Line& line, std::string_view value, Record& record);
    /// One data line, appended to the record's blocks.
    void read_data(const Line& line, Record& record);
    /// The end line: its count, and nothing after it.
    void read_end(const Line& line);

    std::unique_ptr<std::istream> in_;
    std::string name_;
    std::uint64_t line_number_ = 0;
    std::optional<Line> pending_;
    std::vector<std::string_view> tokens_;
    Header header_;
    std::optional<std::uint64_t> previous_;
    std::optional<std::uint32_t> previous_card_;
    std::vector<Message> messages_;
    std::uint64_t count_ = 0;
    bool done_ = false;
    int version_ = format_version; ///< the file's format version
    bool seen_split_ = false;      ///< the current cmd line had a `split=` option
    bool seen_card_ = false;       ///< the current cmd line had a `card=` option
};

/// Reads the whole trace file at `path` (see Reader for the checks).
Trace read_trace(const std::filesystem::path& path);

/// Reads a whole trace from `text`, naming it `name` in errors.
Trace parse_trace(std::string text, std::string name);

} // namespace cardsim::traces
