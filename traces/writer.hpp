#pragma once
// Writes traces in the format of traces/FORMAT.md: deterministic text, files replaced atomically.

#include "engine/io/atomic_file.hpp"
#include "traces/trace.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace cardsim::traces {

/// The header lines of `header` (magic through meta, and a column comment), as the writer spells
/// them. Throws cardsim::Error when the header breaks a rule of FORMAT.md.
std::string format_header(const Header& header);

/// The `cmd` line of `record` and its data lines, as the writer spells them. Assumes the record
/// keeps the rules (see `check_record`).
std::string format_record(const Record& record);

/// The `message` line of `message`, as the writer spells it.
std::string format_message(const Message& message);

/// The whole text of `trace`; the same trace always gives the same bytes. Throws cardsim::Error
/// naming the command when a record breaks a rule, so the text always reads back.
std::string to_text(const Trace& trace);

/// A trace file written record by record (a producer that has more records than it wants to hold).
/// Records must come in increasing index order and keep the rules of FORMAT.md; a bad one throws
/// cardsim::Error naming the file and the command, and the destination is left untouched. The file
/// appears, complete, at `finish`; a Writer destroyed before leaves nothing behind.
class Writer {
public:
    Writer(std::filesystem::path destination, Header header);
    /// Appends one record (of a system: in (card, index) order).
    void add(const Record& record);
    /// Appends one message of a system's link, after every record.
    void add(const Message& message);
    /// Writes the end line and moves the file into place.
    void finish();
    /// Writes the end line and stages the file (io::AtomicFile::stage), for the caller to publish
    /// with the other files it writes: none appears unless all could be written.
    io::AtomicFile stage();
    /// Records added so far.
    std::uint64_t count() const { return count_; }

private:
    Header header_;
    io::AtomicFile file_;
    std::optional<std::uint64_t> previous_;
    std::optional<std::uint32_t> previous_card_;
    std::optional<Message> previous_message_;
    std::uint64_t count_ = 0;
};

/// Writes `trace` to `destination` (atomically; see Writer).
void write_trace(const std::filesystem::path& destination, const Trace& trace);

/// Writes `trace` to a staged temporary of `destination` (see Writer::stage).
io::AtomicFile stage_trace(const std::filesystem::path& destination, const Trace& trace);

} // namespace cardsim::traces
