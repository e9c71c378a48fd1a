#pragma once
// Memory traces on disk: DRAMSim3's, DRAMSys' .stl and cardsim's compact format (see
// traces/FORMAT.md section 10). Read as a stream (a fixed buffer, never the whole file) and written to a
// temporary file renamed when complete.

#include "sim/memory/mem_request.hpp"
#include "sim/memory/memory_clock.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cardsim::sim::memory {

/// A memory trace format.
enum class TraceFormat {
    DramSim3, ///< `0xADDR READ|WRITE CYCLE`, memory-clock cycles, fixed request size
    DramSys,  ///< `CYCLE: [(LEN)] read|write 0xADDR [0xDATA]`, cycles of the player clock
    Cardsim,  ///< `cardsim-ddr 1` header, then `R|W ADDR [LEN] [+DELTA_PS|@TIME_PS]`
};

/// The option spelling of a format (`dramsim3`, `dramsys`, `cardsim`).
std::string_view name(TraceFormat format);
/// The format spelled `text`, if any.
std::optional<TraceFormat> parse_trace_format(std::string_view text);
/// Guesses a file's format from its first record: the cardsim header, a `N:` time (DRAMSys), or
/// else DRAMSim3. A file that cannot be opened is a cardsim::Error.
TraceFormat detect_trace_format(const std::filesystem::path& path);

/// What a trace's numbers mean beyond the file itself.
struct TraceContext {
    std::uint32_t memory_mts = 2400;                 ///< DRAMSim3 cycles are of this data rate's memory clock
    std::uint32_t player_mhz = 1200;                 ///< DRAMSys cycles are of this clock
    std::uint32_t request_bytes = 64;                ///< DRAMSim3's request size; DRAMSys' default length
    std::uint64_t address_limit = ~std::uint64_t{0}; ///< requests must end at or below it
};

/// Reads a trace as a stream of requests through a 1 MiB buffer. A malformed line is a
/// cardsim::Error naming the file, the line number and what was expected; so is a request past
/// the address limit. Comment lines (`#`) and blank lines are skipped.
class TraceReader final : public RequestSource {
public:
    TraceReader(const std::filesystem::path& path, TraceFormat format, const TraceContext& context);
    bool next(MemRequest& out) override;
    /// The number of the line last read (1-based).
    std::uint64_t line() const { return line_; }
    const std::filesystem::path& path() const { return path_; }

private:
    /// The next non-blank, non-comment line (without its end), or false at the end of the file.
    bool next_line(std::string_view& out);
    bool refill();
    void parse_dramsim3(std::string_view line, MemRequest& out);
    void parse_dramsys(std::string_view line, MemRequest& out);
    void parse_cardsim(std::string_view line, MemRequest& out);
    [[noreturn]] void fail(std::string_view what) const;
    /// `cycles` of `clock` in ps, refused past `max_time_ps` (a time stamp near 2^64 wrapped).
    std::uint64_t time_of(const MemoryClock& clock, std::uint64_t cycles, std::string_view what) const;
    /// `ps`, refused past `max_time_ps`.
    std::uint64_t checked_ps(std::uint64_t ps, std::string_view what) const;

    struct FileCloser {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::filesystem::path path_;
    TraceFormat format_;
    TraceContext context_;
    MemoryClock memory_clock_;
    MemoryClock player_clock_;
    std::unique_ptr<std::FILE, FileCloser> file_;
    std::vector<char> buffer_;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
    bool eof_ = false;
    std::uint64_t line_ = 0;
    bool header_seen_ = false;
    std::uint64_t last_time_ps_ = 0;
};

/// Writes a trace. Output goes to a temporary beside `path` (io::temporary_for's, never a name a
/// user's file may have), renamed to `path` by `close()`; a writer destroyed without `close()`
/// removes it. DRAMSim3 has no length: a longer request
/// is written as consecutive request_bytes lines at the same cycle. Times are rounded to the
/// format's clock.
class TraceWriter {
public:
    TraceWriter(const std::filesystem::path& path, TraceFormat format, const TraceContext& context);
    ~TraceWriter();
    TraceWriter(const TraceWriter&) = delete;
    TraceWriter& operator=(const TraceWriter&) = delete;
    void write(const MemRequest& request);
    /// Flushes and renames; I/O failures are cardsim::Errors naming the file.
    void close() {
        stage();
        publish();
    }
    /// The first half of `close`: every byte reaches the temporary, which is closed (every failure
    /// of writing happens here). A command writing several files stages them all before
    /// publishing any, so a failure leaves every destination as it was.
    void stage();
    /// The second half: renames the staged temporary into place.
    void publish();
    /// Bytes of trace text so far, and how many of them have gone to the file (the rest wait in a
    /// buffer of at most 1 MiB and one record): what a streaming writer keeps in memory.
    std::uint64_t formatted_bytes() const { return flushed_ + buffer_.size(); }
    std::uint64_t flushed_bytes() const { return flushed_; }
    /// The temporary file written until `close()`.
    const std::filesystem::path& partial_path() const { return partial_; }

private:
    void flush();
    struct FileCloser {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::filesystem::path path_;
    std::filesystem::path partial_;
    TraceFormat format_;
    TraceContext context_;
    MemoryClock memory_clock_;
    MemoryClock player_clock_;
    std::unique_ptr<std::FILE, FileCloser> file_;
    std::string buffer_;
    std::uint64_t last_time_ps_ = 0;
    std::uint64_t flushed_ = 0;
    bool staged_ = false; ///< every byte in the closed temporary, waiting for `publish`
    bool closed_ = false;
};

} // namespace cardsim::sim::memory
