#include "sim/memory/scheduler.hpp"

#include "sim/memory/scheduler_fifo.hpp"

namespace cardsim::sim::memory {

std::unique_ptr<SchedulerIF> make_scheduler(const card::DdrConfig&, RequestBuffer& buffer) {
    return std::make_unique<SchedulerFifo>(buffer);
}

} // namespace cardsim::sim::memory
