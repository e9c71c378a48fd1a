#include "cli/sweep/csv.hpp"

#include "engine/error.hpp"
#include "engine/io/atomic_file.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cardsim::cli::sweep {

std::string csv_line(const CsvRow& cells) {
    std::string out;
    for (std::size_t i = 0; i < cells.size(); ++i) {
        if (i) out += ',';
        const auto& c = cells[i];
        if (c.find_first_of(",\"\r\n") == std::string::npos) {
            out += c;
            continue;
        }
        out += '"';
        for (char ch : c) {
            if (ch == '"') out += '"';
            out += ch;
        }
        out += '"';
    }
    out += '\n';
    return out;
}

std::string csv_text(const CsvTable& table) {
    std::string out = csv_line(table.header);
    for (auto& r : table.rows)
        out += csv_line(r);
    return out;
}

CsvTable parse_csv(std::string_view text, std::string_view source, bool drop_partial_tail) {
    CsvTable table;
    std::size_t at = 0, line = 1;
    bool first = true;
    while (at < text.size()) {
        const std::size_t start_line = line;
        CsvRow row(1);
        bool quoted = false, ended = false;
        while (at < text.size()) {
            char c = text[at++];
            if (quoted) {
                if (c == '"') {
                    if (at < text.size() && text[at] == '"')
                        row.back() += '"', ++at;
                    else
                        quoted = false;
                } else {
                    if (c == '\n') ++line;
                    row.back() += c;
                }
            } else if (c == '"' && row.back().empty()) {
                quoted = true;
            } else if (c == ',') {
                row.emplace_back();
            } else if (c == '\n') {
                ++line;
                ended = true;
                break;
            } else if (c != '\r') {
                row.back() += c;
            }
        }
        if (!ended) {
            // A killed append leaves part of one record, on one line (the records' cells hold no line
            // break): dropped. A quote left open earlier swallows the lines after it: an error.
            if (drop_partial_tail && !first && line == start_line) break;
            if (quoted) throw Error(fmt::format("{}:{}: a quoted cell is not closed", source, start_line));
            throw Error(
                fmt::format("{}:{}: the last record does not end with a line break", source, start_line));
        }
        if (first) {
            table.header = std::move(row);
            first = false;
            continue;
        }
        if (row.size() != table.header.size())
            throw Error(fmt::format("{}:{}: {} cells; expected {} (as the header has)", source, start_line,
                                    row.size(), table.header.size()));
        table.rows.push_back(std::move(row));
        table.lines.push_back(start_line);
    }
    if (first) throw Error(fmt::format("{}: empty; expected a CSV header line", source));
    return table;
}

CsvTable read_csv(const std::filesystem::path& path, bool drop_partial_tail) {
    return parse_csv(io::read_file(path), path.string(), drop_partial_tail);
}

void append_record(const std::filesystem::path& path, std::string_view line) {
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        throw Error(fmt::format("cannot open `{}` to append: {}", path.string(), std::strerror(errno)));
    // A record is appended whole or not at all: a failed write (a full disk, a file size limit)
    // cuts the file back to its records before.
    struct stat before {};
    const bool sized = ::fstat(fd, &before) == 0;
    std::size_t done = 0;
    while (done < line.size()) {
        auto n = ::write(fd, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            if (sized && done > 0) (void)::ftruncate(fd, before.st_size);
            ::close(fd);
            throw Error(fmt::format("cannot append to `{}`: {}", path.string(), std::strerror(e)));
        }
        done += std::size_t(n);
    }
    if (::fsync(fd) != 0) {
        int e = errno;
        ::close(fd);
        throw Error(fmt::format("cannot sync `{}`: {}", path.string(), std::strerror(e)));
    }
    ::close(fd);
}

} // namespace cardsim::cli::sweep
