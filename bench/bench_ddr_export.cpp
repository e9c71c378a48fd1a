// Exporting DDR requests as traces (sim/memory/trace_export): a 64 MiB weight stream, as the card's
// matvec sends it (one request), split into 1 Mi requests of 64 B and written to a file in each
// format, at card addresses and for one channel. Items are the 64 B requests written.

#include "engine/card/card_config.hpp"
#include "sim/memory/trace_export.hpp"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <unistd.h>

namespace {

namespace mem = cardsim::sim::memory;

constexpr std::uint32_t stream_bytes = 64u << 20;

void export_stream(benchmark::State& state, mem::TraceFormat format, bool one_channel) {
    const auto ddr = cardsim::card::default_card_config().ddr;
    mem::TraceContext ctx;
    ctx.memory_mts = ddr.speed_mts;
    ctx.player_mhz = ddr.speed_mts / 2;
    ctx.address_limit = ddr.total_bytes();
    const auto path =
        std::filesystem::temp_directory_path() /
        ("cardsim_bench_export_" + std::to_string(getpid()) + "." + std::string(mem::name(format)));
    std::uint64_t written = 0;
    for (auto _ : state) {
        mem::TraceExporter e(path, {format, 64, one_channel ? std::optional<std::uint32_t>{0} : std::nullopt},
                             ddr, ctx);
        e.observe({1u << 20, stream_bytes, mem::Direction::Read, 833});
        e.close();
        written += e.requests();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(written));
    std::filesystem::remove(path);
}

void BM_ExportCardsim(benchmark::State& s) {
    export_stream(s, mem::TraceFormat::Cardsim, false);
}
void BM_ExportDramsim3(benchmark::State& s) {
    export_stream(s, mem::TraceFormat::DramSim3, false);
}
void BM_ExportDramsys(benchmark::State& s) {
    export_stream(s, mem::TraceFormat::DramSys, false);
}
void BM_ExportCardsimOneChannel(benchmark::State& s) {
    export_stream(s, mem::TraceFormat::Cardsim, true);
}
BENCHMARK(BM_ExportCardsim)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExportDramsim3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExportDramsys)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExportCardsimOneChannel)->Unit(benchmark::kMillisecond);

} // namespace
