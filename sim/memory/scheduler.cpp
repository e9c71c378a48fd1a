#include "sim/memory/scheduler.hpp"

#include "sim/memory/scheduler_fifo.hpp"
#include "sim/memory/scheduler_frfcfs.hpp"

namespace cardsim::sim::memory {

std::unique_ptr<SchedulerIF> make_scheduler(const card::DdrConfig& ddr, RequestBuffer& buffer) {
    const auto& c = ddr.controller;
    if (c.scheduler == card::SchedulerKind::Fcfs) return std::make_unique<SchedulerFifo>(buffer);
    return std::make_unique<SchedulerFrFcfs>(buffer, c.starvation_limit, c.write_high_watermark,
                                             c.write_low_watermark);
}

} // namespace cardsim::sim::memory
