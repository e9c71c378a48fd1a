#pragma once
// Records the requests a DdrMemory receives as a replayable memory trace.

#include "sim/memory/ddr_memory.hpp"
#include "sim/memory/trace_format.hpp"

#include <filesystem>

namespace cardsim::sim::memory {

/// An observer of a DdrMemory that writes every request it receives, with its arrival time, to a
/// trace (cardsim format by default). Replaying that trace with timed pacing and unbounded
/// outstanding requests issues the same requests at the same cycles in the same order, so the
/// memory computes the same completions: the DDR time of the recorded run.
class TraceRecorder final : public RequestObserver {
public:
    TraceRecorder(const std::filesystem::path& path, const TraceContext& context,
                  TraceFormat format = TraceFormat::Cardsim)
        : writer_(path, format, context) {}
    void observe(const MemRequest& request) override { writer_.write(request); }
    /// Finishes the file (renamed into place).
    void close() { writer_.close(); }

private:
    TraceWriter writer_;
};

} // namespace cardsim::sim::memory
