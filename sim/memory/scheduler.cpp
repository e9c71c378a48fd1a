#include "sim/memory/scheduler.hpp"

#include "sim/memory/scheduler_fifo.hpp"
#include "sim/memory/scheduler_frfcfs.hpp"

namespace cardsim::sim::memory {

std::unique_ptr<SchedulerIF> make_scheduler(const card::DdrConfig& ddr, RequestBuffer& buffer) {
    const auto& c = ddr.controller;
    if (c.scheduler == card::SchedulerKind::Fcfs) return std::make_unique<SchedulerFifo>(buffer);
    // The hits a bank serves during one row switch (tRTP + tRP + tRCD) when the bank groups share
    // the bus at tCCD_S: a bank with no more left switches within that time.
    const auto& t = ddr.timing;
    const std::uint32_t share = ddr.geometry.bank_groups * t.tccd_s;
    const std::uint32_t horizon =
        c.stagger_row_switches ? std::max<std::uint32_t>(1, (t.trtp + t.trp + t.trcd + share - 1) / share)
                               : 0;
    return std::make_unique<SchedulerFrFcfs>(buffer, c.starvation_limit, c.write_high_watermark,
                                             c.write_low_watermark, horizon);
}

} // namespace cardsim::sim::memory
