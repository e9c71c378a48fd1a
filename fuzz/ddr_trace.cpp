// Fuzz target: the three DDR trace formats (DRAMSim3, DRAMSys .stl, cardsim), read request by
// request as `ddr replay` reads them. The input's first byte picks the format (modulo 3); the rest
// is the file, written to a temporary file of this process (removed when the process ends).
#include "fuzz/support.hpp"
#include "sim/memory/trace_format.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

/// The process's temporary trace file: one path, removed at exit (libFuzzer and the corpus replay
/// both end by returning from main or calling exit), so runs leave nothing in /tmp.
struct TempTrace {
    std::string path = "/tmp/cardsim-fuzz-ddr-" + std::to_string(::getpid()) + ".trace";
    ~TempTrace() { std::remove(path.c_str()); }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace cardsim::sim::memory;
    if (size == 0) return 0;
    static const TempTrace temp;
    const std::string& path = temp.path;
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
    }
    const TraceFormat formats[] = {TraceFormat::DramSim3, TraceFormat::DramSys, TraceFormat::Cardsim};
    TraceContext ctx;
    ctx.address_limit = 32ull << 30;
    return cardsim::fuzz::refusing([&] {
        TraceReader reader(path, formats[data[0] % 3], ctx);
        MemRequest r;
        while (reader.next(r)) {
        }
    });
}
